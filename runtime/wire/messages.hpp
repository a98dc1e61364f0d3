#pragma once
/// Messages of live mode's wire protocol (docs/protocol.md): plain structs, one per message
/// type. Each struct's `type` is the string carried in the body's "type" field; each member
/// is the body field of the same name. The codec checks field types and size limits only;
/// what a value means (rank < world_size, a known job_id) is the receiver's check.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace aryl::wire {

/// Version carried in every body's "v" field; a peer speaking another version is refused.
inline constexpr uint64_t protocol_version = 1;

/// Protocol limits: a body beyond any of them is refused by the decoder. The sender keeps
/// within them; the encoder does not check.
/// Default largest frame body, in bytes (a frame_decoder parameter).
inline constexpr size_t default_max_frame_bytes = size_t{1} << 20;
/// Largest string (and binary) value, in bytes.
inline constexpr size_t max_string_bytes = 64 * 1024;
/// Most entries in a list (array), any field, including unknown ones.
inline constexpr size_t max_list = 4096;
/// Most entries in a GPU index list.
inline constexpr size_t max_gpu_list = 1024;
/// Most entries in a map (a body, a nested struct, launch.env).
inline constexpr size_t max_map = 1024;
/// Deepest nesting of maps and arrays; the body map is level 1.
inline constexpr size_t max_depth = 8;

/// Who opened the connection: a node agent (one per machine) or a client (CLI, controller).
enum class peer_role { agent, client };
/// The pool a server belongs to; inference servers may be loaned to training.
enum class pool_kind { training, inference };
/// A job's state as reported in status_reply.
enum class job_state { queued, running, done, failed, cancelled };
/// An inference server in flight: loaned to training, or being taken back.
enum class loan_state { loaned, reclaiming };
/// A server's machine as the scheduler sees it: its agent connected (up), gone for less than
/// the detection grace (unreachable: its workers are still counted as running), or given up
/// (lost: its jobs were moved off, nothing is placed there until its agent registers again).
enum class server_state { up, unreachable, lost };

/// Agent or client -> scheduler, first message on a connection. The scheduler checks the
/// token (constant time) before accepting anything else.
struct hello {
  static constexpr std::string_view type = "hello";
  peer_role role = peer_role::agent;
  std::string token;
  /// Agent: its server's name; client: a free-form label for logs.
  std::string name;
  bool operator==(const hello&) const = default;
};

/// Scheduler -> agent or client: hello accepted.
struct hello_ok {
  static constexpr std::string_view type = "hello_ok";
  /// Who the scheduler took the peer for, and its role (admin, user, agent, reader); absent
  /// in cluster-token mode (docs/security.md).
  std::optional<std::string> identity;
  std::optional<std::string> role;
  bool operator==(const hello_ok&) const = default;
};

/// One worker process an agent already runs when it (re)registers, for reconciliation.
struct running_worker {
  uint64_t job_id = 0;
  uint32_t rank = 0;
  /// GPU indices on the agent's machine, at most max_gpu_list entries.
  std::vector<uint32_t> gpus;
  /// OS process id, when the agent knows it.
  std::optional<uint32_t> pid;
  /// Set when it exited while the agent was away from the scheduler (its `exit` report, with
  /// the same code and signal, follows the register): listed so that a restarted scheduler
  /// sees every worker of a job that ended unheard, and adopts the job instead of running it
  /// again.
  std::optional<int32_t> exit_code;
  std::optional<uint32_t> exit_signal;
  /// The generation of the launch that started it (absent: an agent that keeps none).
  std::optional<uint64_t> generation{};
  bool operator==(const running_worker&) const = default;
};

