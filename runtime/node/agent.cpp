#include "runtime/node/agent.hpp"

#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "runtime/node/agent_loop.hpp"
#include "runtime/node/processes.hpp"
#include "runtime/node/run_as.hpp"
#include "runtime/node/worker_env.hpp"
#include "runtime/wire/plain_text.hpp"

namespace aryl::live {
namespace agent_detail {

int agent::run() {
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

std::string agent::invalid_options() const {
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

std::string agent::plain_text_refusal_now() {
  if (o_.tls || o_.insecure) return {};
  boost::system::error_code ec;
  tcp::resolver resolver(io_);
  auto results = resolver.resolve(o_.host, std::to_string(o_.port), ec);
  if (ec) return {};
  return net::plain_text_refusal(o_.host, o_.port, addresses_of(results), false);
}

std::vector<asio::ip::address> agent::addresses_of(const tcp::resolver::results_type& results) {
  std::vector<asio::ip::address> out;
  for (const auto& r : results) out.push_back(r.endpoint().address());
  return out;
}

void agent::on_tick() {
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

time_point agent::next_due(time_point now) const {
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

void agent::arm(time_point at) {
  if (armed_ && at >= tick_.expiry()) return;
  armed_ = true;
  tick_.expires_at(at);
  tick_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;  // re-armed earlier
    armed_ = false;
    on_tick();
  });
}

void agent::fence(time_point now) {
  fenced_ = true;
  if (size_t n = terminate_all(now); n > 0)
    say("fenced: nothing heard from the scheduler for " + format_double(o_.fence_after_s) + " s; SIGTERM to " +
        std::to_string(n) + " worker(s), SIGKILL after " + format_double(o_.shutdown_grace_s) + " s");
}

void agent::displaced(time_point now) {
  if (size_t n = terminate_all(now); n > 0)
    say("displaced: another agent holds server " + o_.name + " at the scheduler; SIGTERM to " + std::to_string(n) +
        " worker(s), SIGKILL after " + format_double(o_.shutdown_grace_s) + " s");
}

void agent::begin_shutdown(time_point now) {
  shutting_down_ = true;
  size_t n = terminate_all(now);
  // Nothing to say when no worker runs: "stopped" follows.
  if (n > 0)
    say("stopping: SIGTERM to " + std::to_string(n) + " worker(s), SIGKILL after " +
        format_double(o_.shutdown_grace_s) + " s");
}

size_t agent::terminate_all(time_point now) {
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

bool agent::finish(time_point now) {
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

} // namespace agent_detail

int run_agent(const agent_options& options, const std::atomic<bool>& stop_flag, std::ostream& log) {
  try {
    agent_detail::agent a(options, stop_flag, log);
    return a.run();
  } catch (const std::exception& e) {
    log << escape_control("agent " + options.name + ": error: " + e.what()) << std::endl;
    return 1;
  }
}

} // namespace aryl::live
