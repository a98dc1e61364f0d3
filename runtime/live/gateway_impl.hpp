#pragma once
/// The gateway's shared state, for its files: gateway.cpp (the public calls, the machines'
/// launches), gateway_waits.cpp (what its callers wait for), gateway_listener.cpp (accepting,
/// caps), gateway_session.cpp (one peer's connection), gateway_status.cpp (status and show
/// requests, answered asynchronously), gateway_orders.cpp (submits and cancels, likewise),
/// gateway_nodes.cpp (the inventory while a run goes on), gateway_history.cpp (`aryl history`).
/// Included by those only.
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange

#include <boost/asio.hpp>

#include <cstdint>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "solvers/control_chars.hpp"
#include "runtime/live/gateway.hpp"
#include "runtime/live/log_relay.hpp"
#include "runtime/wire/tls_stream.hpp"
#include "runtime/live/submit_limits.hpp"
#include "runtime/wire/messages.hpp"

namespace aryl::live {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

class session;

struct gateway::impl : std::enable_shared_from_this<gateway::impl> {
  struct server_slot {
    int id = 0;
    std::string gpu_type;
    int gpus = 0;
    wire::pool_kind pool = wire::pool_kind::training;
    std::weak_ptr<session> agent;  ///< the registered agent's connection, if any
    bool registered = false;       ///< has registered at least once
    uint64_t registrations = 0;    ///< a loss timer counts only if none came since it started
    uint64_t launches = 0;         ///< launches taken for the machine (launch_on calls)
    /// Launches and stops for the machine while its agent is away, sent when it registers
    /// again (it keeps its workers meanwhile).
    std::vector<wire::message> backlog;
    /// Workers listed at its first registration and told to stop, until their exits.
    std::set<std::pair<uint32_t, uint32_t>> found;
    /// hold_found_workers: the ones listed (those that exited, listed so or since, with their
    /// exit code), until settled; then the adopted ones, until a router takes their reports.
    std::vector<wire::running_worker> listed;
    std::set<std::pair<uint32_t, uint32_t>> held;
    /// The generation of the latest launch of each (job, rank) sent (or kept) for the machine,
    /// until that worker's exit: a report of another generation is a stale worker's.
    std::map<std::pair<uint32_t, uint32_t>, uint64_t> generations;
    /// Where the job's other machines reach its workers (register's address, else the address
    /// its agent connected from): MASTER_ADDR for jobs whose rank 0 runs there.
    std::string address;
    /// Its agent's register.version ("": it did not say).
    std::string agent_version;
  };
  /// MASTER_PORT of each job's latest launch, on its master server (network thread only).
  struct master_port {
    uint64_t generation = 0;
    std::string server;
    uint16_t port = 0;
  };
  std::map<uint32_t, master_port> master_ports;
  /// The port of (job, generation) on `server`: the lowest of live.master_port_first.. not
  /// held there by another job's current launch (an earlier launch of the job, or an ended
  /// job, holds none).
  uint16_t master_port_for(uint32_t job, uint64_t generation, const std::string& server);
  /// The standard environment the workers of `l` share (MASTER_ADDR, MASTER_PORT, WORLD_SIZE,
  /// ...); each adds its RANK and LOCAL_RANK.
  std::map<std::string, std::string> launch_environment(const node_launch& l);
  /// The address of the server of `id` and its name ("" if unknown or not registered yet).
  std::pair<std::string, std::string> server_address(int id);
  /// Exits of listed (then held) workers that came while no router was set, passed on when
  /// one is: (server id, job, rank, code, signal).
  std::vector<std::tuple<int, uint32_t, uint32_t, int, int>> early_exits;

  gateway_options opts;
  std::shared_ptr<net::tls_context> tls;  ///< null: plain TCP
  std::ostream& log_stream;
  std::mutex log_mutex;
  asio::io_context io;
  tcp::acceptor acceptor{io};
  std::thread thread;
  uint64_t next_session = 1;