/// Agent -> scheduler, once after hello_ok: the machine it manages. (`register` is a C++
/// keyword, hence the underscore; the wire type is "register".)
struct register_ {
  static constexpr std::string_view type = "register";
  std::string server;
  std::string gpu_type;
  uint32_t gpus = 0;
  pool_kind pool = pool_kind::training;
  std::vector<running_worker> workers;
  /// Where the job's other machines reach this one's workers (a name or an IP address; the
  /// MASTER_ADDR of jobs whose rank 0 runs here). Absent: the address serve sees it connect from.
  std::optional<std::string> address{};
  /// Random per agent process: a new connection of the same process takes over a name its
  /// old connection still holds; another process's is refused (error code `name_held`).
  std::optional<std::string> instance{};
  /// The agent's release (`aryl --version` for aryl's own agent; 1-64 printable ASCII bytes),
  /// shown by `aryl show node`. Absent: an agent that does not say.
  std::optional<std::string> version{};
  bool operator==(const register_&) const = default;
};

/// Agent -> scheduler, periodically; `seq` increases by one per heartbeat.
struct heartbeat {
  static constexpr std::string_view type = "heartbeat";
  uint64_t seq = 0;
  bool operator==(const heartbeat&) const = default;
};

/// Scheduler -> agent: start one worker (rank `rank` of `world_size`) of a job.
struct launch {
  static constexpr std::string_view type = "launch";
  uint64_t job_id = 0;
  uint32_t rank = 0;
  uint32_t world_size = 1;
  /// GPU indices on the agent's machine, at most max_gpu_list entries.
  std::vector<uint32_t> gpus;
  /// Where the job saves and resumes from its checkpoints.
  std::string checkpoint_dir;
  /// "host:port" of rank 0's rendezvous endpoint.
  std::string rendezvous;
  /// argv of the worker; argv[0] is the program.
  std::vector<std::string> command;
  /// Extra environment variables (absent on the wire = none).
  std::map<std::string, std::string> env;
  /// Emulated workers only: the job's total work, in seconds at rate 1 (the worker resumes
  /// from its checkpoint).
  std::optional<double> work_s;
  /// Emulated workers only: work-seconds this worker group completes per second.
  std::optional<double> rate;
  /// The Unix user the worker runs as (the identity that submitted the job); absent: the
  /// agent's own user (cluster-token mode).
  std::optional<std::string> user;
  /// The job's assignment this launch belongs to; it grows with every new assignment. A
  /// worker of an older generation of the same (job, rank) is stopped before this one starts,
  /// and the reports of a worker carry its generation, so a stale worker's are told apart.
  std::optional<uint64_t> generation{};
  bool operator==(const launch&) const = default;
};

/// Scheduler -> agent: stop the job's workers on this machine; SIGTERM, then SIGKILL after
/// `grace_s` seconds (time to checkpoint).
struct stop {
  static constexpr std::string_view type = "stop";
  uint64_t job_id = 0;
  double grace_s = 0;
  bool operator==(const stop&) const = default;
};

/// Agent -> scheduler: a worker's progress.
struct progress {
  static constexpr std::string_view type = "progress";
  uint64_t job_id = 0;
  uint32_t rank = 0;
  /// Work done since the job started, in seconds at rate 1 (cumulative, not a delta).
  double work_done = 0;
  /// Training steps done (cumulative).
  uint64_t step = 0;
  /// The worker's launch's generation, when it had one.
  std::optional<uint64_t> generation{};
  bool operator==(const progress&) const = default;
};

/// Agent -> scheduler: a worker process ended. (The underscore keeps the struct apart
/// from std::exit; the wire type is "exit".)
struct exit_ {
  static constexpr std::string_view type = "exit";
  uint64_t job_id = 0;
  uint32_t rank = 0;
  /// Exit status when it exited normally; 0 when killed by a signal.
  int32_t code = 0;
  /// The signal that killed it; 0 = none.
  uint32_t signal = 0;
  /// The worker's launch's generation, when it had one.
  std::optional<uint64_t> generation{};
  /// Why it could not start (a command that is not executable, an unknown user), one line;
  /// absent: it ran.
  std::optional<std::string> reason{};
  bool operator==(const exit_&) const = default;
};

