#include "runtime/node/agent.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <charconv>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

// After <utility>: Boost 1.74's asio/awaitable.hpp uses std::exchange without including it.
#include <boost/asio.hpp>

#include "solvers/control_chars.hpp"
#include "runtime/node/agent_parts.hpp"
#include "runtime/node/processes.hpp"
#include "runtime/node/run_as.hpp"
#include "runtime/node/worker_env.hpp"
#include "runtime/node/worker_log.hpp"
#include "runtime/wire/plain_text.hpp"
#include "runtime/wire/tls_stream.hpp"
#include "runtime/wire/codec.hpp"

namespace aryl::live {

namespace {

using namespace agent_detail;

class agent {
 public:
  agent(const agent_options& o, const std::atomic<bool>& stop_flag, std::ostream& log)
      : o_(o), stop_flag_(stop_flag), log_(log), tick_(io_), rng_(std::random_device{}()) {}

  /// 0 after a stop, 2 for invalid options.
  int run() {
    if (std::string bad = invalid_options(); !bad.empty()) {
      say("invalid options: " + bad);
      return 2;
    }
    if (std::string why = plain_text_refusal_now(); !why.empty()) {
      say("refused to connect: " + why);
      return 2;
    }
    std::error_code ec;
    fs::create_directories(fs::path(o_.work_dir) / "logs", ec);
    if (ec) {
      say("cannot create " + (fs::path(o_.work_dir) / "logs").string() + ": " + ec.message());
      return 2;
    }
    // Exit statuses are lost while SIGCHLD is ignored (children are reaped by the kernel).
    struct sigaction chld {};
    ::sigaction(SIGCHLD, nullptr, &chld);
    if (chld.sa_handler == SIG_IGN || (chld.sa_flags & SA_NOCLDWAIT) != 0) {
      chld = {};
      chld.sa_handler = SIG_DFL;
      ::sigaction(SIGCHLD, &chld, nullptr);
      say("SIGCHLD was ignored: reset to the default so worker exits can be reported");
    }
    // Workers' children that a killed run of this agent left would run beside the launches
    // the scheduler sends now: one (job, rank) alive twice.
    marker_ = o_.name + "@" + fs::absolute(o_.work_dir, ec).string();
    if (int left = kill_marked_processes(marker_); left > 0)
      say("killed " + std::to_string(left) + " worker process(es) an earlier run of this agent left");
    self_.euid = ::geteuid();
    const auto me = find_account(self_.euid);
    self_.user = me ? me->name : "uid " + std::to_string(self_.euid);
    self_.allow_root_jobs = o_.allow_root_jobs;
    worker_program_ = o_.worker_program;
    if (worker_program_.empty()) worker_program_ = fs::read_symlink("/proc/self/exe", ec).string();
    say("starting: scheduler " + o_.host + ":" + std::to_string(o_.port) + ", work dir " +
        o_.work_dir);
    next_connect_ = last_heard_ = unregistered_since_ = clock_type::now();
    asio::post(io_, [this] { on_tick(); });
    io_.run();
    say("stopped");
    return gave_up_ ? 3 : 0;
  }

 private:
  std::string invalid_options() const {
    if (o_.name.empty()) return "name is empty";
    if (o_.port == 0) return "port is 0";
    if (o_.work_dir.empty()) return "work_dir is empty";
    if (!(o_.heartbeat_s > 0) || !std::isfinite(o_.heartbeat_s)) return "heartbeat_s must be > 0";
    if (!(o_.reconnect_min_s > 0) || !(o_.reconnect_max_s >= o_.reconnect_min_s) ||
        !std::isfinite(o_.reconnect_max_s))
      return "need 0 < reconnect_min_s <= reconnect_max_s";
    if (!(o_.handshake_timeout_s > 0)) return "handshake_timeout_s must be > 0";
    if (!(o_.shutdown_grace_s >= 0)) return "shutdown_grace_s must be >= 0";
    if (!(o_.progress_interval_s >= 0)) return "progress_interval_s must be >= 0";
    if (!(o_.fence_after_s >= 0) || !std::isfinite(o_.fence_after_s)) return "fence_after_s must be >= 0";
    if (!(o_.give_up_after_s >= 0) || !std::isfinite(o_.give_up_after_s)) return "give_up_after_s must be >= 0";
    for (const auto& p : o_.pass_env)
      if (auto why = pass_env_refusal(p); !why.empty()) return why;
    return {};
  }

