// The pacing of rounds (docs/round.md): a round at most once per instant, after every message
// of that instant; full rounds, which re-plan elastic sizes, at most every scale period and
// only when something asked for them; and a round's decisions sent out, one message per server.
#include <algorithm>
#include <cmath>

#include "actors/scheduler_parts.hpp"

namespace aryl::sched {
namespace {

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

} // namespace

void send_snapshot(self_ptr self, sim_time now) {
  self->send(self->state.jenv->recorder, snapshot_atom::value, snapshot_at(self->state, now));
}

void mark_dirty(self_ptr self, round_cause why, replan what) {
  auto& st = self->state;
  if (what == replan::sizes && st.pacing.wanted != replan::sizes) st.pacing.sizes_by = why;
  st.pacing.wanted = std::max(st.pacing.wanted, what);
  if (st.pacing.pending) return;
  st.pacing.round_by = why;
  st.pacing.pending = true;
  st.pacing.asked = std::chrono::steady_clock::now();
  // Through the clock even at zero delay: the round runs after every message and timer of
  // this instant, so one round sees all of them.
  self->delayed_send(self, caf::timespan{0}, round_atom::value);
}

namespace {

const char* kind_name(decision::kind k) {
  switch (k) {
    case decision::kind::start: return "start";
    case decision::kind::preempt: return "preempt";
    case decision::kind::rescale: return "rescale";
  }
  return "?";
}

/// The scale budget (docs/round.md, "Scale budget"): the bucket refilled to `now`, and when it
/// will hold what a full round valuing `jobs` running elastic jobs takes (`now` if it does;
/// all of it when it is smaller). In simulated time only, so runs stay reproducible.
sim_time budget_due(round_pacing& p, const planner_options& o, sim_time now, size_t jobs) {
  const double rate = o.scale_budget_per_s, burst = o.scale_budget_burst;
  if (rate <= 0) return now;
  if (!p.budget_started) {
    p.budget_started = true;
    p.budget_tokens = burst;
  } else {
    p.budget_tokens = std::min(burst, p.budget_tokens + rate * (now - p.budget_at).seconds());
  }
  p.budget_at = now;
  const double need = std::min(static_cast<double>(jobs), burst) - p.budget_tokens;
  // A hair of slack: the refill at the timer's whole microsecond must find the round paid.
  if (need <= 1e-6) return now;
  // Capped as the periods are: a tiny rate must not overflow the clock.
  return now + sim_time::from_us(static_cast<int64_t>(std::ceil(std::min(need / rate, 1e9) * 1e6)));
}

/// Sizes are re-planned at most every scale period, and (scale_rounds=capacity) only when
/// something asked for it; a round in between only starts queued jobs (shrinking extras
/// where it must), and a timer brings the next full round.
/// (Compared in whole microseconds, as the timer fires: it always finds its round due.)
/// Ends under a queue that asked for sizes (and nothing else did) wait longer: their GPUs go
/// to queued jobs in the rounds in between.
round_kind pace_round(self_ptr self, sim_time now) {
  auto& st = self->state;
  auto& p = st.pacing;
  const bool on_capacity = st.setup.planner.rounds != scale_rounds::every;
  const bool sizes = !on_capacity || p.wanted == replan::sizes;
  const bool ends = on_capacity && p.ends_waiting;
  const double period = st.setup.planner.scale_period_s;
  sim_time due = p.last_scale_round +
                 sim_time::from_seconds(sizes ? period : std::max(period, st.setup.planner.end_scale_period_s));
  // Only a policy that sizes elastic jobs values them; others' full rounds cost no valuation.
  const size_t valued = st.setup.policy.elastic ? st.ledger.running_elastic.size() : 0;
  if ((sizes || ends) && now >= due) due = budget_due(p, st.setup.planner, now, valued);
  const bool full = (sizes || ends) && now >= due;
  const round_scope scope = full                                        ? round_scope::full
                            : on_capacity && p.wanted == replan::starts ? round_scope::starts
                                                                        : round_scope::local;
  // A full round's cause: what asked for its sizes; else (only ends waited, or every round
  // is full) what asked for this round.
  const round_cause cause = p.wanted == replan::sizes ? p.sizes_by : ends ? round_cause::end : p.round_by;
  if (full) {
    const auto& o = st.setup.planner;
    if (o.scale_budget_per_s > 0)
      p.budget_tokens = std::max(0.0, p.budget_tokens - std::min(static_cast<double>(valued), o.scale_budget_burst));
    p.last_scale_round = now;
    p.wanted = replan::none;
    p.ends_waiting = false;
  } else if ((sizes || ends) && (!p.scale_timer || due < p.scale_timer_at)) {
    // A due earlier than the timer set (the budget's refill before an end's wait) gets a timer
    // of its own; the later one then finds none pending and is dropped (on_scale_due).
    p.scale_timer = true;
    p.scale_timer_at = due;
    self->delayed_send(self, st.jenv->tb.span(due - now), scale_due_atom::value);
  }
  if (scope == round_scope::starts) p.wanted = replan::none;
  return {scope, cause};
}

/// One message per server changed (its removals, then its placements): a round that
/// rescales many jobs is most of its messages otherwise. Servers hear before any job does,
/// so a removal never reaches a server after the new launch.
void send_to_servers(self_ptr self, const std::vector<decision>& decisions) {
  auto& st = self->state;
  auto& batch = st.pacing.batch;
  auto touch = [&](int sid) -> round_pacing::server_changes& {
    auto& c = batch[static_cast<size_t>(sid)];
    if (c.removed.empty() && c.placed.empty()) st.pacing.batch_servers.push_back(sid);
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
  // A server's one placement or one removal goes as place or remove, which the server handles
  // as it would the same changes; the batch keeps its buffers for the next round. Most servers a
  // round touches get just one, and changes would allocate its three vectors for it.
  for (int sid : st.pacing.batch_servers) {
    auto& c = batch[static_cast<size_t>(sid)];
    auto& server = st.servers[static_cast<size_t>(sid)];
    if (c.removed.empty() && c.placed.size() == 1) {
      self->send(server, place_atom::value, c.placed.front(), c.gpus.front());
    } else if (c.placed.empty() && c.removed.size() == 1) {
      self->send(server, remove_atom::value, c.removed.front());
    } else {
      self->send(server, changes_atom::value, std::move(c.removed), std::move(c.placed), std::move(c.gpus));
    }
    c.removed.clear();
    c.placed.clear();
    c.gpus.clear();
  }
  st.pacing.batch_servers.clear();
}

/// Tenants' usage settled to now (quotas, fair share), and journaled.
void settle_tenants(self_ptr self, sim_time now) {
  auto& st = self->state;
  settle_tenant_usage(st.ledger, st.setup.policy, now);
  if (!st.setup.journal) return;
  std::vector<saved_tenant> usage;
  for (auto& t : st.ledger.tenants) usage.push_back({t.name, t.usage_gpu_s, t.usage_at.us});
  self->send(st.setup.journal, jtenants_atom::value, std::move(usage));
}

/// Tells each job its decision, and the recorder the round: its lines in one message.
void send_to_jobs(self_ptr self, std::vector<decision>& decisions, sim_time now, round_kind kind) {
  auto& st = self->state;
  std::vector<event_record> lines;
  lines.reserve(decisions.size());
  for (auto& d : decisions) {
    dispatch_assignment(self, d, true, !st.loans.quota_reclaims.empty() && quota_victim(st, d.job));
    auto& j = st.ledger.jobs[d.job];
    // "job-I workers=W TYPE [SERVER:N ...]", appended piece by piece (see describe_into).
    std::string detail;
    detail.reserve(48 + 16 * d.alloc.size());  // one allocation for the line
    detail += "job-";
    append_number(detail, d.job);
    detail += " workers=";
    append_number(detail, j.workers);
    if (!d.alloc.empty()) {
      detail += ' ';
      detail += st.setup.type_names[static_cast<size_t>(j.alloc_type)];
      detail += ' ';
      describe_into(detail, st, d.alloc);
    }
    lines.push_back({now.us, "scheduler", kind_name(d.what), std::move(detail), std::move(d.why)});
  }
  self->send(st.jenv->recorder, roundlog_atom::value, std::move(lines), snapshot_at(st, now), kind);
}

} // namespace

void on_round(self_ptr self) {
  auto& st = self->state;
  st.pacing.pending = false;
  auto now = st.jenv->tb.now(self);
  const auto kind = pace_round(self, now);
  if (st.jobs.unestimated_active > 0)
    refresh_estimates(st.ledger, st.jobs.history, st.setup.planner.unestimated_prior_s, now);
  auto decisions = plan_round(st.ledger, st.setup.policy, st.setup.planner, now, st.pacing.round, kind.scope);
  send_to_servers(self, decisions);
  if (st.ledger.params.quotas) track_quota_reclaims(self, decisions, now);
  if (st.ledger.params.quotas || st.ledger.params.fair_share) settle_tenants(self, now);
  send_to_jobs(self, decisions, now, kind);
  note_drained(self, now);
  st.metrics.rounds.add(std::chrono::duration<double>(std::chrono::steady_clock::now() - st.pacing.asked).count());
}

void on_scale_due(self_ptr self) {
  auto& st = self->state;
  if (!st.pacing.scale_timer) return;  // overtaken by an earlier timer, which ran
  st.pacing.scale_timer = false;
  // Only ends were waiting: the round decides whether their period is up (a full round may
  // have come between, for something else).
  const bool ends_only = st.setup.planner.rounds != scale_rounds::every && st.pacing.wanted != replan::sizes;
  if (ends_only && !st.pacing.ends_waiting) return;
  mark_dirty(self, round_cause::timer, ends_only ? replan::none : replan::sizes);
}

} // namespace aryl::sched
