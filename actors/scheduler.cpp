// The scheduler's decisions sent out (to servers and jobs), jobs' ends and records, and the
// journal's rows (`aryl serve --state`).
#include "actors/scheduler.hpp"

#include <algorithm>
#include <iterator>

#include <fmt/compile.h>
#include <fmt/format.h>

#include "actors/scheduler_parts.hpp"

namespace aryl {
namespace sched {

void append_number(std::string& out, int64_t x) {
  const fmt::format_int text(x);
  out.append(text.data(), text.size());
}

// Appended piece by piece: fmt writing a string argument through a back_inserter pushes it
// one character at a time, and every round's and every end's log line describes servers.
void describe_into(std::string& out, const scheduler_state& st, const allocation& a) {
  out += '[';
  for (size_t i = 0; i < a.size(); ++i) {
    if (i) out += ' ';
    out += st.ledger.servers[static_cast<size_t>(a[i].first)].name;
    out += ':';
    append_number(out, a[i].second);
  }
  out += ']';
}

std::string describe(const scheduler_state& st, const allocation& a) {
  std::string out;
  describe_into(out, st, a);
  return out;
}

std::string job_name(uint32_t id) { return fmt::format(FMT_COMPILE("job-{}"), id); }

void log(self_ptr self, sim_time now, std::string event, std::string detail, std::string why) {
  self->send(self->state.jenv->recorder, event_atom::value,
             event_record{now.us, "scheduler", std::move(event), std::move(detail), std::move(why)});
}

/// Tells the servers a decision's removals. All removals of a batch go out before any
/// placement, so a server never sees GPUs taken before they were given back.
void dispatch_removals(self_ptr self, const decision& d) {
  for (auto& [sid, w] : d.before) self->send(self->state.servers[static_cast<size_t>(sid)], remove_atom::value, d.job);
}

/// The job's record now; `outcome`: it ends now so, `why`.
job_record make_record(const scheduler_state& st, const job_entry& j, sim_time now, int last_workers,
                       std::optional<job_outcome> outcome = std::nullopt, const std::string& why = {});

/// "t0:4 t1:2": where a job's workers are, by server name.
std::string alloc_text(const scheduler_state& st, const allocation& a) {
  std::string out;
  for (auto& [sid, w] : a)
    out += fmt::format("{}{}:{}", out.empty() ? "" : " ", st.ledger.servers[static_cast<size_t>(sid)].name, w);
  return out;
}

/// `aryl serve --state`: the job's row as the ledger has it now (`ended`: its final record).
saved_job journal_row(self_ptr self, uint32_t job, sim_time now, const job_record* ended) {
  auto& st = self->state;
  auto& j = st.ledger.jobs[job];
  saved_job r;
  r.spec = st.jobs.specs[job];
  r.spec.submit = j.submit;
  r.status = ended                              ? saved_status::ended
             : j.status == job_status::running ? saved_status::running
                                               : saved_status::queued;
  r.generation = j.generation;
  r.workers = j.workers;
  r.alloc = alloc_text(st, j.alloc);
  r.retries = st.jobs.retries[job];
  r.record = ended ? *ended : make_record(st, j, now, j.workers);
  if (!ended && !j.started_once) r.record.first_start_us = -1;
  return r;
}

void journal_job(self_ptr self, uint32_t job, sim_time now, const job_record* ended) {
  auto& st = self->state;
  if (st.setup.journal) self->send(st.setup.journal, jjob_atom::value, journal_row(self, job, now, ended));
}

void journal_server(self_ptr self, int sid, server_mode mode) {
  auto& st = self->state;
  if (st.setup.journal)
    self->send(st.setup.journal, jserver_atom::value, st.ledger.servers[static_cast<size_t>(sid)].name,
               std::string(to_string(mode)));
}

/// The /metrics counters of decisions: every decision reaches its job through here.
void count_decision(run_counts& c, const decision& d) {
  switch (d.what) {
    case decision::kind::start: ++c.starts; break;
    case decision::kind::preempt: ++c.preemptions; break;
    case decision::kind::rescale: {
      int before = 0, after = 0;
      for (auto& [sid, w] : d.before) before += w;
      for (auto& [sid, w] : d.alloc) after += w;
      ++(after < before ? c.scale_ins : c.scale_outs);
      break;
    }
  }
}

void dispatch_assignment(self_ptr self, const decision& d, bool servers_told, bool ack) {
  auto& st = self->state;
  count_decision(st.metrics.counts, d);
  auto& j = st.ledger.jobs[d.job];
  job_assignment a;
  // Only a reclaim waits for acknowledgements: a later one of the same job satisfies it too,
  // so every assignment of a job a reclaim waits on asks for one.
  a.ack = ack || awaited(st, d.job);
  a.generation = j.generation;
  a.workers = j.workers;
  if (j.workers > 0) a.type_speed = st.ledger.params.type_speed.at(static_cast<size_t>(j.alloc_type));
  switch (d.what) {
    case decision::kind::start:
      a.overhead_s = j.preemptions > 0 ? st.ledger.params.restart_overhead_s : 0.0;
      break;
    case decision::kind::rescale: {
      int before_type = d.before.empty() ? j.alloc_type
                                         : st.ledger.servers[static_cast<size_t>(d.before.front().first)].gpu_type;
      a.overhead_s = before_type != j.alloc_type ? st.ledger.params.restart_overhead_s
                                                 : st.ledger.params.scale_overhead_s;
      break;
    }
    case decision::kind::preempt:
      break;
  }
  a.servers.reserve(j.alloc.size());
  a.server_workers.reserve(j.alloc.size());
  for (auto& [sid, w] : j.alloc) {
    a.servers.push_back(sid);
    a.server_workers.push_back(w);
  }
  // Starting or stopping workers behind a slow link takes its delay (a server given up for
  // lost is not waited for).
  auto now = st.jenv->tb.now(self);
  auto delay = [&](int sid) {
    auto& t = st.faults.truth[static_cast<size_t>(sid)];
    if (now < t.link_until && st.ledger.servers[static_cast<size_t>(sid)].mode != server_mode::down)
      a.link_delay_s = std::max(a.link_delay_s, t.delay_s);
  };
  for (int sid : a.servers) delay(sid);
  for (auto& [sid, w] : d.before) delay(sid);
  self->send(st.jobs.actors[d.job], assign_atom::value, std::move(a));
  if (!servers_told)
    for (auto& [sid, w] : d.alloc) self->send(st.servers[static_cast<size_t>(sid)], place_atom::value, d.job, w);
  // Workers sent to a machine that died unnoticed die with it (the assignment's servers).
  for (auto& [sid, w] : j.alloc)
    if (st.faults.truth[static_cast<size_t>(sid)].crashed) self->send(st.jobs.actors[d.job], crash_atom::value, sid);
  if (j.workers > 0) attempt_running(self, d.job, now);
  journal_job(self, d.job, now);
}

void dispatch(self_ptr self, const decision& d, bool ack) {
  dispatch_removals(self, d);
  dispatch_assignment(self, d, false, ack);
}


job_record make_record(const scheduler_state& st, const job_entry& j, sim_time now, int last_workers,
                       std::optional<job_outcome> outcome, const std::string& why) {
  job_record r;
  r.index = j.index;
  r.name = st.jobs.names[j.index];
  r.gpus = j.gpus;
  r.elastic = j.elastic;
  r.submit_us = j.submit.us;
  r.first_start_us = j.first_start.us;
  r.end_us = now.us;
  r.queued_s = j.queued_s;
  r.gpu_seconds = j.attained_gpu_s;
  r.preemptions = j.preemptions;
  r.scale_ins = j.scale_ins;
  r.scale_outs = j.scale_outs;
  r.duration_s = st.jobs.durations[j.index];
  r.predicted = !st.jobs.unpredicted[j.index];
  r.last_workers = last_workers;
  r.on_loaned_s = j.on_loaned_s;
  r.slowdown = r.duration_s > 0 ? (now - j.submit).seconds() * j.requested_rate / r.duration_s : 1.0;
  r.below_speed_s = j.below_speed_s;
  r.below_speed_gpu_s = j.below_speed_gpu_s;
  r.outcome = outcome.value_or(job_outcome::done);
  r.attempts = attempts_of(st, j.index, now, outcome, why);
  // Its duration at the requested size on its home type, on each of its GPUs.
  r.needed_gpu_s = j.requested_rate > 0 ? j.gpus * r.duration_s / j.requested_rate : 0.0;
  r.training_gpu_s = j.training_gpu_s;
  r.loaned_gpu_s = j.loaned_gpu_s;
  r.training_speed_gpu_s = j.training_speed_gpu_s;
  r.loaned_speed_gpu_s = j.loaned_speed_gpu_s;
  r.training_needed_gpu_s = j.training_needed_gpu_s;
  r.loaned_needed_gpu_s = j.loaned_needed_gpu_s;
  r.estimated = j.estimated;
  r.tenant = st.ledger.tenants[static_cast<size_t>(j.tenant)].name;
  return r;
}

std::string dump_state(const scheduler_state& st, sim_time now) {
  auto& l = st.ledger;
  std::string out = fmt::format("scheduler at t={:.6f}: {} queued, {} running, {} reclaims in flight\n",
                                now.seconds(), l.queued.size(), l.running.size(), st.loans.reclaims.size());
  int shown = 0;
  for (auto id : l.queued) {
    if (++shown > 20) break;
    auto& j = l.jobs[id];
    out += fmt::format("  queued job-{} gpus={} base={} type={} remaining={:.1f}\n", id, j.gpus,
                       st.setup.policy.elastic && j.elastic ? j.min_workers : j.gpus, j.gpu_type,
                       j.predicted_remaining());
  }
  for (auto id : l.running) {
    auto& j = l.jobs[id];
    out += fmt::format("  running job-{} workers={} {}\n", id, j.workers, describe(st, j.alloc));
  }
  for (auto& s : l.servers)
    out += fmt::format("  server {} mode={} free={}/{}\n", s.name, to_string(s.mode), s.free, s.gpus);
  return out;
}

/// An ended job's queue wait and JCT in the histograms of its tenant and outcome.
void count_end(scheduler_state& st, const job_entry& j, const job_record& r) {
  const auto& tenant = st.ledger.tenants[static_cast<size_t>(j.tenant)].name;
  const job_outcome outcome = r.outcome;
  auto it = std::find_if(st.metrics.ends.begin(), st.metrics.ends.end(),
                         [&](const end_histogram& h) { return h.tenant == tenant && h.outcome == outcome; });
  if (it == st.metrics.ends.end()) {
    st.metrics.ends.emplace_back();
    it = std::prev(st.metrics.ends.end());
    it->tenant = tenant;
    it->outcome = outcome;
  }
  it->add(r.queued_s, static_cast<double>(r.end_us - r.submit_us) / 1e6);
}

void count_outcome(scheduler_state& st, job_outcome outcome) {
  // /metrics and status count three outcomes: a job that timed out or lost its machine failed.
  if (outcome == job_outcome::cancelled || outcome == job_outcome::dependency_never_met) ++st.metrics.jobs_cancelled;
  else if (outcome != job_outcome::done) ++st.metrics.jobs_failed;
}

/// events.log's name of a job's end.
const char* end_event(job_outcome outcome) {
  switch (outcome) {
    case job_outcome::done: return "finish";
    case job_outcome::failed:
    case job_outcome::node_lost: return "fail";
    case job_outcome::timeout: return "timeout";
    case job_outcome::cancelled: return "cancel";
    case job_outcome::dependency_never_met: return "unmet";
  }
  return "?";
}

/// Ends an active job: frees its GPUs, stops its workers, records it. Done jobs have quit on
/// their own; any other is told to.
void end_job(self_ptr self, uint32_t job, job_outcome outcome, const std::string& why) {
  auto& st = self->state;
  auto now = st.jenv->tb.now(self);
  auto& j = st.ledger.jobs[job];
  auto before = j.alloc;
  int workers = j.workers;
  // What an ended job ran is what jobs without an estimate are expected to run (a live job
  // submitted without a duration: the work the scheduler saw it do).
  const bool done = outcome == job_outcome::done;
  if (done)
    st.jobs.history.add(j.tenant, st.jobs.durations[job] > 0 ? st.jobs.durations[job] : j.progress.done_at(now));
  if (!j.estimated) --st.jobs.unestimated_active;
  st.ledger.finish(job, now);
  ++st.metrics.jobs_finished;
  for (auto& [sid, w] : before) self->send(st.servers[static_cast<size_t>(sid)], remove_atom::value, job);
  count_outcome(st, outcome);
  event_record line{now.us, "scheduler", end_event(outcome), {}, why};
  line.detail.reserve(40);  // one allocation for "job-I workers=W"
  line.detail += "job-";
  append_number(line.detail, job);
  line.detail += " workers=";
  append_number(line.detail, workers);
  auto record = make_record(st, j, now, workers, outcome, why);
  count_end(st, j, record);
  journal_job(self, job, now, &record);
  // A reclaim this end completes is measured before the job's record reaches the recorder:
  // the run's last record closes the outputs, and a measure after it would be dropped.
  bool any = false;
  for (auto& rf : st.loans.reclaims) any |= rf.waiting.erase(job) > 0;
  if (any) complete_reclaims(self, now);
  if (!st.loans.quota_reclaims.empty()) quota_acked(self, job, UINT64_MAX, now);
  self->send(st.jenv->recorder, ended_atom::value, std::move(line), std::move(record));
  if (!done) self->send_exit(st.jobs.actors[job], caf::exit_reason::user_shutdown);
  st.jobs.actors[job] = nullptr;
  // The round at this instant sends the snapshot.
  const bool resize = st.setup.planner.rounds == scale_rounds::every ||
                      freed_may_resize(st.ledger, st.setup.policy, st.setup.planner, before);
  const bool waits = resize && plans_by_scope(st.setup.policy) && st.setup.planner.rounds != scale_rounds::every &&
                     st.setup.planner.end_scale_period_s > 0 && !st.ledger.queued.empty();
  if (waits) st.pacing.ends_waiting = true;
  mark_dirty(self, round_cause::end, resize && !waits ? replan::sizes : replan::none);
  after_end(self, job, outcome);
}

void on_finished(self_ptr self, uint32_t job) {
  // A job cancelled while its completion was on the way has ended already.
  auto& st = self->state;
  static const std::string done_why = "its work is done";  // made once: every job ends here
  if (job < st.jobs.actors.size() && st.jobs.actors[job]) end_job(self, job, job_outcome::done, done_why);
}

void on_drain(self_ptr self) {
  auto& st = self->state;
  if (st.drained) return;
  st.drained = true;
  std::vector<uint32_t> active(st.ledger.running.begin(), st.ledger.running.end());
  active.insert(active.end(), st.ledger.queued.begin(), st.ledger.queued.end());
  active.insert(active.end(), st.ledger.parked.begin(), st.ledger.parked.end());
  std::sort(active.begin(), active.end());
  for (auto id : active)
    if (st.jobs.actors[id]) end_job(self, id, job_outcome::cancelled, "the run was told to stop");
  self->send(st.jenv->recorder, close_atom::value);
}

} // namespace sched
} // namespace aryl