  /// Plain TCP's rule (net::plain_text_refusal) on what the scheduler's name resolves to at
  /// the start: a name that does not resolve yet is left to the dial, which checks each
  /// resolution.
  std::string plain_text_refusal_now() {
    if (o_.tls || o_.insecure) return {};
    boost::system::error_code ec;
    tcp::resolver resolver(io_);
    auto results = resolver.resolve(o_.host, std::to_string(o_.port), ec);
    if (ec) return {};
    return net::plain_text_refusal(o_.host, o_.port, addresses_of(results), false);
  }

  static std::vector<asio::ip::address> addresses_of(const tcp::resolver::results_type& results) {
    std::vector<asio::ip::address> out;
    for (const auto& r : results) out.push_back(r.endpoint().address());
    return out;
  }

  void say(const std::string& text) { log_ << escape_control("agent " + o_.name + ": " + text) << std::endl; }

  // ---- housekeeping --------------------------------------------------------------------

  void on_tick() {
    const auto now = clock_type::now();
    if (stop_flag_.load() && !shutting_down_) begin_shutdown(now);
    if (registered() && conn_->accepted) {
      unregistered_since_ = now;
    } else if (o_.give_up_after_s > 0 && !shutting_down_ && now - unregistered_since_ >= seconds(o_.give_up_after_s)) {
      say("giving up: not registered with the scheduler for " + format_double(o_.give_up_after_s) + " s");
      gave_up_ = true;
      begin_shutdown(now);
    }
    if (o_.fence_after_s > 0 && !fenced_ && !shutting_down_ && now - last_heard_ > seconds(o_.fence_after_s))
      fence(now);
    reap_and_kill(now);
    flush_progress(now);
    if (shutting_down_) {
      if (workers_.empty() && finish(now)) return;
    } else if (!conn_) {
      if (now >= next_connect_) start_connect(now);
    } else if (conn_->state != connection::phase::registered) {
      if (now >= conn_->handshake_deadline)
        drop("no hello_ok within " + format_double(o_.handshake_timeout_s) + " s");
    } else if (now >= conn_->next_heartbeat) {
      const auto c = conn_;
      c->next_heartbeat += seconds(o_.heartbeat_s);
      if (c->next_heartbeat < now) c->next_heartbeat = now + seconds(o_.heartbeat_s);
      send(c, wire::heartbeat{++c->seq});
    }
    arm(next_due(now));
  }

  /// When the next tick is due: the earliest deadline on_tick would act on, at most
  /// stop_poll_period away. Each condition matches the one on_tick tests, so a tick at this
  /// time acts and moves the deadline on.
  time_point next_due(time_point now) const {
    time_point due = now + stop_poll_period;
    const auto by = [&due](time_point t) { due = std::min(due, t); };
    if (!(registered() && conn_->accepted) && o_.give_up_after_s > 0 && !shutting_down_)
      by(unregistered_since_ + seconds(o_.give_up_after_s));
    if (o_.fence_after_s > 0 && !fenced_ && !shutting_down_) by(last_heard_ + seconds(o_.fence_after_s));
    for (const auto& [id, w] : workers_) {
      if (!w->status) {
        if (!w->ended) by(now + reap_poll_period);
        if (w->kill_at && !w->killed) by(*w->kill_at);
      } else if (w->out) {
        by(w->reaped_at + output_drain_limit);
      }
      if (registered() && w->pending) by(w->last_sent + seconds(o_.progress_interval_s));
    }
    if (shutting_down_) {
      if (workers_.empty())
        by(finishing_ && conn_ && (conn_->writing || !conn_->out.empty()) ? finish_deadline_ : now);
    } else if (!conn_) {
      by(next_connect_);
    } else if (conn_->state != connection::phase::registered) {
      by(conn_->handshake_deadline);
    } else {
      by(conn_->next_heartbeat);
    }
    return due;
  }

