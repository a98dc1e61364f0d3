// The agent's worker processes: launched and stopped as the scheduler says, their output
// logged and parsed for progress, their ends reaped and reported.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>

#include "runtime/node/agent_loop.hpp"
#include "runtime/node/processes.hpp"
#include "runtime/node/run_as.hpp"
#include "runtime/node/worker_env.hpp"
#include "runtime/node/worker_log.hpp"

namespace aryl::live::agent_detail {

void agent::reap_and_kill(time_point now) {
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

void agent::finish_worker(uint64_t id) {
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

void agent::watch_end(worker& w) {
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

void agent::flush_progress(time_point now) {
  for (auto& [id, w] : workers_)
    if (registered() && w->pending && now - w->last_sent >= seconds(o_.progress_interval_s)) {
      send(conn_, *std::exchange(w->pending, std::nullopt));
      w->last_sent = now;
    }
}

worker* agent::find_worker(uint64_t job_id, uint32_t rank) {
  for (auto& [id, w] : workers_)
    if (w->job_id == job_id && w->rank == rank && !w->status) return w.get();
  return nullptr;
}

void agent::start_failed(const wire::launch& l, const std::string& reason) {
  say("launch " + worker_label(l.job_id, l.rank) + " failed: " + reason);
  report_exit(l.job_id, l.rank, l.gpus, 127, 0, l.generation, reason);
}

void agent::on_launch(const wire::launch& l) {
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

std::variant<run_as_plan, std::string> agent::plan_user(const std::string& user) const {
  try {
    return plan_run_as(user, find_account(user), self_);
  } catch (const std::system_error& e) {
    return "cannot look up user '" + user + "': " + e.code().message();
  }
}

void agent::on_stop(const wire::stop& s) {
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

void agent::read_output(worker& w) {
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

void agent::take_output(worker& w, std::string_view data) {
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

void agent::write_log(worker& w, std::string_view bytes) {
  if (w.log_fd >= 0) [[maybe_unused]] auto n = ::write(w.log_fd, bytes.data(), bytes.size());
}

void agent::handle_line(worker& w, std::string line) {
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

} // namespace aryl::live::agent_detail