  // The listener (gateway_listener.cpp); network thread only.
  /// Kept open so that, out of descriptors, one can be freed to accept a connection and
  /// refuse it with a reason, instead of leaving it in the backlog.
  int reserve_fd = -1;
  asio::steady_timer accept_retry{io};
  /// Memory that closed connections freed goes back to the system within a second of a burst
  /// of closes (glibc keeps freed heap otherwise: hostile peers' cost would outlive them).
  asio::steady_timer trim_timer{io};
  bool trim_armed = false;
  size_t ended_since_trim = 0;
  void trim_later();
  std::chrono::milliseconds accept_backoff{0};
  uint64_t accept_errors = 0;  ///< since the last logged one (logged at most once a second)
  std::chrono::steady_clock::time_point accept_error_logged{};
  /// Connections open now, but for those evicted at live.max_connections whose close is
  /// still being written (uncounted: ended does not count them out again).
  size_t connections = 0;
  std::set<uint64_t> uncounted;
  /// Those not past hello yet, by session id (ids grow: the first is the oldest), in all and
  /// by peer address, in two kinds. Idle: not a byte received yet; it holds a descriptor and
  /// no buffer, ends at the hello deadline, and gives way only at live.max_connections (the
  /// oldest idle one of the address holding the most, evict_idle). Before hello: bytes came
  /// but no hello yet; it buffers, and at a cap on such connections the oldest of them gives
  /// way (spoke). A plain connection whose first read holds its hello is never
  /// counted as before hello, so a client is never evicted while its hello is on its way.
  struct waiting_hello {
    std::string address;
    std::weak_ptr<session> who;
  };
  struct hello_pool {
    std::map<uint64_t, waiting_hello> by_id;
    std::map<std::string, std::set<uint64_t>> by_address;
    void add(uint64_t id, const std::string& address, std::weak_ptr<session> who);
    /// Whether `id` was there.
    bool remove(uint64_t id);
  };
  hello_pool idle, before_hello;
  /// Closes before hello left to each peer address (live.pre_hello_closes_per_s): a token
  /// bucket holding one second's worth (at least one), refilled as time passes. Each close
  /// brings an attacker's next dial; past the budget a connection is silenced instead.
  struct close_budget {
    double tokens = 0;
    std::chrono::steady_clock::time_point filled{};
  };
  std::map<std::string, close_budget> close_budgets;
  size_t prune_budgets_at = 1024;  ///< full buckets are dropped when there are this many
  /// Refusals and ends before hello (log_counted): lines this second, and those not logged.
  std::chrono::steady_clock::time_point counted_since{};
  uint64_t counted_lines = 0;
  std::map<std::string, uint64_t> counted_unlogged;

  // Status and show requests (gateway_status.cpp); network thread only. At most one ask of
  // the scheduler is in flight: requests that arrive meanwhile wait for the next one, which
  // answers them all (each answer is newer than the request).
  struct status_wait {
    std::shared_ptr<session> who;
    enum class kind { status, status_all, show, show_node } what = kind::status;
    uint64_t job = 0;  ///< show: the job asked about
    std::string server{};  ///< show_node: the server asked about
  };
  std::vector<status_wait> status_waiting, status_next;
  uint64_t status_asks = 0;  ///< the ask in flight, if status_waiting is not empty

  // Submits, cancels (gateway_orders.cpp) and node orders (gateway_nodes.cpp); network
  // thread only. A connection with one in
  // flight reads nothing more until it is answered, so its answers come in order and it holds
  // one ask at most. By ask number, the connections waiting: held here, as no read of theirs
  // is in progress to hold them.
  std::map<uint64_t, std::shared_ptr<session>> orders_waiting;
  uint64_t order_asks = 0;
  /// Clients' jobs active, sizes and rates (submit_limits.hpp); network thread only.
  submit_limits limits{opts.submit_limits};
  /// The connection waiting on `ask`, no longer held here; null if it was answered already.
  std::shared_ptr<session> take_waiting(uint64_t ask);

  log_relay logs;  ///< `aryl logs` (network thread only)

