#pragma once
/// The node agent of live mode (`aryl agent`): one per machine. It connects to the
/// scheduler, registers its machine, heartbeats, starts and stops the job's worker
/// processes as told, and reports their progress and exits (docs/protocol.md).
#include <atomic>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "runtime/node/progress_line.hpp"
#include "runtime/wire/messages.hpp"

namespace aryl::net {
struct tls_context;
}

namespace aryl::live {

/// Configuration of one agent. Times are wall-clock seconds.
struct agent_options {
  /// The scheduler's address (a name or an IP address) and TCP port.
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  /// TLS to the scheduler, verifying its certificate against this client context's CA and
  /// `host` (net::tls_client_context); null: plain TCP, only where `host` resolves to
  /// loopback addresses alone unless `insecure` (net::plain_text_refusal): otherwise
  /// run_agent logs why and returns 2 before connecting, and a later resolution that is not
  /// loopback is not dialled (logged, retried).
  std::shared_ptr<net::tls_context> tls;
  /// Plain TCP to an address that is not loopback too (--insecure).
  bool insecure = false;
  /// The cluster token, sent in hello (the caller reads it with read_token_file).
  std::string token;
  /// This machine as registered: server name (not empty), GPU type, GPU count, pool.
  std::string name;
  std::string gpu_type = "V100";
  uint32_t gpus = 8;
  wire::pool_kind pool = wire::pool_kind::training;
  /// Where the job's other machines reach this one's workers (register's address: MASTER_ADDR
  /// of jobs whose rank 0 runs here); empty: the address serve sees it connect from.
  std::string address;
  /// Per-agent folder (created if missing): checkpoints/<job_id>/ for launches whose
  /// checkpoint_dir is not absolute, logs/<job_id>-<rank>.log for each worker's stdout and
  /// stderr (appended to).
  std::string work_dir;
  /// Interval between heartbeats on a registered connection; the first comes one interval
  /// after register. `seq` starts at 1 on each connection and increases by one.
  double heartbeat_s = 1.0;
  /// Reconnect backoff: the n-th consecutive failure (n = 0, 1, ...) waits a uniformly
  /// random time in [d/2, d] with d = min(reconnect_max_s, reconnect_min_s * 2^n). The
  /// count restarts when the scheduler first sends anything but an error after register (a
  /// register it refuses keeps backing off).
  double reconnect_min_s = 0.1, reconnect_max_s = 5.0;
  /// A connection without hello_ok this long after the connect began is dropped.
  double handshake_timeout_s = 10.0;
  /// On the agent's own stop: time between SIGTERM and SIGKILL to its workers.
  double shutdown_grace_s = 5.0;
  /// Shortest interval between two progress messages of one worker (the latest is always
  /// sent eventually).
  double progress_interval_s = 0.25;
  /// Fencing: when nothing has come from the scheduler for this long (its heartbeat answers
  /// stop, or the connection is gone and not back), the agent stops its workers as `stop`
  /// would, with shutdown_grace_s, so that a partitioned machine does not run on beside the
  /// copies the scheduler restarts elsewhere. 0: never (workers run on until told, which lets
  /// a restarted scheduler adopt them however long it was away). To fence before the
  /// scheduler restarts the jobs, fence_after_s + shutdown_grace_s must stay under its
  /// detection grace (docs/live.md, "Fencing").
  double fence_after_s = 0;
  /// Reconnecting is given up after this long without being registered (counted from the
  /// start, or from the loss of the last connection whose register the scheduler took, as
  /// its first message other than an error says): the workers are stopped as
  /// on the agent's own stop and run_agent returns 3. 0: retry for ever.
  double give_up_after_s = 0;
  /// The program of a launch whose command is empty, run with the single argument
  /// "worker" (the aryl binary itself). Empty: this process's own executable.
  std::string worker_program;
  /// Variables of the agent's environment its workers get beyond default_pass_env
  /// (runtime/node/worker_env.hpp): names, or prefixes with a trailing '*' (--pass-env). One
  /// that could match an ARYL_ name is refused at the start (run_agent returns 2).
  std::vector<std::string> pass_env;
  /// An agent running as root starts a launch that names a user of uid 0 (--allow-root-jobs);
  /// otherwise that launch fails (exit 127).
  bool allow_root_jobs = false;
  /// How a worker's end is seen. False: by an event on its pidfd, and by polling with waitid
  /// every 5 ms only where the kernel gives no pidfd (before Linux 5.3; logged once). True:
  /// always by that polling (tests of the fallback).
  bool poll_worker_exits = false;
};

/// Runs the agent on the calling thread until `stop_flag` becomes true (checked every
/// 100 ms; the CLI sets it from its SIGTERM/SIGINT handlers). Between events (frames,
/// worker output, worker ends) the agent sleeps until its next deadline or that check.
///
/// Protocol: hello{agent, token, name} -> hello_ok (an `error` reply, a close, or no
/// hello_ok within handshake_timeout_s: logged, backoff, retry) -> register{name, gpu_type,
/// gpus, pool, running workers} -> buffered progress and exits -> heartbeats. A malformed
/// frame, an `error` or a `bye` from the scheduler drops the connection (logged) and the
/// agent reconnects. Other unexpected messages are logged and ignored.
///
/// launch: ignored (logged) if that (job_id, rank) still runs here; if that worker is being
/// stopped, or has ended and its exit is not reported yet, started once its exit is reported
/// (so every exit names one process). Otherwise starts
/// `command` (empty: worker_program with argument "worker") in its own process group,
/// stdin /dev/null, with the environment build_worker_environment gives (worker_env.hpp: the
/// agent's variables on an allow-list, never its ARYL_* ones; ARYL_CHECKPOINT_DIR is
/// launch.checkpoint_dir if absolute, else work_dir/checkpoints/<job_id>; created).
/// A launch that names a user runs as that user (run_as.hpp, plan_run_as; refused: exit 127
/// with the reason logged), with HOME, USER, LOGNAME and SHELL from its passwd entry, in the
/// folder work_dir/jobs/<user>/<job_id>; that folder and the checkpoint folder are the user's,
/// mode 0700 (prepare_owned_dir), and a worker that cannot enter both (a parent folder the
/// user may not search) does not start. stdout lines and stderr go to the worker's log file
/// (the agent's; mode 0600 for a launch that names a user), each line whole however long (one
/// over 64 KiB is written through in pieces and not parsed); stdout lines parse_progress_line
/// accepts become `progress` (at most one per progress_interval_s per worker, the latest always
/// sent, the last one before the exit).
/// A program that cannot be executed (or a refused user, or a folder or log file that cannot
/// be created or used) gives `exit` with code 127.
///
/// stop{job_id, grace_s}: SIGTERM to the group of each of the job's workers here, SIGKILL
/// after grace_s. Every worker's end is reported as exit{job_id, rank, code, signal} from
/// its wait status, once its stdout is closed (or 1 s after its end); what is left of its
/// process group is killed then.
///
/// heartbeat from the scheduler (its answer to ours): counts as hearing from it (fencing).
///
/// shutdown from the scheduler (it ended for good): the agent stops as on its own stop,
/// without reconnecting, and returns 0.
///
/// A lost connection is
/// retried with backoff while the workers keep running (until fenced, with fence_after_s); their exits and latest progress
/// are sent once registered again, and register.workers lists those still running. On
/// stop: SIGTERM to every worker, SIGKILL after shutdown_grace_s, all reaped, `bye` if
/// connected. No child process outlives this call, also when it ends by an exception.
/// Logs one line per notable event to `log` (used from this thread only). Resets SIGCHLD
/// to its default if it is ignored (exit statuses would be lost). Returns 0 after a stop
/// (its own or the scheduler's shutdown), 3 after giving up (give_up_after_s), 2 for
/// invalid options or a plain-text dial it may not make (logged), 1 after an unexpected error (logged).
int run_agent(const agent_options& options, const std::atomic<bool>& stop_flag,
              std::ostream& log);

} // namespace aryl::live
