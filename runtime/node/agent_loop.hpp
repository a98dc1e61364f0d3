#pragma once
/// Private to the agent: the class that runs it, one event loop on the calling thread. Its
/// members are defined by concern in agent.cpp (the start and the housekeeping tick),
/// agent_connection.cpp (the connection to the scheduler) and agent_workers.cpp (the worker
/// processes).
#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "runtime/node/agent_parts.hpp"
#include "runtime/node/run_as.hpp"
#include "solvers/control_chars.hpp"

namespace aryl::live::agent_detail {

class agent {
 public:
  agent(const agent_options& o, const std::atomic<bool>& stop_flag, std::ostream& log)
      : o_(o), stop_flag_(stop_flag), log_(log), tick_(io_), rng_(std::random_device{}()) {}

  // ---- agent.cpp: the start, options, and the housekeeping tick (deadlines, fencing, shutdown).
  /// 0 after a stop, 2 for invalid options.
  int run();

 private:
  std::string invalid_options() const;
  /// Plain TCP's rule (net::plain_text_refusal) on what the scheduler's name resolves to at
  /// the start: a name that does not resolve yet is left to the dial, which checks each
  /// resolution.
  std::string plain_text_refusal_now();
  static std::vector<asio::ip::address> addresses_of(const tcp::resolver::results_type& results);
  void say(const std::string& text) { log_ << escape_control("agent " + o_.name + ": " + text) << std::endl; }
  void on_tick();
  /// When the next tick is due: the earliest deadline on_tick would act on, at most
  /// stop_poll_period away. Each condition matches the one on_tick tests, so a tick at this
  /// time acts and moves the deadline on.
  time_point next_due(time_point now) const;
  /// Makes the next tick come at `at` at the latest.
  void arm(time_point at);
  /// After an event that may have brought a deadline closer (a launch, a stop, output, a
  /// reaped worker, a dropped connection, a frame written while finishing).
  void reschedule() { arm(next_due(clock_type::now())); }
  /// Nothing heard from the scheduler for fence_after_s: it may have given these workers up
  /// and started their jobs elsewhere, so they stop (as `stop` would) rather than run on beside
  /// the new copies. Their exits are reported once the scheduler is heard again.
  void fence(time_point now);
  /// Another live agent holds this server's name at the scheduler: the workers running here
  /// under it are not the scheduler's (it gave them up, or never gave them), so they stop as
  /// fenced ones do, rather than run on beside the copies it runs elsewhere.
  void displaced(time_point now);
  void begin_shutdown(time_point now);
  /// SIGTERM to every running worker's group, SIGKILL after shutdown_grace_s; how many.
  size_t terminate_all(time_point now);
  /// With every worker gone: sends bye if connected, waits for it to be written (bounded),
  /// closes, and stops the loop. True once the loop is stopped.
  bool finish(time_point now);

  // ---- agent_connection.cpp: the connection to the scheduler.
  bool registered() const { return conn_ && conn_->state == connection::phase::registered; }
  /// A worker's end, sent now or kept for the next registration, which then lists the worker
  /// as exited: a scheduler restarted meanwhile learns that the job's worker ran and ended,
  /// rather than missing it and running the job again.
  void report_exit(uint64_t job_id, uint32_t rank, const std::vector<uint32_t>& gpus, int32_t code, uint32_t signal,
                   std::optional<uint64_t> generation, const std::string& reason = {});
  /// Sends now when registered, else keeps it for the next registration.
  void emit(wire::message m);
  void start_connect(time_point now);
  void on_connected(const std::shared_ptr<connection>& c, const tcp::endpoint& ep);
  void on_hello_ok(const std::shared_ptr<connection>& c);
  void close_connection();
  /// Closes the connection after logging why; schedules the reconnect unless stopping.
  void drop(const std::string& reason);
  void send(std::shared_ptr<connection> c, const wire::message& m);
  void start_write(std::shared_ptr<connection> c);
  void start_read(const std::shared_ptr<connection>& c);
  void handle(const std::shared_ptr<connection>& c, const wire::message& m);

  // ---- agent_workers.cpp: the worker processes: launch, stop, output, reaping.
  void reap_and_kill(time_point now);
  /// Reports the end of a reaped worker (its last progress first) and forgets it.
  void finish_worker(uint64_t id);
  /// Waits on the worker's pidfd; once it ends, reaps it and reports it as soon as its output is
  /// drained. An error, or a pidfd readable before the child can be reaped, falls back to polling.
  void watch_end(worker& w);
  void flush_progress(time_point now);
  worker* find_worker(uint64_t job_id, uint32_t rank);
  void start_failed(const wire::launch& l, const std::string& reason);
  void on_launch(const wire::launch& l);
  /// How a launch for `user` runs here, or why it does not.
  std::variant<run_as_plan, std::string> plan_user(const std::string& user) const;
  void on_stop(const wire::stop& s);
  void read_output(worker& w);
  void take_output(worker& w, std::string_view data);
  void write_log(worker& w, std::string_view bytes);
  /// A line ended (or the output did): logged with its newline, and sent on if progress.
  void handle_line(worker& w, std::string line);

  const agent_options& o_;
  const std::atomic<bool>& stop_flag_;
  std::ostream& log_;
  asio::io_context io_;
  asio::steady_timer tick_;
  bool armed_ = false;  ///< a tick is due at tick_.expiry()
  bool said_no_pidfd_ = false;
  std::shared_ptr<connection> conn_;
  /// Workers by id; each owns its child process (killed and reaped if still here at the end).
  std::map<uint64_t, std::unique_ptr<worker>> workers_;
  /// Launches waiting for the previous worker of their (job, rank) to exit; a stop of the
  /// job meanwhile cancels them.
  struct deferred_launch {
    wire::launch launch;
    bool stopped = false;
  };
  std::map<std::pair<uint64_t, uint32_t>, deferred_launch> deferred_;
  uint64_t next_worker_id_ = 1;
  /// Progress and exits that happened while not registered, in order.
  std::deque<wire::message> backlog_;
  std::string marker_;  ///< agent_marker_variable's value for this agent's workers
  /// Workers whose exit reports are in backlog_, listed as exited at the next registration.
  std::vector<wire::running_worker> exited_away_;
  std::mt19937_64 rng_;
  /// register.instance: tells the scheduler a new connection of this process from another
  /// agent's under the same name.
  std::string instance_ = random_instance();
  unsigned failures_ = 0;
  time_point next_connect_{};
  time_point last_heard_{};  ///< latest bytes from the scheduler (fencing)
  bool fenced_ = false;      ///< fenced since last_heard_
  bool shutting_down_ = false;
  /// Last time the agent was registered (or started): give_up_after_s counts from it.
  time_point unregistered_since_{};
  bool gave_up_ = false;
  bool finishing_ = false;
  time_point finish_deadline_{};
  std::string worker_program_;
  agent_self self_;  ///< whose jobs this agent may start
};

} // namespace aryl::live::agent_detail