  /// Makes the next tick come at `at` at the latest.
  void arm(time_point at) {
    if (armed_ && at >= tick_.expiry()) return;
    armed_ = true;
    tick_.expires_at(at);
    tick_.async_wait([this](const boost::system::error_code& ec) {
      if (ec) return;  // re-armed earlier
      armed_ = false;
      on_tick();
    });
  }

  /// After an event that may have brought a deadline closer (a launch, a stop, output, a
  /// reaped worker, a dropped connection, a frame written while finishing).
  void reschedule() { arm(next_due(clock_type::now())); }

  /// Nothing heard from the scheduler for fence_after_s: it may have given these workers up
  /// and started their jobs elsewhere, so they stop (as `stop` would) rather than run on beside
  /// the new copies. Their exits are reported once the scheduler is heard again.
  void fence(time_point now) {
    fenced_ = true;
    if (size_t n = terminate_all(now); n > 0)
      say("fenced: nothing heard from the scheduler for " + format_double(o_.fence_after_s) + " s; SIGTERM to " +
          std::to_string(n) + " worker(s), SIGKILL after " + format_double(o_.shutdown_grace_s) + " s");
  }

  /// Another live agent holds this server's name at the scheduler: the workers running here
  /// under it are not the scheduler's (it gave them up, or never gave them), so they stop as
  /// fenced ones do, rather than run on beside the copies it runs elsewhere.
  void displaced(time_point now) {
    if (size_t n = terminate_all(now); n > 0)
      say("displaced: another agent holds server " + o_.name + " at the scheduler; SIGTERM to " + std::to_string(n) +
          " worker(s), SIGKILL after " + format_double(o_.shutdown_grace_s) + " s");
  }

  void begin_shutdown(time_point now) {
    shutting_down_ = true;
    size_t n = terminate_all(now);
    // Nothing to say when no worker runs: "stopped" follows.
    if (n > 0)
      say("stopping: SIGTERM to " + std::to_string(n) + " worker(s), SIGKILL after " +
          format_double(o_.shutdown_grace_s) + " s");
  }

  /// SIGTERM to every running worker's group, SIGKILL after shutdown_grace_s; how many.
  size_t terminate_all(time_point now) {
    size_t n = 0;
    for (auto& [id, w] : workers_) {
      if (w->status) continue;
      w->proc.signal_group(SIGTERM);
      const auto deadline = now + seconds(o_.shutdown_grace_s);
      w->kill_at = w->kill_at ? std::min(*w->kill_at, deadline) : deadline;
      ++n;
    }
    return n;
  }

  /// With every worker gone: sends bye if connected, waits for it to be written (bounded),
  /// closes, and stops the loop. True once the loop is stopped.
  bool finish(time_point now) {
    if (!finishing_) {
      finishing_ = true;
      finish_deadline_ = now + bye_flush_limit;
      if (conn_ && conn_->state != connection::phase::connecting) {
        send(conn_, wire::bye{});
        say("bye sent");
      }
    }
    if (conn_ && (conn_->writing || !conn_->out.empty()) && now < finish_deadline_) return false;
    close_connection();
    io_.stop();
    return true;
  }

  void reap_and_kill(time_point now) {
    std::vector<uint64_t> done;
    for (auto& [id, w] : workers_) {
      if (!w->status) {
        std::optional<exit_status> st;
        if (!w->ended) st = w->proc.try_reap();
        if (st) {
          w->status = *st;
          w->reaped_at = now;
        } else if (w->kill_at && now >= *w->kill_at && !w->killed) {
          w->proc.signal_group(SIGKILL);
          w->killed = true;
          say(worker_label(w->job_id, w->rank) + ": SIGKILL after the grace period");
        }
      }
      if (w->status && (!w->out || now - w->reaped_at >= output_drain_limit)) done.push_back(id);
    }
    for (uint64_t id : done) finish_worker(id);
  }

