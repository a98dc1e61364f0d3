#pragma once
/// The scheduler's network front in live mode (docs/protocol.md): a TCP listener (Boost.Asio,
/// one thread of its own) for node agents and clients speaking length-prefixed msgpack.
/// It checks each peer's cluster token, binds each agent to the server of the same name, and
/// turns frames into calls: launches and stops go out through node links; worker reports,
/// agents lost and back, and clients' status and demand requests go in through the driver's
/// router. A bad frame, a wrong token or a vanished peer closes that one connection, with a
/// logged reason.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <ostream>
#include <string>
#include <vector>

#include "actors/node_link.hpp"
#include "runtime/sim/driver.hpp"
#include "runtime/live/access.hpp"
#include "runtime/live/audit_log.hpp"
#include "runtime/live/identities.hpp"
#include "runtime/live/job_book.hpp"
#include "runtime/live/submit_limits.hpp"
#include "runtime/wire/messages.hpp"

namespace aryl::live {

struct gateway_options {
  std::string bind = "127.0.0.1";  ///< loopback unless told otherwise
  uint16_t port = 0;               ///< 0: the OS chooses (see gateway::port)
  std::string token;               ///< cluster-token mode: the token every peer presents
  /// Per-identity credentials and roles (docs/security.md); null: cluster-token mode, in
  /// which every peer presenting `token` may do everything and jobs run as the agents' user.
  std::shared_ptr<identity_registry> identities;
  /// With identities: an identity named root may submit (live.allow_root_jobs).
  bool allow_root_jobs = false;
  /// With identities: the tenants users may submit for, and their priority caps.
  tenant_binding tenants;
  /// Every state change and every refusal by role; null: none.
  std::shared_ptr<audit_log> audit;
  /// TLS on the listener: the certificate chain and private key (PEM files); both empty:
  /// plain TCP. A peer that does not start a TLS handshake is refused (docs/protocol.md).
  std::string tls_cert_file, tls_key_file;
  /// With TLS: peers must present a certificate chaining to a CA in this PEM file (mutual
  /// TLS). Empty: no client certificate is asked for (the token authenticates peers).
  std::string tls_client_ca_file;
  size_t max_frame_bytes = wire::default_max_frame_bytes;
  /// Where jobs keep their checkpoints (shared by every agent on a one-machine testbed).
  std::string checkpoint_root;
  double stop_grace_s = 10;        ///< SIGTERM to SIGKILL, for the agents' stops
  /// torchrun jobs' c10d store, HOST:PORT, kept outside the jobs (live.rdzv_endpoint); empty:
  /// each job's first server hosts it, at its MASTER_PORT.
  std::string rdzv_endpoint;
  int rdzv_last_call_s = 5;        ///< live.rdzv_last_call_s
  /// A peer silent this long (agents heartbeat every second) is dropped as vanished; a
  /// registered agent already after loss_grace_s if that is shorter.
  double agent_silence_s = 10;
  /// A registered agent unheard this long (silent, or disconnected and not registered again)
  /// has its server reported lost through the router; when it registers again, the server is
  /// reported back, after the workers it still runs are reconciled (worker_router).
  double loss_grace_s = 30;
  /// A connected agent heard within this long holds its server's name: another agent that
  /// registers under it is refused, naming the conflict. One silent for longer is replaced (a
  /// machine redialling over a connection that died without a close), and its connection closed.
  double name_held_s = 3;
  /// Workers an agent lists at its first registration with this gateway are from before it
  /// started (a scheduler restarted, or an earlier serve): none of them is the run's, so each
  /// is stopped (see wait_for_found_workers).
  bool stop_found_workers = true;
  /// Instead, keep them until settle_found_workers says which to adopt (a restarted
  /// scheduler, `aryl serve --state`).
  bool hold_found_workers = false;
  /// Until its hello is taken a peer is unauthenticated: it must complete hello within
  /// hello_timeout_s of connecting (bytes trickling in do not extend it; one that sent
  /// nothing yet is idle, holds no buffer, and its deadline is spread over 1 to 1.5 times
  /// that), may buffer at most pre_hello_bytes, and at most max_before_hello connections
  /// that sent bytes before hello are held in all, max_before_hello_per_address from one
  /// peer address: at a cap the oldest of them is evicted, told why.
  double hello_timeout_s = 10;
  size_t pre_hello_bytes = 8192;
  size_t max_before_hello = 1024;
  size_t max_before_hello_per_address = 256;
  /// Closes before hello allowed per peer address, per second (a token bucket holding one
  /// second's worth, at least one). Past it a plain connection that would be closed before
  /// its hello is silenced instead: its buffers are freed, nothing more is read from it, it
  /// counts as idle, and it is judged again 1 to 1.5 hello timeouts later (let go at once if
  /// its peer has gone). A peer that dials again whatever is closed thus gets no faster turn
  /// than this. TLS connections are always closed.
  double pre_hello_closes_per_s = 10;
  /// Connections of any kind; keep it below the descriptors the process may open
  /// (serve derives it from RLIMIT_NOFILE). At it the oldest idle connection of the address
  /// holding the most idle ones is evicted; with none idle the newcomer is refused.
  size_t max_connections = 4096;
  /// A client's replies not yet read by it: past this its requests are not read either.
  size_t client_queue_bytes = 256 * 1024;
  /// The ports MASTER_PORT is chosen from (live.master_port_first, live.master_port_count).
  uint16_t master_port_first = 29500;
  uint16_t master_port_count = 500;
  /// The run-time estimate of a submitted job that gives none (live.default_estimate_s).
  double default_estimate_s = 3600;
  /// Bounds on clients' submits (live.max_active_submits and the keys beside it).
  submit_limit_options submit_limits;
  /// A live inventory: an agent of any name registers with what it has (GPU type, count,
  /// pool) until join_agents fixes the cluster; then only those names may register again.
  bool join = false;
  /// join: why an agent's machine may not be in the cluster ("" if it may), asked of each agent
  /// of a new name before it is taken (a GPU type the config has no speed for). A refused agent
  /// is told why and left out; the others join. The reason names the agent. Unset: every
  /// agent may.
  std::function<std::string(const std::string& name, const std::string& gpu_type)> join_problem;
  /// Every job's spec, history and end, for `show` and `status --all`; null: only active
  /// jobs are known (the scheduler's status), and `show` is refused.
  std::shared_ptr<job_book> book;
  /// `aryl history` (history_request): a page of the state file's history, read on a thread
  /// of the gateway's own, never the network thread; throws aryl::input_error (the client is
  /// told why). Unset: serve keeps no state file, and history is refused saying so.
  std::function<wire::history_reply(const wire::history_request&)> history;
};

/// A machine whose agent joined (gateway_options::join).
struct joined_machine {
  std::string name;
  std::string gpu_type;
  int gpus = 0;
  wire::pool_kind pool = wire::pool_kind::training;
};

class gateway {
 public:
  /// Starts listening; throws aryl::input_error naming the address if it cannot bind.
  gateway(gateway_options o, std::ostream& log);
  ~gateway();
  gateway(const gateway&) = delete;
  gateway& operator=(const gateway&) = delete;

