// The scheduler's time limits and attempts (docs/live.md, "Time limits and outcomes"): a job's
// limit counts the seconds it held workers in its current attempt, in the scheduler's time, so
// that a limit ends a job at the same instant in a simulation and a live run.
#include <fmt/format.h>

#include <algorithm>

#include "actors/scheduler_parts.hpp"

namespace aryl::sched {
namespace {

/// Seconds the job has held workers since its first start: its time since submission less
/// every wait in the queue (the first one and those after preemptions).
double held_s(const job_entry& j, sim_time now) {
  return j.started_once ? std::max(0.0, (now - j.submit).seconds() - j.waited_s(now)) : 0.0;
}

void arm_limit(self_ptr self, uint32_t job, sim_time now) {
  auto& st = self->state;
  auto& a = st.jobs.attempts[job];
  if (a.time_limit_s <= 0 || a.limit_timer) return;
  double left = a.time_limit_s - (held_s(st.ledger.jobs[job], now) - a.base_held_s);
  a.limit_timer = true;
  self->delayed_send(self, st.jenv->tb.span(sim_time::from_seconds(std::max(0.0, left))), limit_atom::value, job);
}

} // namespace

void attempt_running(self_ptr self, uint32_t job, sim_time now) {
  auto& a = self->state.jobs.attempts[job];
  if (a.start_us < 0) a.start_us = now.us;
  arm_limit(self, job, now);
}

void on_time_limit(self_ptr self, uint32_t job) {
  auto& st = self->state;
  if (job >= st.jobs.actors.size() || !st.jobs.actors[job]) return;
  auto& a = st.jobs.attempts[job];
  a.limit_timer = false;
  auto& j = st.ledger.jobs[job];
  if (j.status != job_status::running) return;  // queued again: its next start arms the check
  auto now = st.jenv->tb.now(self);
  // Within a microsecond: the timer's delay was rounded to one.
  if (held_s(j, now) - a.base_held_s + 1e-6 < a.time_limit_s) return arm_limit(self, job, now);
  end_job(self, job, job_outcome::timeout, fmt::format("it held workers for its time limit of {:g} s", a.time_limit_s));
}

void on_exits(self_ptr self, uint32_t job, const std::vector<worker_exit>& exits) {
  auto& st = self->state;
  // A job requeued meanwhile (its machine lost) has closed that attempt already.
  if (job >= st.jobs.actors.size() || !st.jobs.actors[job] || st.ledger.jobs[job].workers == 0) return;
  auto sorted = exits;
  std::sort(sorted.begin(), sorted.end(), [](auto& x, auto& y) { return x.rank < y.rank; });
  auto& a = st.jobs.attempts[job];
  a.exits.clear();
  for (auto& e : sorted)
    a.exits += fmt::format("{}{}:{}", a.exits.empty() ? "" : " ", e.rank,
                           e.signal != 0 ? fmt::format("sig{}", e.signal) : std::to_string(e.code));
  // The worker whose end failed the launch is the last to exit (the job reports at once).
  if (exits.empty()) return;
  auto& e = exits.back();
  a.failure = !e.reason.empty() ? fmt::format("rank {} could not start: {}", e.rank, e.reason)
              : e.signal != 0   ? fmt::format("rank {} was killed by signal {}", e.rank, e.signal)
              : e.code != 0     ? fmt::format("rank {} exited with code {}", e.rank, e.code)
                                : std::string{};
}

int retries_allowed(const scheduler_state& st, uint32_t job) {
  int own = st.jobs.attempts[job].max_retries;
  return own >= 0 ? own : st.setup.max_retries;
}

void end_attempt(self_ptr self, uint32_t job, sim_time now, job_outcome how, const std::string& why) {
  auto& st = self->state;
  auto& a = st.jobs.attempts[job];
  a.ended.push_back({a.start_us, now.us, how, std::exchange(a.exits, {}), why});
  a.failure.clear();
  a.start_us = -1;
  a.base_held_s = held_s(st.ledger.jobs[job], now);
}

std::vector<attempt_record> attempts_of(const scheduler_state& st, uint32_t job, sim_time now,
                                        std::optional<job_outcome> how, const std::string& why) {
  auto& a = st.jobs.attempts[job];
  auto out = a.ended;
  if (how) out.push_back({a.start_us, now.us, *how, a.exits, why});
  return out;
}

} // namespace aryl::sched