  /// Reports the end of a reaped worker (its last progress first) and forgets it.
  void finish_worker(uint64_t id) {
    auto it = workers_.find(id);
    if (it == workers_.end()) return;
    worker& w = *it->second;
    if (!w.partial.empty() || w.overlong) handle_line(w, std::exchange(w.partial, {}));
    if (w.pending) emit(*std::exchange(w.pending, std::nullopt));
    say("exit " + worker_label(w.job_id, w.rank) + ": code " + std::to_string(w.status->code) +
        " signal " + std::to_string(w.status->signal));
    // A child that could not exec exits 127 as `sh` does for a missing command: the scheduler
    // is told why, so that `aryl show` says it rather than a bare code.
    report_exit(w.job_id, w.rank, w.gpus, w.status->code, w.status->signal, w.generation, w.proc.start_error());
    const std::pair<uint64_t, uint32_t> key{w.job_id, w.rank};
    workers_.erase(it);
    if (auto d = deferred_.find(key); d != deferred_.end()) {
      auto later = std::move(d->second);
      deferred_.erase(d);
      // Stopped before it could start: it ends as a stopped worker would.
      if (later.stopped)
        report_exit(later.launch.job_id, later.launch.rank, later.launch.gpus, 0, SIGTERM, later.launch.generation);
      else on_launch(later.launch);
    }
    reschedule();  // the last worker gone: a stopping agent can finish
  }

  /// Waits on the worker's pidfd; once it ends, reaps it and reports it as soon as its output is
  /// drained. An error, or a pidfd readable before the child can be reaped, falls back to polling.
  void watch_end(worker& w) {
    if (!w.ended) return;
    w.ended->async_wait(asio::posix::stream_descriptor::wait_read,
                        [this, id = w.id](const boost::system::error_code& ec) {
                          if (ec == asio::error::operation_aborted) return;
                          auto it = workers_.find(id);
                          if (it == workers_.end() || it->second->status) return;
                          worker& w = *it->second;
                          w.ended.reset();
                          if (!ec) {
                            if (auto st = w.proc.try_reap()) {
                              w.status = *st;
                              w.reaped_at = clock_type::now();
                              if (!w.out) return finish_worker(id);
                            }
                          }
                          reschedule();
                        });
  }

  void flush_progress(time_point now) {
    for (auto& [id, w] : workers_)
      if (registered() && w->pending && now - w->last_sent >= seconds(o_.progress_interval_s)) {
        send(conn_, *std::exchange(w->pending, std::nullopt));
        w->last_sent = now;
      }
  }

  // ---- connection ----------------------------------------------------------------------

  bool registered() const { return conn_ && conn_->state == connection::phase::registered; }

  /// A worker's end, sent now or kept for the next registration, which then lists the worker
  /// as exited: a scheduler restarted meanwhile learns that the job's worker ran and ended,
  /// rather than missing it and running the job again.
  void report_exit(uint64_t job_id, uint32_t rank, const std::vector<uint32_t>& gpus, int32_t code, uint32_t signal,
                   std::optional<uint64_t> generation, const std::string& reason = {}) {
    if (!registered()) exited_away_.push_back({job_id, rank, gpus, std::nullopt, code, signal, generation});
    wire::exit_ e{job_id, rank, code, signal, generation};
    // One argv's failure in words: bounded, and still UTF-8 where the cut falls in a character.
    if (!reason.empty()) e.reason = utf8_or_marks(std::string_view(reason).substr(0, 1024));
    emit(std::move(e));
  }

  /// Sends now when registered, else keeps it for the next registration.
  void emit(wire::message m) {
    if (registered()) send(conn_, m);
    else backlog_.push_back(std::move(m));
  }