/// Client -> scheduler: a new training job.
struct submit {
  static constexpr std::string_view type = "submit";
  std::string name;
  /// Requested workers (one GPU each), between min_workers and max_workers.
  uint32_t gpus = 1;
  uint32_t min_workers = 1;
  uint32_t max_workers = 1;
  std::vector<std::string> command;
  /// The user's estimate of the run time at `gpus` workers, in seconds; absent: the
  /// scheduler's default estimate, and the job is marked unpredicted.
  std::optional<double> expected_duration_s;
  /// Required GPU type; absent = any.
  std::optional<std::string> gpu_type;
  /// Who the job runs for; absent: no tenant. Where tenants are configured the scheduler
  /// refuses a name it does not know.
  std::optional<std::string> tenant;
  /// Its class (docs/tenants.md, "Priorities"): higher goes first; absent: 0.
  std::optional<int32_t> priority;
  /// Seconds it may hold workers in one attempt; at the limit its workers get SIGTERM, then
  /// SIGKILL after the stop grace, and it ends as timeout. Absent: no limit.
  std::optional<double> time_limit_s{};
  /// Retries after a failure (a worker exiting non-zero or killed, its machine lost) before it
  /// ends failed or node_lost. Absent: the scheduler's faults.max_retries.
  std::optional<uint32_t> max_retries{};
  /// Jobs that must end first, and how: "3", "3:ok,4:any,5:notok" (Slurm's afterok, afterany,
  /// afternotok; ok by default). An unknown job, a cycle or one that can never be met now is
  /// refused. Absent: none.
  std::optional<std::string> after{};
  /// An array: its task ids ("0-99", "1,3,5-7", "0-15:4") and, after %, the most of them queued
  /// or running at once ("0-99%10"). The job id answered is the array's. Absent: one job.
  std::optional<std::string> array{};
  /// Held from the start (Slurm's --hold): not started until released. Absent: false.
  std::optional<bool> hold{};
  /// A key of the submitter's choosing (1-256 bytes, no control characters): a submit of the
  /// same user with the same key is answered the first one's job id and takes no second job,
  /// so a submit whose answer was lost can be repeated. Absent: every submit is a new job.
  std::optional<std::string> key{};
  bool operator==(const submit&) const = default;
};

/// Scheduler -> client: the submitted job's id.
struct submit_ok {
  static constexpr std::string_view type = "submit_ok";
  uint64_t job_id = 0;
  /// Where the cluster's config overrides what the submit asked (e.g. its minimum workers
  /// under scheduler.elastic_floor=request), said in words; absent when nothing is.
  std::optional<std::string> note;
  bool operator==(const submit_ok&) const = default;
};

/// Client -> scheduler: cancel a job (queued or running).
struct cancel {
  static constexpr std::string_view type = "cancel";
  uint64_t job_id = 0;
  bool operator==(const cancel&) const = default;
};

/// Client -> scheduler: ask for a status_reply.
struct status_request {
  static constexpr std::string_view type = "status_request";
  /// Also the ended jobs (most recent first), within the list limit; absent: active only.
  std::optional<bool> all;
  bool operator==(const status_request&) const = default;
};

