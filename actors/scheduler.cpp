#include "actors/scheduler.hpp"

#include <algorithm>
#include <iterator>

#include <fmt/compile.h>
#include <fmt/format.h>

#include <cmath>

#include "actors/end_run_on_exception.hpp"
#include "actors/job.hpp"
#include "actors/scheduler_parts.hpp"
#include "solvers/reclaim.hpp"

namespace aryl {
namespace sched {

void describe_into(std::string& out, const scheduler_state& st, const allocation& a) {
  out += '[';
  for (size_t i = 0; i < a.size(); ++i) {
    if (i) out += ' ';
    fmt::format_to(std::back_inserter(out), FMT_COMPILE("{}:{}"), st.ledger.servers[static_cast<size_t>(a[i].first)].name,
                   a[i].second);
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
  self->send(self->state.jenv.recorder, event_atom::value,
             event_record{now.us, "scheduler", std::move(event), std::move(detail), std::move(why)});
}

cluster_snapshot snapshot_at(const scheduler_state& st, sim_time now) {
  auto& l = st.ledger;
  cluster_snapshot c;
  c.t_us = now.us;
  // From the ledger's running totals: a snapshot goes out every round.
  auto& t = l.totals();
  auto at = [](server_mode m) { return static_cast<size_t>(m); };
  c.training_busy_gpus = static_cast<int>(t.busy[at(server_mode::training)] + t.busy[at(server_mode::cordoned)]);
  c.training_gpus = static_cast<int>(t.gpus[at(server_mode::training)] + t.gpus[at(server_mode::down)] +
                                     t.gpus[at(server_mode::cordoned)]);
  c.loaned_busy_gpus = static_cast<int>(t.busy[at(server_mode::loaned)]);
  c.loaned_servers = t.servers[at(server_mode::loaned)];
  c.serving_servers = t.servers[at(server_mode::serving)];
  c.reclaiming_servers = t.servers[at(server_mode::reclaiming)];
  c.serving_gpus = static_cast<int>(t.gpus[at(server_mode::serving)] + t.gpus[at(server_mode::reclaiming)]);
  c.inference_gpus = static_cast<int>(t.inference_gpus);
  c.queued_jobs = static_cast<int>(l.queued.size());
  c.running_jobs = static_cast<int>(l.running.size());
  return c;
}

void send_snapshot(self_ptr self, sim_time now) {
  self->send(self->state.jenv.recorder, snapshot_atom::value, snapshot_at(self->state, now));
}

void mark_dirty(self_ptr self, round_cause why, replan what) {
  auto& st = self->state;
  if (what == replan::sizes && st.wanted != replan::sizes) st.sizes_by = why;
  st.wanted = std::max(st.wanted, what);
  if (st.round_pending) return;
  st.round_by = why;
  st.round_pending = true;
  st.round_asked = std::chrono::steady_clock::now();
  // Through the clock even at zero delay: the round runs after every message and timer of
  // this instant, so one round sees all of them.
  self->delayed_send(self, caf::timespan{0}, round_atom::value);
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
  r.spec = st.specs[job];
  r.spec.submit = j.submit;
  r.status = ended ? "ended" : j.status == job_status::running ? "running" : "queued";
  r.generation = j.generation;
  r.workers = j.workers;
  r.alloc = alloc_text(st, j.alloc);
  r.retries = st.retries[job];
  r.record = ended ? *ended : make_record(st, j, now, j.workers);
  if (!ended && !j.started_once) r.record.first_start_us = -1;
  return r;
}

void journal_job(self_ptr self, uint32_t job, sim_time now, const job_record* ended) {
  auto& st = self->state;
  if (st.setup.journal) self->send(st.setup.journal, jjob_atom::value, journal_row(self, job, now, ended));
}

void journal_server(self_ptr self, int sid, const char* mode) {
  auto& st = self->state;
  if (st.setup.journal)
    self->send(st.setup.journal, jserver_atom::value, st.ledger.servers[static_cast<size_t>(sid)].name,
               std::string(mode));
}

/// Whether a reclaim in flight waits for the job's acknowledgement.
bool awaited(const scheduler_state& st, uint32_t job) {
  for (auto& rf : st.reclaims)
    if (rf.waiting.count(job)) return true;
  return false;
}

/// Tells the job its new assignment and (unless a round's batch told them already) the
/// servers its new workers.
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

void dispatch_assignment(self_ptr self, const decision& d, bool servers_told = false, bool ack = false) {
  auto& st = self->state;
  count_decision(st.counts, d);
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
  for (auto& [sid, w] : j.alloc) {
    a.servers.push_back(sid);
    a.server_workers.push_back(w);
  }
  // Starting or stopping workers behind a slow link takes its delay (a server given up for
  // lost is not waited for).
  auto now = st.jenv.tb.now(self);
  auto delay = [&](int sid) {
    auto& t = st.truth[static_cast<size_t>(sid)];
    if (now < t.link_until && st.ledger.servers[static_cast<size_t>(sid)].mode != server_mode::down)
      a.link_delay_s = std::max(a.link_delay_s, t.delay_s);
  };
  for (int sid : a.servers) delay(sid);
  for (auto& [sid, w] : d.before) delay(sid);
  self->send(st.jobs[d.job], assign_atom::value, a);
  if (!servers_told)
    for (auto& [sid, w] : d.alloc) self->send(st.servers[static_cast<size_t>(sid)], place_atom::value, d.job, w);
  // Workers sent to a machine that died unnoticed die with it.
  for (int sid : a.servers)
    if (st.truth[static_cast<size_t>(sid)].crashed) self->send(st.jobs[d.job], crash_atom::value, sid);
  if (j.workers > 0) attempt_running(self, d.job, now);
  journal_job(self, d.job, now);
}

void dispatch(self_ptr self, const decision& d, bool ack) {
  dispatch_removals(self, d);
  dispatch_assignment(self, d, false, ack);
}

const char* kind_name(decision::kind k) {
  switch (k) {
    case decision::kind::start: return "start";
    case decision::kind::preempt: return "preempt";
    case decision::kind::rescale: return "rescale";
  }
  return "?";
}

void run_round(self_ptr self) {
  auto& st = self->state;
  st.round_pending = false;
  auto now = st.jenv.tb.now(self);
  // Sizes are re-planned at most every scale period, and (scale_rounds=capacity) only when
  // something asked for it; a round in between only starts queued jobs (shrinking extras
  // where it must), and a timer brings the next full round.
  // (Compared in whole microseconds, as the timer fires: it always finds its round due.)
  // Ends under a queue that asked for sizes (and nothing else did) wait longer: their GPUs go
  // to queued jobs in the rounds in between.
  const bool on_capacity = st.setup.planner.rounds != scale_rounds::every;
  const bool sizes = !on_capacity || st.wanted == replan::sizes;
  const bool ends = on_capacity && st.ends_waiting;
  const double period = st.setup.planner.scale_period_s;
  const sim_time due = st.last_scale_round +
                       sim_time::from_seconds(sizes ? period : std::max(period, st.setup.planner.end_scale_period_s));
  const bool full = (sizes || ends) && now >= due;
  const round_scope scope = full                                         ? round_scope::full
                            : on_capacity && st.wanted == replan::starts ? round_scope::starts
                                                                         : round_scope::local;
  // A full round's cause: what asked for its sizes; else (only ends waited, or every round
  // is full) what asked for this round.
  const round_cause cause = st.wanted == replan::sizes ? st.sizes_by : ends ? round_cause::end : st.round_by;
  if (full) {
    st.last_scale_round = now;
    st.wanted = replan::none;
    st.ends_waiting = false;
  } else if ((sizes || ends) && !st.scale_timer) {
    st.scale_timer = true;
    self->delayed_send(self, st.jenv.tb.span(due - now), scale_due_atom::value);
  }
  if (scope == round_scope::starts) st.wanted = replan::none;
  if (st.unestimated_active > 0)
    refresh_estimates(st.ledger, st.history, st.setup.planner.unestimated_prior_s, now);
  auto decisions = plan_round(st.ledger, st.setup.policy, st.setup.planner, now, st.round, scope);
  // One message per server changed (its removals, then its placements) and one to the
  // recorder: a round that rescales many jobs is most of its messages otherwise. Servers
  // hear before any job does, so a removal never reaches a server after the new launch.
  auto& batch = st.round_batch;
  auto touch = [&](int sid) -> scheduler_state::server_changes& {
    auto& c = batch[static_cast<size_t>(sid)];
    if (c.removed.empty() && c.placed.empty()) st.round_servers.push_back(sid);
    return c;
  };
  batch.resize(st.servers.size());
  for (auto& d : decisions)
    for (auto& [sid, w] : d.before) touch(sid).removed.push_back(d.job);
  for (auto& d : decisions)
    for (auto& [sid, w] : d.alloc) {
      auto& c = touch(sid);
      c.placed.push_back(d.job);
      c.gpus.push_back(w);
    }
  for (int sid : st.round_servers) {
    auto& c = batch[static_cast<size_t>(sid)];
    self->send(st.servers[static_cast<size_t>(sid)], changes_atom::value, std::move(c.removed),
               std::move(c.placed), std::move(c.gpus));
    c = {};
  }
  st.round_servers.clear();
  if (st.ledger.params.quotas) track_quota_reclaims(self, decisions, now);
  if (st.ledger.params.quotas || st.ledger.params.fair_share) {
    settle_tenant_usage(st.ledger, st.setup.policy, now);
    if (st.setup.journal) {
      std::vector<saved_tenant> usage;
      for (auto& t : st.ledger.tenants) usage.push_back({t.name, t.usage_gpu_s, t.usage_at.us});
      self->send(st.setup.journal, jtenants_atom::value, std::move(usage));
    }
  }
  std::vector<event_record> lines;
  lines.reserve(decisions.size());
  for (auto& d : decisions) {
    dispatch_assignment(self, d, true, !st.quota_reclaims.empty() && quota_victim(st, d.job));
    auto& j = st.ledger.jobs[d.job];
    std::string detail = fmt::format(FMT_COMPILE("job-{} workers={}"), d.job, j.workers);
    if (!d.alloc.empty()) {
      fmt::format_to(std::back_inserter(detail), FMT_COMPILE(" {} "), st.setup.type_names[static_cast<size_t>(j.alloc_type)]);
      describe_into(detail, st, d.alloc);
    }
    lines.push_back({now.us, "scheduler", kind_name(d.what), std::move(detail), std::move(d.why)});
  }
  self->send(st.jenv.recorder, roundlog_atom::value, std::move(lines), snapshot_at(st, now),
             static_cast<int32_t>(scope), static_cast<int32_t>(cause));
  note_drained(self, now);
  st.rounds.add(std::chrono::duration<double>(std::chrono::steady_clock::now() - st.round_asked).count());
}

job_record make_record(const scheduler_state& st, const job_entry& j, sim_time now, int last_workers,
                       std::optional<job_outcome> outcome, const std::string& why) {
  job_record r;
  r.index = j.index;
  r.name = st.names[j.index];
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
  r.duration_s = st.durations[j.index];
  r.predicted = !st.unpredicted[j.index];
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

/// Chooses servers for the reclaim backlog and starts the negotiation with the jobs on them.
void start_reclaim(self_ptr self, sim_time now) {
  auto& st = self->state;
  auto& l = st.ledger;
  reclaim_input in;
  for (auto& s : l.servers)
    if (s.mode == server_mode::loaned) in.loaned.push_back({s.id, s.gpus});
  in.count = std::min<int>(st.reclaim_backlog, static_cast<int>(in.loaned.size()));
  if (in.count == 0) return;
  std::set<uint32_t> affected;
  for (auto& s : in.loaned)
    for (auto id : l.servers[static_cast<size_t>(s.id)].jobs) affected.insert(id);
  for (auto id : affected) {
    auto& j = l.jobs[id];
    bool can_shrink = st.setup.policy.elastic && j.elastic;
    in.jobs.push_back({static_cast<int>(id), can_shrink ? j.min_workers : j.workers, 1, j.alloc});
  }
  auto res = st.setup.reclaim_method == "exact" ? reclaim_exact(in) : reclaim_greedy(in);
  st.reclaim_backlog -= in.count;

  scheduler_state::reclaim_in_flight rf;
  rf.servers = res.returned;
  rf.started = now;
  rf.deadline = st.reclaim_deadline;
  std::set<int> returned(res.returned.begin(), res.returned.end());
  for (int sid : res.returned) {
    l.set_mode(sid, server_mode::reclaiming);
    journal_server(self, sid, "reclaiming");
  }
  for (int id : res.preempted) {
    auto job = static_cast<uint32_t>(id);
    auto before = l.jobs[job].alloc;
    l.preempt(job, now);
    decision d{decision::kind::preempt, job, {}, before, -1, "its loaned server is reclaimed"};
    dispatch(self, d, true);
    log(self, now, "preempt", fmt::format("{} {}", job_name(job), describe(st, before)), d.why);
    rf.waiting[job] = l.jobs[job].generation;
  }
  for (auto& [id, lost] : res.scaled_in) {
    auto job = static_cast<uint32_t>(id);
    auto before = l.jobs[job].alloc;
    allocation after;
    for (auto& p : before)
      if (!returned.count(p.first)) after.push_back(p);
    l.rescale(job, after, now);
    decision d{decision::kind::rescale, job, after, before, l.jobs[job].alloc_type,
               fmt::format("scale in by {}: its loaned server is reclaimed", lost)};
    dispatch(self, d, true);
    log(self, now, "rescale",
        fmt::format(FMT_COMPILE("job-{} workers={} {}"), job, l.jobs[job].workers, describe(st, after)), d.why);
    rf.waiting[job] = l.jobs[job].generation;
  }
  std::string names;
  for (int sid : res.returned) names += (names.empty() ? "" : ",") + l.servers[static_cast<size_t>(sid)].name;
  log(self, now, "reclaim", fmt::format("servers={} preempted={} scaled_in={}", names, res.preempted.size(),
                                        res.scaled_in.size()),
      "inference demand rose; least preemption cost first");
  st.reclaims.push_back(std::move(rf));
}

/// Hands back every reclaim whose jobs have all acknowledged, in request order.
void complete_reclaims(self_ptr self, sim_time now) {
  auto& st = self->state;
  while (!st.reclaims.empty() && st.reclaims.front().waiting.empty()) {
    auto rf = std::move(st.reclaims.front());
    st.reclaims.pop_front();
    for (int sid : rf.servers) {
      st.ledger.set_mode(sid, server_mode::serving);
      journal_server(self, sid, "serving");
      self->send(st.servers[static_cast<size_t>(sid)], mode_atom::value, static_cast<int>(server_mode::serving));
    }
    log(self, now, "return", fmt::format("servers={}", rf.servers.size()), "every affected job acknowledged");
    st.reclaim_latency_s.push_back((now - rf.started).seconds());
    self->send(st.jenv.recorder, rdone_atom::value, (now - rf.started).seconds(),
               std::max(0.0, (now - rf.deadline).seconds()));
    if (auto inference = caf::actor_cast<inference_actor>(st.inference))
      self->send(inference, returned_atom::value, rf.servers);
    send_snapshot(self, now);
  }
}

std::string dump_state(const scheduler_state& st, sim_time now) {
  auto& l = st.ledger;
  std::string out = fmt::format("scheduler at t={:.6f}: {} queued, {} running, {} reclaims in flight\n",
                                now.seconds(), l.queued.size(), l.running.size(), st.reclaims.size());
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
    out += fmt::format("  server {} mode={} free={}/{}\n", s.name, static_cast<int>(s.mode), s.free, s.gpus);
  return out;
}

/// An ended job's queue wait and JCT in the histograms of its tenant and outcome.
void count_end(scheduler_state& st, const job_entry& j, const job_record& r) {
  const auto& tenant = st.ledger.tenants[static_cast<size_t>(j.tenant)].name;
  const std::string outcome(to_string(r.outcome));
  auto it = std::find_if(st.ends.begin(), st.ends.end(),
                         [&](const end_histogram& h) { return h.tenant == tenant && h.outcome == outcome; });
  if (it == st.ends.end()) {
    st.ends.emplace_back();
    it = std::prev(st.ends.end());
    it->tenant = tenant;
    it->outcome = outcome;
  }
  it->add(r.queued_s, static_cast<double>(r.end_us - r.submit_us) / 1e6);
}

void count_outcome(scheduler_state& st, job_outcome outcome) {
  // /metrics and status count three outcomes: a job that timed out or lost its machine failed.
  if (outcome == job_outcome::cancelled || outcome == job_outcome::dependency_never_met) ++st.jobs_cancelled;
  else if (outcome != job_outcome::done) ++st.jobs_failed;
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
  auto now = st.jenv.tb.now(self);
  auto& j = st.ledger.jobs[job];
  auto before = j.alloc;
  int workers = j.workers;
  // What an ended job ran is what jobs without an estimate are expected to run (a live job
  // submitted without a duration: the work the scheduler saw it do).
  const bool done = outcome == job_outcome::done;
  if (done)
    st.history.add(j.tenant, st.durations[job] > 0 ? st.durations[job] : j.progress.done_at(now));
  if (!j.estimated) --st.unestimated_active;
  st.ledger.finish(job, now);
  ++st.jobs_finished;
  for (auto& [sid, w] : before) self->send(st.servers[static_cast<size_t>(sid)], remove_atom::value, job);
  count_outcome(st, outcome);
  event_record line{now.us, "scheduler", end_event(outcome), fmt::format(FMT_COMPILE("job-{} workers={}"), job, workers),
                    why};
  auto record = make_record(st, j, now, workers, outcome, why);
  count_end(st, j, record);
  journal_job(self, job, now, &record);
  // A reclaim this end completes is measured before the job's record reaches the recorder:
  // the run's last record closes the outputs, and a measure after it would be dropped.
  bool any = false;
  for (auto& rf : st.reclaims) any |= rf.waiting.erase(job) > 0;
  if (any) complete_reclaims(self, now);
  if (!st.quota_reclaims.empty()) quota_acked(self, job, UINT64_MAX, now);
  self->send(st.jenv.recorder, ended_atom::value, std::move(line), std::move(record));
  if (!done) self->send_exit(st.jobs[job], caf::exit_reason::user_shutdown);
  st.jobs[job] = nullptr;
  // The round at this instant sends the snapshot.
  const bool resize = st.setup.planner.rounds == scale_rounds::every ||
                      freed_may_resize(st.ledger, st.setup.policy, st.setup.planner, before);
  const bool waits = resize && plans_by_scope(st.setup.policy) && st.setup.planner.rounds != scale_rounds::every &&
                     st.setup.planner.end_scale_period_s > 0 && !st.ledger.queued.empty();
  if (waits) st.ends_waiting = true;
  mark_dirty(self, round_cause::end, resize && !waits ? replan::sizes : replan::none);
  after_end(self, job, outcome);
}

} // namespace sched

using namespace sched;

scheduler_actor::behavior_type scheduler_behavior(scheduler_actor::stateful_pointer<scheduler_state> self,
                                                  scheduler_setup setup, std::vector<server_actor> servers,
                                                  recorder_actor recorder, timebase tb, throughput_model model) {
  end_run_on_exception(self, recorder);
  auto& st = self->state;
  st.ledger.params = setup.params;
  st.ledger.servers = setup.servers;
  if (!setup.tenants.empty()) st.ledger.tenants = setup.tenants;
  st.setup = std::move(setup);
  st.servers = std::move(servers);
  st.next_index = st.setup.first_free_index;
  // The jobs known before the start (a trace's) take these indices: growing the per-job
  // vectors one submit at a time would copy them, and fault in their pages, again and again.
  size_t known = st.setup.first_free_index;
  st.ledger.jobs.reserve(known);
  st.jobs.reserve(known);
  st.names.reserve(known);
  st.durations.reserve(known);
  st.unpredicted.reserve(known);
  st.retries.reserve(known);
  st.attempts.reserve(known);
  st.truth.assign(st.ledger.servers.size(), {});
  st.holds.assign(st.ledger.servers.size(), {});
  auto directory = st.setup.directory ? st.setup.directory : std::make_shared<server_directory>(st.servers);
  st.jenv = job_env{tb, std::move(model), self->address(), recorder,
                    st.setup.check_invariants, st.setup.workers,
                    std::move(directory), st.setup.checkpoints,
                    st.setup.journal};
  restore_holds(self);
  auto submit = [=](job_spec& spec) {
    auto& st = self->state;
    if (st.drained) {
      log(self, st.jenv.tb.now(self), "refuse", fmt::format("{} name={}", job_name(spec.index), spec.name),
          "the run is stopping");
      return;
    }
    auto index = spec.index;
    auto now = st.jenv.tb.now(self);
    accept_job(self, spec, now);
    journal_job(self, index, now);
    settle_never(self, index);
  };
  return {
      [=](submit_atom, job_spec& spec) -> caf::result<void> {
        if (self->state.away) return caf::skip;
        submit(spec);
        return caf::unit;
      },
      [=](submit_atom, std::vector<job_spec>& specs) -> caf::result<void> {
        if (self->state.away) return caf::skip;
        for (auto& spec : specs) submit(spec);
        return caf::unit;
      },
      [=](admit_atom, job_spec& spec) -> caf::result<int64_t> {
        if (self->state.away) return caf::skip;
        if (self->state.drained) return int64_t{-1};
        return admit_job(self, spec);
      },
      [=](cancel_atom, uint32_t job) -> caf::result<std::string> {
        if (self->state.away) return caf::skip;
        return cancel_job(self, job);
      },
      [=](jobctl_atom, const job_order& o) -> caf::result<node_answer> {
        if (self->state.away) return caf::skip;
        return on_job_order(self, o);
      },
      [=](vet_atom, const job_spec& spec) -> caf::result<std::string> {
        if (self->state.away) return caf::skip;
        return vet_spec(self->state, spec);
      },
      [=](drain_atom) -> caf::result<void> {
        if (self->state.away) return caf::skip;
        auto& st = self->state;
        if (st.drained) return caf::unit;
        st.drained = true;
        std::vector<uint32_t> active(st.ledger.running.begin(), st.ledger.running.end());
        active.insert(active.end(), st.ledger.queued.begin(), st.ledger.queued.end());
        active.insert(active.end(), st.ledger.parked.begin(), st.ledger.parked.end());
        std::sort(active.begin(), active.end());
        for (auto id : active)
          if (st.jobs[id]) end_job(self, id, job_outcome::cancelled, "the run was told to stop");
        self->send(st.jenv.recorder, close_atom::value);
        return caf::unit;
      },
      [=](ack_atom, const job_ack& a) -> caf::result<void> {
        if (self->state.away) return caf::skip;
        auto& st = self->state;
        bool any = false;
        for (auto& rf : st.reclaims) {
          auto w = rf.waiting.find(a.job);
          if (w != rf.waiting.end() && a.generation >= w->second) {
            rf.waiting.erase(w);
            any = true;
          }
        }
        if (any) complete_reclaims(self, st.jenv.tb.now(self));
        if (!st.quota_reclaims.empty()) quota_acked(self, a.job, a.generation, st.jenv.tb.now(self));
        return caf::unit;
      },
      [=](finished_atom, uint32_t job, uint64_t) -> caf::result<void> {
        if (self->state.away) return caf::skip;
        // A job cancelled while its completion was on the way has ended already.
        if (job < self->state.jobs.size() && self->state.jobs[job]) end_job(self, job, job_outcome::done, "its work is done");
        return caf::unit;
      },
      [=](round_atom) -> caf::result<void> {
        if (self->state.away) return caf::skip;
        run_round(self);
        return caf::unit;
      },
      [=](scale_due_atom) -> caf::result<void> {
        auto& st = self->state;
        if (st.away) return caf::skip;
        st.scale_timer = false;
        // Only ends were waiting: the round decides whether their period is up (a full round
        // may have come between, for something else).
        const bool ends_only = st.setup.planner.rounds != scale_rounds::every && st.wanted != replan::sizes;
        if (ends_only && !st.ends_waiting) return caf::unit;
        mark_dirty(self, round_cause::timer, ends_only ? replan::none : replan::sizes);
        return caf::unit;
      },
      [=](loan_atom, const std::vector<int>& ids) -> caf::result<void> {
        if (self->state.away) return caf::skip;
        auto& st = self->state;
        auto now = st.jenv.tb.now(self);
        st.inference = caf::actor_cast<caf::actor_addr>(self->current_sender());
        st.counts.loans += ids.size();
        for (int sid : ids) {
          st.ledger.set_mode(sid, server_mode::loaned);
          journal_server(self, sid, "loaned");
          self->send(st.servers[static_cast<size_t>(sid)], mode_atom::value, static_cast<int>(server_mode::loaned));
        }
        log(self, now, "loan", fmt::format("servers={}", ids.size()), "inference demand fell below serving capacity");
        mark_dirty(self, round_cause::loan);
        return caf::unit;
      },
      [=](reclaim_atom, int count, int64_t deadline_us) -> caf::result<void> {
        if (self->state.away) return caf::skip;
        auto& st = self->state;
        auto now = st.jenv.tb.now(self);
        st.inference = caf::actor_cast<caf::actor_addr>(self->current_sender());
        st.reclaim_backlog += count;
        st.reclaim_deadline = sim_time::from_us(deadline_us);
        start_reclaim(self, now);
        complete_reclaims(self, now);
        mark_dirty(self, round_cause::reclaim);
        return caf::unit;
      },
      [=](crash_atom, int server, int64_t down_us) { on_crash(self, server, down_us); },
      [=](linkfault_atom, const link_fault& f) { on_linkfault(self, f); },
      [=](lost_atom, int server) -> caf::result<void> {
        if (self->state.away) return caf::skip;
        on_lost(self, server);
        return caf::unit;
      },
      [=](back_atom, int server) -> caf::result<void> {
        if (self->state.away) return caf::skip;
        on_back(self, server);
        return caf::unit;
      },
      [=](infer_atom, const caf::actor_addr& inference) { self->state.inference = inference; },
      [=](away_atom, int64_t down_us) {
        // Crashed: what it is sent waits in its mailbox (the handlers above skip it), as it
        // would wait for a restarted scheduler; the world's faults still strike. A second
        // crash while away is ignored.
        auto& st = self->state;
        if (st.away) return;
        st.away = true;
        log(self, st.jenv.tb.now(self), "away", fmt::format("for={:.0f}", sim_time::from_us(down_us).seconds()),
            "the scheduler crashed; it decides nothing until it is back");
        self->delayed_send(self, st.jenv.tb.span(sim_time::from_us(down_us)), awake_atom::value);
      },
      [=](awake_atom) {
        // Back: the messages held meanwhile are offered again, in the order they came.
        auto& st = self->state;
        st.away = false;
        log(self, st.jenv.tb.now(self), "awake", "", "the scheduler is back");
        mark_dirty(self, round_cause::cluster);
      },
      [=](ckfault_atom, uint32_t job, const checkpoint_fault& f) {
        auto& st = self->state;
        if (job < st.jobs.size() && st.jobs[job]) self->send(st.jobs[job], ckfault_atom::value, f);
      },
      [=](wcrash_atom, uint32_t job) {
        auto& st = self->state;
        if (job < st.jobs.size() && st.jobs[job] && st.ledger.jobs[job].workers > 0)
          self->send(st.jobs[job], crash_atom::value, -1);
      },
      [=](wfail_atom, uint32_t job) -> caf::result<void> {
        if (self->state.away) return caf::skip;
        auto& st = self->state;
        if (job >= st.jobs.size() || !st.jobs[job] || st.ledger.jobs[job].workers == 0) return caf::unit;
        auto failure = st.attempts[job].failure;
        recover_job(self, job, -1, st.jenv.tb.now(self), failure.empty() ? "a worker process died" : failure);
        mark_dirty(self, round_cause::cluster);
        return caf::unit;
      },
      [=](exits_atom, uint32_t job, const std::vector<worker_exit>& exits) -> caf::result<void> {
        if (self->state.away) return caf::skip;
        on_exits(self, job, exits);
        return caf::unit;
      },
      [=](limit_atom, uint32_t job) -> caf::result<void> {
        if (self->state.away) return caf::skip;
        on_time_limit(self, job);
        return caf::unit;
      },
      [=](restore_atom, std::vector<saved_job>& rows) -> caf::result<int> {
        if (self->state.away) return caf::skip;
        for (auto& row : rows) restore_job(self, row);
        for (auto& row : rows) settle_never(self, row.spec.index);
        return static_cast<int>(rows.size());
      },
      [=](dump_atom) -> caf::result<std::string> {
        if (self->state.away) return caf::skip;
        return dump_state(self->state, self->state.jenv.tb.now(self));
      },
      [=](status_atom) -> caf::result<cluster_status> {
        if (self->state.away) return caf::skip;
        return status_of(self->state, self->state.jenv.tb.now(self));
      },
      [=](node_atom, const node_order& o) -> caf::result<node_answer> {
        if (self->state.away) return caf::skip;
        return on_node_order(self, o);
      },
      [=](join_atom, const node_join& m, server_actor& actor) -> caf::result<join_answer> {
        if (self->state.away) return caf::skip;
        return on_join(self, m, std::move(actor));
      },
  };
}

} // namespace aryl