  void start_connect(time_point now) {
    auto c = std::make_shared<connection>(io_, o_);
    conn_ = c;
    c->handshake_deadline = now + seconds(o_.handshake_timeout_s);
    c->resolver.async_resolve(
        o_.host, std::to_string(o_.port),
        [this, c](const boost::system::error_code& ec, const tcp::resolver::results_type& results) {
          if (c != conn_) return;
          if (ec) return drop("cannot resolve " + o_.host + ": " + ec.message());
          if (!o_.tls)  // the hello carries the token
            if (auto why = net::plain_text_refusal(o_.host, o_.port, addresses_of(results), o_.insecure); !why.empty())
              return drop("not dialled: " + why);
          asio::async_connect(c->stream->socket(), results,
                              [this, c](const boost::system::error_code& ec2, const tcp::endpoint& ep) {
                                if (c != conn_) return;
                                if (ec2)
                                  return drop("cannot connect to " + o_.host + ":" +
                                              std::to_string(o_.port) + ": " + ec2.message());
                                on_connected(c, ep);
                              });
        });
  }

  void on_connected(const std::shared_ptr<connection>& c, const tcp::endpoint& ep) {
    boost::system::error_code ignored;
    c->stream->socket().set_option(tcp::no_delay(true), ignored);
    std::ostringstream where;
    where << ep;
    say("connected to " + where.str());
    c->stream->async_handshake([this, c, at = where.str()](const std::string& error) {  // plain: at once
      if (c != conn_) return;
      if (!error.empty()) return drop("TLS handshake with " + o_.host + " (" + at + ") failed: " + error);
      c->state = connection::phase::hello_sent;
      send(c, wire::hello{wire::peer_role::agent, o_.token, o_.name});
      start_read(c);
    });
  }

  void on_hello_ok(const std::shared_ptr<connection>& c) {
    wire::register_ r{o_.name, o_.gpu_type, o_.gpus, o_.pool, {}};
    if (!o_.address.empty()) r.address = o_.address;
    r.instance = instance_;
    r.version = ARYL_VERSION;
    for (auto& [id, w] : workers_)
      if (!w->status)
        r.workers.push_back({w->job_id, w->rank, w->gpus, static_cast<uint32_t>(w->proc.pid()), std::nullopt,
                             std::nullopt, w->generation});
    // Their exits are in the backlog sent below.
    for (auto& w : exited_away_) r.workers.push_back(w);
    exited_away_.clear();
    send(c, r);
    c->state = connection::phase::registered;
    const auto now = clock_type::now();
    c->next_heartbeat = now + seconds(o_.heartbeat_s);
    say("registered with " + std::to_string(r.workers.size()) + " running worker(s), " +
        std::to_string(backlog_.size()) + " buffered report(s)");
    for (auto& m : backlog_) send(c, m);
    backlog_.clear();
    for (auto& [id, w] : workers_)
      if (w->pending) {
        send(c, *std::exchange(w->pending, std::nullopt));
        w->last_sent = now;
      }
  }

  void close_connection() {
    // Exact, where the tick would see it only at its next run.
    if (registered() && conn_->accepted) unregistered_since_ = clock_type::now();
    auto c = std::exchange(conn_, nullptr);
    if (!c) return;
    c->resolver.cancel();
    c->stream->close();
  }

  /// Closes the connection after logging why; schedules the reconnect unless stopping.
  void drop(const std::string& reason) {
    close_connection();
    reschedule();
    if (shutting_down_) return say("disconnected: " + reason);
    const double d = std::min(o_.reconnect_max_s,
                              o_.reconnect_min_s * std::pow(2.0, std::min(failures_, 60u)));
    ++failures_;
    const double wait = std::uniform_real_distribution<double>(d / 2, d)(rng_);
    next_connect_ = clock_type::now() + seconds(wait);
    reschedule();
    say("disconnected: " + reason + "; reconnecting in " + format_double(std::round(wait * 1000) / 1000) +
        " s");
  }

  void send(std::shared_ptr<connection> c, const wire::message& m) {
    if (c->out.size() >= max_queued_frames) return drop("the scheduler is not reading");
    c->out.push_back(wire::encode_frame(m));
    c->out_bytes += c->out.back().size();
    if (!c->writing) start_write(c);
  }