/// One job in a status_reply (and show_reply). The optional fields are absent from an older
/// scheduler's reply.
struct job_info {
  uint64_t job_id = 0;
  std::string name;
  job_state state = job_state::queued;
  /// Workers running now.
  uint32_t workers = 0;
  /// A queued job: why it waits (one line).
  std::optional<std::string> reason;
  /// Requested workers and the bounds an elastic job may be scaled within.
  std::optional<uint32_t> gpus;
  std::optional<uint32_t> min_workers;
  std::optional<uint32_t> max_workers;
  /// Required GPU type, if any.
  std::optional<std::string> gpu_type;
  /// Running: simulated seconds since its workers last started; ended: from its first start
  /// to its end.
  std::optional<double> run_s;
  /// Running: where its workers are, "t0:4 t1:2".
  std::optional<std::string> servers;
  /// False when it gave no run-time estimate (it has the scheduler's default one).
  std::optional<bool> predicted;
  /// Who it runs for; absent: no tenant.
  std::optional<std::string> tenant;
  /// An ended job: how it ended, one of done, failed, timeout, cancelled, node_lost (`state`
  /// says failed for the three failures, which an older client knows).
  std::optional<std::string> outcome{};
  /// An ended job, live mode: how the workers of its last attempt exited, by rank ("0:3 1:sig15";
  /// an exit code, or the signal that killed it).
  std::optional<std::string> exits{};
  /// The identity that submitted it (serve with --identities); absent: none known (cluster-token
  /// mode, a trace job, an older scheduler).
  std::optional<std::string> user{};
  /// A queued job held by `aryl hold` (its reason says by whom); absent: not held.
  std::optional<bool> held{};
  /// An array task: its array's id (the id of its first task) and its task id ("7" of 42_7).
  std::optional<uint64_t> array_job{};
  std::optional<uint32_t> array_task{};
  bool operator==(const job_info&) const = default;
};

/// One server in a status_reply.
struct server_info {
  std::string name;
  std::string gpu_type;
  uint32_t gpus = 0;
  /// GPUs a job could be given now (0 on a lost server).
  uint32_t free = 0;
  pool_kind pool = pool_kind::training;
  std::optional<server_state> state;
  /// An operator's hold (node_request): "cordoned" (no new work, its jobs run on), "draining"
  /// (no new work, jobs still there) or "drained" (no job left); absent: none. A string, not
  /// an enum, so that a later kind of hold stays v1.
  std::optional<std::string> hold;
  /// With a hold: the reason the operator gave (absent: none given).
  std::optional<std::string> reason;
  bool operator==(const server_info&) const = default;
};

/// One inference server lent to training, or being reclaimed, in a status_reply.
struct loan_info {
  std::string server;
  loan_state state = loan_state::loaned;
  bool operator==(const loan_info&) const = default;
};

/// One tenant's GPUs of training servers in a status_reply (docs/tenants.md, "Tenants and
/// quotas"; the same numbers as /metrics' aryl_tenant_gpus).
struct tenant_info {
  std::string name;
  /// Its guaranteed GPUs; absent: no quota.
  std::optional<uint64_t> quota;
  /// GPUs its jobs' base demand holds.
  uint64_t in_use = 0;
  /// Its idle quota that others' borrowing occupies.
  uint64_t lent = 0;
  /// GPUs it holds beyond its quota.
  uint64_t borrowed = 0;
  /// Its queued jobs.
  uint32_t queued = 0;
  bool operator==(const tenant_info&) const = default;
};

/// Scheduler -> client: the cluster now. Lists hold at most max_list entries each.
struct status_reply {
  static constexpr std::string_view type = "status_reply";
  std::vector<job_info> jobs;
  std::vector<server_info> servers;
  std::vector<loan_info> loans;
  /// Each tenant the scheduler governs; absent: tenants are not configured (or an older
  /// scheduler).
  std::optional<std::vector<tenant_info>> tenants;
  bool operator==(const status_reply&) const = default;
};

/// Client -> scheduler: one job in detail (`aryl show`).
struct show_request {
  static constexpr std::string_view type = "show_request";
  uint64_t job_id = 0;
  /// One task of the array `job_id` (`aryl show 42_7`); absent: the job itself.
  std::optional<uint32_t> array_task{};
  bool operator==(const show_request&) const = default;
};

/// One line of a job's history: a decision or an end, as events.log has it.
struct history_entry {
  /// Simulated seconds since the run started.
  double t_s = 0;
  /// submit, start, rescale, preempt, restart, finish, cancel, fail, ...
  std::string event;
  /// Workers and servers after it ("workers=4 V100 [t0:4]").
  std::string detail;
  /// Why the scheduler did it.
  std::string why;
  bool operator==(const history_entry&) const = default;
};