  // `aryl history` (gateway_history.cpp): pages read on a thread of their own (made at the
  // first request), one at a time; the connections waiting, by ask number (network thread
  // only). Declared after io: it is stopped and joined first (close does it already).
  std::optional<asio::thread_pool> history_pool;
  std::map<uint64_t, std::shared_ptr<session>> history_waiting;
  uint64_t history_asks = 0;
  /// Reads the page `q` asks for off the network thread and answers `who` with it (or the
  /// reason it cannot: no state file, a bad outcome, an unreadable file).
  void history_for(const std::shared_ptr<session>& who, wire::history_request q);

  std::mutex m;  // guards what follows: the network thread and the caller share it
  std::condition_variable registered_cv;
  /// Agents told to shut down whose connection is not closed yet (send_shutdown).
  int farewells = 0;
  bool farewells_told = false;  ///< every connected agent has been told
  std::condition_variable farewell_cv;
  std::map<std::string, server_slot> slots;
  worker_router router;
  /// The last ask of gateway::status_within, answered or not.
  std::shared_future<cluster_status> status_pending;
  /// gateway_options::join: agents of any name are taken until the inventory is fixed
  /// (join_agents), in the order they registered.
  bool joining = false;
  std::vector<std::string> join_order;
  /// Agents gateway_options::join_problem refused while joining, by name: why.
  std::map<std::string, std::string> join_refused;

  /// Audit lines recorded while no run could journal them (before it starts, between runs),
  /// passed to the next router that journals (bounded: the run folder's file has them all).
  std::deque<std::string> audit_backlog;
  static constexpr size_t max_audit_backlog = 10'000;
  /// Appends `e` to the audit log and has the run journal it (gateway_session.cpp).
  void audit(const audit_entry& e);

  /// Calls `f` with the router, holding the lock: set_router waits for calls in progress.
  template <class F>
  void with_router(F&& f) {
    std::lock_guard lock(m);
    f(router);
  }

  impl(gateway_options o, std::ostream& l) : opts(std::move(o)), log_stream(l) {}

  void log(const std::string& line) {
    std::lock_guard lock(log_mutex);
    log_stream << "[serve] " << escape_control(line) << '\n' << std::flush;
  }

  /// Accepts for ever: an error is logged and retried after a back-off; a connection over
  /// a cap is accepted and refused with a reason (gateway_listener.cpp).
  void accept();
  void admit(tcp::socket s);
  void refuse(tcp::socket& s, const std::string& reason, const std::string& kind);
  /// Logs `line`, unless 20 such lines were logged this second: then counts it under `kind`,
  /// and the next line logged says how many were not.
  void log_counted(const std::string& kind, const std::string& line);
  /// Takes one close before hello from `address`'s budget; false past it.
  bool may_close_before_hello(const std::string& address);
  /// Session `id`, past its address's budget of closes before hello, is held silent rather
  /// than closed: its place before hello is free, and it counts as idle (evict_idle may still
  /// close it at live.max_connections).
  void silenced(uint64_t id, const std::string& address, std::weak_ptr<session> who);
  /// How an eviction ends a connection: closed or, past its address's budget of closes before
  /// hello, silenced (a place before hello is wanted); or closed whatever the budget (the
  /// descriptor is wanted).
  enum class eviction { may_silence, close };
  /// Closes the connection not past hello with id `id` to make room for a newer one, saying why.
  void evict(uint64_t id, const std::string& why, eviction how);
  /// At live.max_connections: the oldest idle connection of the address holding the most
  /// idle ones gives way; false if none is idle.
  bool evict_idle();
  /// Session `id`, not past hello, has received bytes (plain: its first read did not hold a
  /// whole hello; TLS: its handshake begins): it leaves the idle ones and counts against the
  /// caps before hello, the oldest other such connection giving way at a cap. Idempotent.
  void spoke(uint64_t id);
  /// A session's hello was taken, it was evicted, or it ended: no longer counted as idle or
  /// before hello (idempotent).
  void hello_taken(uint64_t id);
  void ended(uint64_t id);