  void start_write(std::shared_ptr<connection> c) {
    c->writing = true;
    c->stream->async_write(asio::buffer(c->out.front()),
                      [this, c](const boost::system::error_code& ec, size_t) {
                        if (c != conn_) return;
                        if (ec) return drop("write failed: " + ec.message());
                        c->out_bytes -= c->out.front().size();
                        c->out.pop_front();
                        if (!c->out.empty()) return start_write(c);
                        c->writing = false;
                        if (finishing_) reschedule();  // the bye is written
                      });
  }

  void start_read(const std::shared_ptr<connection>& c) {
    c->stream->async_read_some(
        asio::buffer(c->read_buf), [this, c](const boost::system::error_code& ec, size_t n) {
          if (c != conn_) return;
          if (ec == asio::error::eof) return drop("connection closed by the scheduler");
          if (ec) return drop("read failed: " + ec.message());
          c->decoder.feed(c->read_buf.data(), n);
          last_heard_ = clock_type::now();
          fenced_ = false;
          for (;;) {
            auto step = c->decoder.next();
            if (std::holds_alternative<wire::need_more>(step)) break;
            if (auto* e = std::get_if<wire::decode_error>(&step))
              return drop("malformed frame from the scheduler: " + e->reason);
            handle(c, std::get<wire::message>(step));
            if (c != conn_) return;
          }
          reschedule();
          start_read(c);
        });
  }

  void handle(const std::shared_ptr<connection>& c, const wire::message& m) {
    if (c->state == connection::phase::hello_sent) {
      if (std::holds_alternative<wire::hello_ok>(m)) return on_hello_ok(c);
      if (auto* e = std::get_if<wire::error>(&m)) return drop("scheduler refused hello: " + e->reason);
      return drop("expected hello_ok, got '" + std::string(wire::type_of(m)) + "'");
    }
    // Taken as registered once the scheduler says anything else: a refused register (an
    // error) keeps backing off instead of retrying at once.
    if (!std::holds_alternative<wire::error>(m)) {
      failures_ = 0;
      c->accepted = true;
    }
    std::visit(overloaded{
                   [&](const wire::launch& l) { on_launch(l); },
                   [&](const wire::stop& s) { on_stop(s); },
                   [&](const wire::log_fetch& f) { send(c, answer_log_fetch(o_.work_dir, o_.name, f, c->out_bytes)); },
                   [&](const wire::error& e) {
                     if (e.code == "name_held") displaced(clock_type::now());
                     drop("scheduler error: " + e.reason);
                   },
                   [&](const wire::bye&) { drop("scheduler said bye"); },
                   [&](const wire::shutdown& s) {
                     // For good: reconnecting would only find no scheduler, or a new run
                     // that does not know these workers.
                     say("the scheduler shut down for good (" + s.reason + "): stopping");
                     if (!shutting_down_) begin_shutdown(clock_type::now());
                   },
                   [&](const wire::heartbeat&) {},  // heard: the read itself counts (fencing)
                   [&](const auto&) {
                     say("ignored unexpected '" + std::string(wire::type_of(m)) +
                         "' from the scheduler");
                   },
               },
               m);
  }

  // ---- workers -------------------------------------------------------------------------

  worker* find_worker(uint64_t job_id, uint32_t rank) {
    for (auto& [id, w] : workers_)
      if (w->job_id == job_id && w->rank == rank && !w->status) return w.get();
    return nullptr;
  }

  void start_failed(const wire::launch& l, const std::string& reason) {
    say("launch " + worker_label(l.job_id, l.rank) + " failed: " + reason);
    report_exit(l.job_id, l.rank, l.gpus, 127, 0, l.generation, reason);
  }