/// One attempt of a job in a show_reply: from its workers' start to the failure it was retried
/// after, or to the job's end.
struct attempt_info {
  /// Simulated seconds since the run started; absent: it never got workers.
  std::optional<double> start_s;
  double end_s = 0;
  /// failed or node_lost (it was retried after); for the last attempt, the job's outcome.
  std::string outcome;
  /// How its workers exited, by rank ("0:3"); absent: not known (simulated time, a lost machine).
  std::optional<std::string> exits;
  /// Why it ended (a worker that could not start says why).
  std::string why;
  bool operator==(const attempt_info&) const = default;
};

/// Scheduler -> client: a job's spec, state, history and outcome.
struct show_reply {
  static constexpr std::string_view type = "show_reply";
  job_info job;
  std::vector<std::string> command;
  /// The run-time estimate at its requested workers (the default one if job.predicted is false).
  double expected_duration_s = 0;
  /// Simulated seconds since the run started.
  double submit_s = 0;
  std::optional<double> end_s;
  /// Every allocation change, oldest first (at most max_list; the latest kept).
  std::vector<history_entry> history;
  /// Its time limit in seconds and its retries, when it set them.
  std::optional<double> time_limit_s{};
  std::optional<uint32_t> max_retries{};
  /// An ended job's attempts, oldest first (at most max_list; the latest kept).
  std::optional<std::vector<attempt_info>> attempts{};
  /// The jobs it waits for, as submitted or updated ("ok:3,any:4"); absent: none.
  std::optional<std::string> after{};
  bool operator==(const show_reply&) const = default;
};

/// Client -> scheduler: one server in detail (`aryl show node NAME`).
struct show_node_request {
  static constexpr std::string_view type = "show_node_request";
  std::string server;
  bool operator==(const show_node_request&) const = default;
};

/// One job with workers on the server of a show_node_reply.
struct node_job {
  uint64_t job_id = 0;
  std::string name;
  /// Its workers there, as the scheduler counts them.
  uint32_t workers = 0;
  /// The ranks the gateway launched there and has not seen exit (empty: none known, such as
  /// workers adopted after a scheduler restart).
  std::vector<uint32_t> ranks;
  bool operator==(const node_job&) const = default;
};

/// Scheduler -> client: a server's configuration, state, hold, jobs and agent.
struct show_node_reply {
  static constexpr std::string_view type = "show_node_reply";
  /// As status_reply lists it.
  server_info node;
  /// What the scheduler uses it for: training, serving, loaned, reclaiming or down.
  std::string mode;
  std::vector<node_job> jobs;
  /// Seconds since its agent's connection last brought a frame; absent: no agent connected.
  std::optional<double> heard_s{};
  /// Where its workers are reached (register's address, else where its agent connected from);
  /// absent: no agent has registered it yet.
  std::optional<std::string> address{};
  /// Its agent's register.version; absent: no agent registered it, or it did not say.
  std::optional<std::string> agent_version{};
  bool operator==(const show_node_reply&) const = default;
};

/// Client -> scheduler: a worker's output (`aryl logs`), from byte `offset` of its log.
struct logs_request {
  static constexpr std::string_view type = "logs_request";
  uint64_t job_id = 0;
  uint32_t rank = 0;
  uint64_t offset = 0;
  /// A task of the array `job_id` (`aryl logs 42_7`); absent: the job itself.
  std::optional<uint32_t> array_task{};
  bool operator==(const logs_request&) const = default;
};

/// Scheduler -> agent: read a worker's log file for request `request`.
struct log_fetch {
  static constexpr std::string_view type = "log_fetch";
  uint64_t request = 0;
  uint64_t job_id = 0;
  uint32_t rank = 0;
  uint64_t offset = 0;
  /// Most bytes to return (under the string limit).
  uint32_t max_bytes = 0;
  bool operator==(const log_fetch&) const = default;
};