  /// Answers `w.who` (a status, status --all, show or show node) as soon as a status newer
  /// than this call comes (gateway_status.cpp).
  void ask_status(status_wait w);
  void ask_scheduler_status();
  /// The scheduler's answer to ask `seq`; nothing: no run in progress.
  void status_ready(uint64_t seq, std::optional<cluster_status> s);
  /// `aryl show node`'s answer from the scheduler's status `s` and the server's slot; a server
  /// neither knows is refused naming the known ones.
  void answer_show_node(session& who, const cluster_status& s, const std::set<std::string>& away,
                        const std::string& server);
  /// A client's submit or cancel, asked of the scheduler without waiting; `who` is answered
  /// (submit_ok, nothing for a cancel, or an error frame and the close) when it answers.
  void submit_for(const std::shared_ptr<session>& who, job_spec spec);
  void cancel_for(const std::shared_ptr<session>& who, uint64_t job);
  /// The run ended: every submit or cancel not answered yet is refused with `why`.
  void orders_unanswered(const std::string& why);
  void launch_on(const std::string& server, const node_launch& l);
  /// A torchrun job's node on `server`: one process, torchrun with aryl's rendezvous options.
  void launch_node(const std::string& server, const node_launch& l);
  void stop_on(const std::string& server, uint32_t job);
  /// Sends `msg` to the server's agent, or keeps it for when the agent is back.
  void deliver(const std::string& server, wire::message msg);
  /// The link through which the server actor of `server` reaches its machine (gateway.cpp).
  std::shared_ptr<node_link> link_to(const std::string& server);

  // The inventory while a run goes on (gateway_nodes.cpp); network thread only.
  /// An agent registering under a name the cluster lacks while a run is in progress: a
  /// training machine joins the cluster (its slot is made, with the id the scheduler gave).
  /// "": nothing to join (a known name, no run: on_register decides); else why it is
  /// refused; or nothing: the scheduler is asked without waiting, `who` waits in
  /// orders_waiting and, once it joined, goes on registering (join_answered) or is refused.
  std::optional<std::string> join_late(const std::shared_ptr<session>& who, const wire::register_& r);
  /// A client's cordon, drain or resume, asked of the scheduler without waiting, as a
  /// submit: `who` is answered (node_reply, or an error frame and the close) when it answers.
  void node_for(const std::shared_ptr<session>& who, const wire::node_request& q);
  /// A client's hold, release, update or array task cancel (gateway_jobs.cpp), asked as a
  /// submit: `who` is answered (job_reply, or an error frame and the close). `by`: who asks.
  void job_for(const std::shared_ptr<session>& who, const wire::job_request& q, const std::string& by);
};

/// Starts serving a connection just accepted (gateway_session.cpp).
std::shared_ptr<session> start_session(tcp::socket s, gateway::impl* g, uint64_t id, std::string address);
/// Closes `s` with `reason` (an error frame, then the close), as the gateway closes a peer;
/// before hello, past its address's budget of such closes, it is silenced instead.
void close_session(session& s, const std::string& reason);
/// The same, whatever the budget.
void close_session_now(session& s, const std::string& reason);
/// Queues `m` on `s`'s connection.
void send_to(session& s, const wire::message& m);
/// The answer to the request `s` waits for (a status, show, submit or cancel): one encoded
/// frame (shared by the connections it answers), or without one the reason it is refused
/// (the connection closes), or neither (a cancel done). `s` reads its next requests then.
void answer_request(session& s, const std::shared_ptr<const std::vector<uint8_t>>& frame, const std::string& refusal);
/// The answer to `s`'s submit is coming: it made job `job` (for the audit).
void submitted(session& s, uint64_t job);
/// `s`, an agent whose machine joined the running cluster (join_late), registers now.
void join_answered(session& s, const wire::register_& r);
/// `s`'s peer as its log lines name it.
const std::string& peer_of(const session& s);
/// `s`'s peer IP address.
const std::string& address_of(const session& s);
/// Seconds since a frame last came from `s`'s peer.
double heard_ago_s(const session& s);
/// Tells an agent's connection that the scheduler shuts down for good, counting it in
/// farewells until written and closed; false if it is closing already.
bool bid_farewell(session& s, const std::string& reason);
/// A joined machine's id, once the inventory is fixed (gateway::add_server).
void set_server_id(session& s, int id);

} // namespace aryl::live