  void on_launch(const wire::launch& l) {
    const std::string label = worker_label(l.job_id, l.rank);
    if (worker* w = find_worker(l.job_id, l.rank)) {
      // A worker being stopped (or whose exit is not reported yet) is a previous launch of
      // the same rank: the new one starts once that exit is reported, so each exit names one.
      if (w->kill_at || w->status) {
        say("launch " + label + " waits for pid " + std::to_string(w->proc.pid()) + " to exit");
        deferred_[{l.job_id, l.rank}] = deferred_launch{l, false};
        return;
      }
      // A newer assignment of the rank: the worker left from the older one is not the
      // scheduler's any more (its exit is reported under its own generation, not the new one's).
      if (l.generation && w->generation && *l.generation > *w->generation) {
        const auto deadline = clock_type::now() + seconds(o_.shutdown_grace_s);
        w->proc.signal_group(SIGTERM);
        w->kill_at = deadline;
        deferred_[{l.job_id, l.rank}] = deferred_launch{l, false};
        say("launch " + label + " of generation " + std::to_string(*l.generation) + ": pid " +
            std::to_string(w->proc.pid()) + " of generation " + std::to_string(*w->generation) +
            " gets SIGTERM, SIGKILL after " + format_double(o_.shutdown_grace_s) + " s; the launch waits for it");
        return reschedule();
      }
      return say("launch " + label + " ignored: already running as pid " +
                 std::to_string(w->proc.pid()));
    }
    if (shutting_down_) return say("launch " + label + " ignored: the agent is stopping");
    std::optional<run_as_plan> as;
    if (l.user) {
      auto plan = plan_user(*l.user);
      if (auto* why = std::get_if<std::string>(&plan)) return start_failed(l, *why);
      as = std::get<run_as_plan>(std::move(plan));
    }
    const fs::path ckpt = fs::path(l.checkpoint_dir).is_absolute()
                              ? fs::path(l.checkpoint_dir)
                              : fs::path(o_.work_dir) / "checkpoints" / std::to_string(l.job_id);
    spawn_spec spec;
    if (as) {
      const auto& a = as->account;
      auto job_dir = prepare_job_dirs(o_.work_dir, l.job_id, ckpt, a);
      if (auto* why = std::get_if<std::string>(&job_dir)) return start_failed(l, *why);
      if (as->change_credentials) spec.as = credentials{a.uid, a.gid, a.groups};
      spec.working_dir = std::get<fs::path>(job_dir).string();
      spec.usable_dirs = {ckpt.string()};
    } else {
      std::error_code ec;
      fs::create_directories(ckpt, ec);
      if (ec) return start_failed(l, "cannot create " + ckpt.string() + ": " + ec.message());
    }
    auto w = std::make_unique<worker>();
    std::string log_error;
    // A user's job output stays between that user and the agent.
    w->log_fd = open_worker_log(o_.work_dir, l.job_id, l.rank, as ? as->account.name : std::string{}, log_error);
    if (w->log_fd < 0) return start_failed(l, log_error);
    spec.argv = l.command.empty() ? std::vector<std::string>{worker_program_, "worker"} : l.command;
    worker_context ctx{marker_, ckpt.string(), std::nullopt};
    if (as) ctx.account = worker_account{as->account.name, as->account.home, as->account.shell};
    auto env = build_worker_environment(current_environment(), o_.pass_env, l, ctx);
    for (const auto& name : env.refused)
      say("launch " + label + ": env '" + name + "' left out (a launch may not set it)");
    spec.env = std::move(env.env);
    spec.stderr_fd = w->log_fd;
    try {
      w->proc = child_process::spawn(spec);
    } catch (const std::system_error& e) {
      return start_failed(l, e.what());
    }
    w->id = next_worker_id_++;
    w->job_id = l.job_id;
    w->rank = l.rank;
    w->gpus = l.gpus;
    w->generation = l.generation;
    say("launch " + label + " of " + std::to_string(l.world_size) + ": pid " +
        std::to_string(w->proc.pid()) + ", gpus [" + join(l.gpus) + "], " + spec.argv[0] +
        (as ? ", as " + as->account.name : ""));
    if (!w->proc.start_error().empty()) say(label + ": " + w->proc.start_error());
    w->out = std::make_unique<asio::posix::stream_descriptor>(io_, w->proc.take_stdout_fd());
    if (!o_.poll_worker_exits) {
      if (const int fd = w->proc.open_pidfd(); fd >= 0) {
        w->ended = std::make_unique<asio::posix::stream_descriptor>(io_, fd);
      } else if (!said_no_pidfd_) {
        said_no_pidfd_ = true;
        say(std::string("no pidfd (") + std::strerror(errno) + "): worker exits are polled every " +
            std::to_string(reap_poll_period.count()) + " ms");
      }
    }
    worker& ref = *w;
    workers_.emplace(w->id, std::move(w));
    read_output(ref);
    // In this handler, before the loop next waits: a child already ended is reported by the
    // pidfd's registration with epoll (asio's wait does not look before it waits).
    watch_end(ref);
    reschedule();
  }