/// Agent -> scheduler: the answer to a log_fetch.
struct log_chunk {
  static constexpr std::string_view type = "log_chunk";
  uint64_t request = 0;
  /// The bytes from the asked offset, invalid UTF-8 replaced by '?' byte for byte.
  std::string text;
  /// The log's size when read: text ends at offset + text's size, at most this.
  uint64_t size = 0;
  /// Why there is nothing to read (no such log on this machine); absent: text is the log's.
  std::optional<std::string> error;
  bool operator==(const log_chunk&) const = default;
};

/// Scheduler -> client: a piece of a worker's log.
struct logs_reply {
  static constexpr std::string_view type = "logs_reply";
  uint64_t job_id = 0;
  uint32_t rank = 0;
  /// The machine whose agent holds the log.
  std::string server;
  uint64_t offset = 0;
  std::string text;
  /// The log's size when read; offset + text's size < size: more to fetch now.
  uint64_t size = 0;
  /// The job is still queued or running (its log may grow).
  bool active = false;
  bool operator==(const logs_reply&) const = default;
};

/// Scheduler -> agent: the scheduler shuts down for good (its run ended or it was told to
/// stop); the agent stops its workers and exits instead of reconnecting.
struct shutdown {
  static constexpr std::string_view type = "shutdown";
  std::string reason;
  bool operator==(const shutdown&) const = default;
};

/// Client (inference controller) -> scheduler: inference servers the serving side needs now.
struct demand {
  static constexpr std::string_view type = "demand";
  uint32_t servers_needed = 0;
  bool operator==(const demand&) const = default;
};

/// Client -> scheduler: an operator's order about a training server (`aryl cordon`, `drain`,
/// `resume`). Answered by node_reply, or refused with an error frame naming the server.
struct node_request {
  static constexpr std::string_view type = "node_request";
  std::string server;
  /// cordon: no new work there, its jobs run on. drain: the same, and it counts as drained once
  /// its last job left. resume: schedulable again.
  std::string action;
  /// Shown in status beside the server's state, and logged.
  std::optional<std::string> reason;
  /// drain only: stop its jobs now (they checkpoint) and queue them again, each a preemption.
  std::optional<bool> now;
  bool operator==(const node_request&) const = default;
};

/// Scheduler -> client: what the order did, one line ("t1: draining: no new work; 2 jobs run
/// on there until they end").
struct node_reply {
  static constexpr std::string_view type = "node_reply";
  std::string server;
  std::string text;
  bool operator==(const node_reply&) const = default;
};

/// Client -> scheduler: a change to a queued job (`aryl hold`, `release`, `update`, and
/// `cancel` of one array task): a user's own jobs, an admin's any. Answered by job_reply, or
/// refused with an error frame saying why (a running job, max below min, ...).
struct job_request {
  static constexpr std::string_view type = "job_request";
  uint64_t job_id = 0;
  /// One task of the array `job_id`; absent: the job, or every active task of the array.
  std::optional<uint32_t> array_task{};
  /// hold | release | update | cancel
  std::string action;
  /// update only, for a job not yet started: the values to change (absent: unchanged).
  std::optional<int32_t> priority{};
  /// Seconds; 0: no limit.
  std::optional<double> time_limit_s{};
  std::optional<uint32_t> min_workers{};
  std::optional<uint32_t> max_workers{};
  std::optional<double> expected_duration_s{};
  /// Its dependencies, as submit's `after`; "" removes them.
  std::optional<std::string> after{};
  bool operator==(const job_request&) const = default;
};

/// Scheduler -> client: what a job_request did, one line ("job 7 held").
struct job_reply {
  static constexpr std::string_view type = "job_reply";
  uint64_t job_id = 0;
  std::string text;
  bool operator==(const job_reply&) const = default;
};