  /// The port it listens on.
  uint16_t port() const;

  /// The link to the machine `server` (id `id`); its agent must register with this name, GPU
  /// type and count. Call before agents connect, or (join) once for each joined machine.
  std::shared_ptr<node_link> add_server(int id, const std::string& server, const std::string& gpu_type, int gpus,
                                        wire::pool_kind pool);

  /// join: waits until `count` agents have registered or been refused (join_problem), at most
  /// `timeout`, then takes no new names; returns the machines that joined, in the order they
  /// registered.
  std::vector<joined_machine> join_agents(size_t count, std::chrono::milliseconds timeout);
  /// join: why join_problem refused each agent it refused so far, once per name.
  std::vector<std::string> refused_joins();

  /// Waits until every added server's agent has registered; returns the names still missing
  /// after `timeout`.
  std::vector<std::string> wait_for_agents(std::chrono::milliseconds timeout);

  /// Waits until every worker the agents listed at their first registration (and were told
  /// to stop) has exited; returns the ones still running after `timeout`, as
  /// "server job J rank R". A run must not launch a job whose old workers still run.
  std::vector<std::string> wait_for_found_workers(std::chrono::milliseconds timeout);

  /// hold_found_workers: what each agent listed at its first registration and still runs
  /// (an exit reported since takes a worker off), by server name.
  std::map<std::string, std::vector<wire::running_worker>> found_workers();
  /// hold_found_workers: the workers of `adopted` jobs are kept (their exits reported before
  /// the router is set are passed on to it then); every other found worker is stopped.
  void settle_found_workers(const std::set<uint32_t>& adopted);

  /// Where worker reports and clients' status and demand requests go (the driver's
  /// router, while a run lasts); empty: reports are dropped and requests refused.
  /// Returns once no call of the previous router is in progress.
  void set_router(worker_router r);

  /// The scheduler's status through the router, for callers off the network thread.
  struct status_answer {
    enum class outcome { answered, no_run, late } what = outcome::no_run;
    cluster_status status;  ///< when answered
  };
  /// Waits at most `limit` for it, holding no lock the network thread needs. An ask still
  /// unanswered from an earlier call is waited for again, not repeated: a stuck scheduler
  /// is asked once, however often its status is wanted.
  status_answer status_within(std::chrono::milliseconds limit);
  /// Agents registered and connected now.
  int agents_connected();
  /// Machines in the cluster now: the configured ones and those that joined since, counted
  /// once the scheduler has taken them (a machine still joining is not).
  int agents_configured();
  /// Each machine of the cluster now (as agents_configured counts them), whether its agent is
  /// connected, and seconds since that agent was last heard (-1 when not connected).
  struct agent_seen {
    std::string server;
    bool connected = false;
    double heard_s_ago = -1;
  };
  std::vector<agent_seen> agents_seen();

  /// Tells every connected agent that the scheduler shuts down for good (`shutdown` with
  /// `reason`: they stop their workers and exit), and waits until those frames are written,
  /// at most `limit`.
  void send_shutdown(const std::string& reason, std::chrono::milliseconds limit);

  /// Stops listening and closes every connection.
  void close();

  struct impl;  ///< the network side (gateway.cpp)

 private:
  std::shared_ptr<impl> impl_;
};

} // namespace aryl::live