  /// How a launch for `user` runs here, or why it does not.
  std::variant<run_as_plan, std::string> plan_user(const std::string& user) const {
    try {
      return plan_run_as(user, find_account(user), self_);
    } catch (const std::system_error& e) {
      return "cannot look up user '" + user + "': " + e.code().message();
    }
  }

  void on_stop(const wire::stop& s) {
    const double grace = std::isfinite(s.grace_s) && s.grace_s > 0 ? s.grace_s : 0;
    const auto deadline = clock_type::now() + seconds(grace);
    size_t n = 0;
    for (auto& [id, w] : workers_) {
      if (w->job_id != s.job_id || w->status) continue;
      w->proc.signal_group(SIGTERM);
      w->kill_at = w->kill_at ? std::min(*w->kill_at, deadline) : deadline;
      ++n;
    }
    for (auto& [key, d] : deferred_)
      if (key.first == s.job_id) d.stopped = true;
    say("stop job " + std::to_string(s.job_id) + ": SIGTERM to " + std::to_string(n) +
        " worker(s), SIGKILL after " + format_double(grace) + " s");
    reschedule();
  }

  void read_output(worker& w) {
    w.out->async_read_some(asio::buffer(*w.buf),
                           [this, id = w.id, buf = w.buf](const boost::system::error_code& ec, size_t n) {
                             auto it = workers_.find(id);
                             if (it == workers_.end() || !it->second->out) return;
                             worker& w = *it->second;
                             take_output(w, std::string_view(buf->data(), n));
                             if (ec) {
                               if (!w.partial.empty() || w.overlong) handle_line(w, std::exchange(w.partial, {}));
                               w.out.reset();
                               if (w.status) finish_worker(id);
                               return;
                             }
                             if (w.pending) reschedule();  // its flush
                             read_output(w);
                           });
  }

  void take_output(worker& w, std::string_view data) {
    while (!data.empty()) {
      const auto nl = data.find('\n');
      const auto piece = data.substr(0, nl);
      if (w.overlong) {
        write_log(w, piece);
      } else {
        w.partial.append(piece);
        // Too long to be progress: the log gets it whole, in pieces, and memory stays bounded.
        if (w.partial.size() >= max_line_bytes) {
          write_log(w, std::exchange(w.partial, {}));
          w.overlong = true;
        }
      }
      if (nl == std::string_view::npos) return;
      data.remove_prefix(nl + 1);
      handle_line(w, std::exchange(w.partial, {}));
    }
  }

  void write_log(worker& w, std::string_view bytes) {
    if (w.log_fd >= 0) [[maybe_unused]] auto n = ::write(w.log_fd, bytes.data(), bytes.size());
  }

  /// A line ended (or the output did): logged with its newline, and sent on if progress.
  void handle_line(worker& w, std::string line) {
    wire::progress p;
    const bool is_progress = !std::exchange(w.overlong, false) && parse_progress_line(line, p);
    line += '\n';
    write_log(w, line);
    if (!is_progress) return;
    p.job_id = w.job_id;
    p.rank = w.rank;
    p.generation = w.generation;
    const auto now = clock_type::now();
    if (registered() && now - w.last_sent >= seconds(o_.progress_interval_s)) {
      send(conn_, p);
      w.last_sent = now;
      w.pending.reset();
    } else {
      w.pending = p;
    }
  }

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

} // namespace

int run_agent(const agent_options& options, const std::atomic<bool>& stop_flag, std::ostream& log) {
  try {
    agent a(options, stop_flag, log);
    return a.run();
  } catch (const std::exception& e) {
    log << escape_control("agent " + options.name + ": error: " + e.what()) << std::endl;
    return 1;
  }
}

} // namespace aryl::live