/// Client -> scheduler: an admin's change to the identities (`aryl token`): `create` makes a
/// credential for `name` with `role` and answers its token once; `revoke` removes it; `list`
/// answers every identity (names, roles, enrolment; never a token or its hash).
struct token_request {
  static constexpr std::string_view type = "token_request";
  std::string action;
  std::string name;
  std::optional<std::string> role;
  /// create, role agent: the GPU type and pool the node may register with (absent: any).
  std::optional<std::string> gpu_type;
  std::optional<std::string> pool;
  bool operator==(const token_request&) const = default;
};

/// Scheduler -> client: what a token_request did, in words, and a created token.
struct token_reply {
  static constexpr std::string_view type = "token_reply";
  std::string text;
  std::optional<std::string> token;
  bool operator==(const token_reply&) const = default;
};

/// Client -> scheduler: a page of the jobs the state file's history table holds (`aryl history`
/// against a running serve; docs/live.md, "Job history"), filtered as the command's flags.
/// The client asks again from the reply's `next_after` until a reply has none.
struct history_request {
  static constexpr std::string_view type = "history_request";
  /// Jobs that ended at or after this time (unix µs), and jobs not ended.
  std::optional<uint64_t> since_us;
  /// Jobs submitted at or before this time (unix µs).
  std::optional<uint64_t> until_us;
  /// Each list left empty keeps every job: submitters, tenants, and outcomes (done, failed,
  /// timeout, node_lost, cancelled, or queued, running for jobs not ended).
  std::vector<std::string> users;
  std::vector<std::string> tenants;
  std::vector<std::string> outcomes;
  /// Only jobs with an id above this one (the previous reply's next_after); absent: from the first.
  std::optional<uint64_t> after;
  /// Most jobs in the reply; the scheduler answers fewer (its own cap, and a frame's bytes).
  std::optional<uint32_t> limit;
  bool operator==(const history_request&) const = default;
};

/// One job in a history_reply: the state file's row, never its command or environment.
struct history_job {
  uint64_t job_id = 0;
  std::string name;
  std::string user;
  std::string tenant;
  /// queued, running or ended.
  std::string state;
  /// An ended job: done, failed, timeout, node_lost or cancelled; absent: not ended.
  std::optional<std::string> outcome;
  /// Times on the wall clock (unix µs); start absent: it never had workers; end: not ended.
  uint64_t submit_us = 0;
  std::optional<uint64_t> start_us;
  std::optional<uint64_t> end_us;
  /// Time queued, each wait after a preemption included.
  double wait_s = 0;
  uint32_t gpus = 0;
  /// How the last attempt's workers ended, by rank ("0:0 1:sig15").
  std::string exits;
  uint32_t attempts = 0;
  bool operator==(const history_job&) const = default;
};

/// Scheduler -> client: a page of history, by job id.
struct history_reply {
  static constexpr std::string_view type = "history_reply";
  std::vector<history_job> jobs;
  /// More may follow: ask again with `after` set to this (the last job's id); absent: done.
  std::optional<uint64_t> next_after;
  bool operator==(const history_reply&) const = default;
};

/// Either side: why the sender is closing the connection (one line, for the peer's log).
struct error {
  static constexpr std::string_view type = "error";
  std::string reason;
  /// For the receiver's program, when it must act on the kind of error: `name_held` (a
  /// register refused because another live agent holds the server's name).
  std::optional<std::string> code{};
  bool operator==(const error&) const = default;
};

/// Either side: orderly close; the sender sends nothing more.
struct bye {
  static constexpr std::string_view type = "bye";
  bool operator==(const bye&) const = default;
};

/// Any message of the protocol.
using message = std::variant<hello, hello_ok, register_, heartbeat, launch, stop, progress, exit_,
                             submit, submit_ok, cancel, status_request, status_reply, demand,
                             error, bye, show_request, show_reply, shutdown, logs_request, log_fetch,
                             log_chunk, logs_reply, node_request, node_reply, token_request,
                             token_reply, show_node_request, show_node_reply, job_request, job_reply,
                             history_request, history_reply>;

/// The wire type of `m` ("hello", "register", ...).
std::string_view type_of(const message& m);

} // namespace aryl::wire
