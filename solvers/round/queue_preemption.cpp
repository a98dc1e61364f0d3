// Step 1's fallbacks of an elastic round: a queued job that fits nowhere may stop running
// jobs that have far longer to go (docs/preemption.md, "Preemption for short jobs"), or of a
// lower class (docs/tenants.md, "Priorities").
#include <algorithm>
#include <array>
#include <limits>

#include "solvers/priorities.hpp"
#include "solvers/reason_text.hpp"
#include "solvers/round/steps.hpp"

namespace aryl::detail {

namespace {

using stoppable_index = cluster_ledger::stoppable_index;

/// Stops running jobs without extra workers (rigid, or elastic at their minimum) for queued
/// job `id` whose base demand fits nowhere, each victim accepted by `rule.eligible(v,
/// q_run)`. A demand that fits one server goes on the server where the fewest GPUs must
/// stop; a larger one on whole servers, those where the fewest GPUs must stop first.
/// Longest-remaining victims first on each server, and between servers where as many GPUs
/// must stop, the one whose victims have the most time left (as SRTF stops the job with the
/// most left: the least hurt by the wait). Records the victims (why:
/// `rule.why(v, q_run)`) and the start; false if the demand cannot be met so.
/// With `only_type` >= 0, on that GPU type only; with `budget_s` >= 0, only victims whose
/// losses (each its wait for the queued job's run plus its restart and checkpoint) add up to
/// less than it.
template <class Rule>
bool preempt_with(const cluster_ledger& l, const policy_spec& p, const planner_options& o, uint32_t id,
                  round_context& c, work_view& view, work_view& hard, const Rule& rule, int only_type = -1,
                  double budget_s = -1) {
  auto& b = c;
  auto& q = l.jobs[id];
  const int demand = q.elastic ? base_workers(q, p) : q.gpus;
  const bool loaned = p.loaning && (q.elastic || o.inelastic_on_loaned);
  if (demand < 1) return false;
  auto& types = b.scratch.types;
  types_for(l, q, o, types);
  for (int type : types) {
    if (only_type >= 0 && type != only_type) continue;
    const bool one_server = demand <= l.smallest_server(type);
    const double q_run = base_run_s(l, q, demand, type);
    if (!rule.possible(q_run)) continue;
    // Per server that can give its share: (victims' GPUs, -GPUs it gives, server), and the
    // victims, in server_victims[k].
    auto& opts = b.step1.preempt_options;
    opts.clear();
    b.step1.server_victims.resize(std::max(b.step1.server_victims.size(), l.servers.size()));
    auto consider = [&](const server_entry& s) {
      if (!work_view::in_scope(s, type, loaned) || (one_server && s.gpus < demand)) return;
      const int need = one_server ? demand : s.gpus;
      int have = view.at(s.id);
      // A server that cannot give its share even if every job the rule could stop there
      // stopped gives nothing: skipped without a look at its jobs.
      if (have < need && !rule.server_may_give(s.id, need - have, q_run)) return;
      auto& cand = b.step1.candidates;
      cand.clear();
      if (have < need)
        for (auto vid : s.jobs) {
          auto& v = l.jobs[vid];
          if (v.status != job_status::running) continue;
          if (v.elastic && p.elastic && v.workers > v.min_workers) continue;  // its extras go first
          if (std::any_of(b.made.victims.begin(), b.made.victims.end(), [&](auto& x) { return x.job == vid; })) continue;
          if (b.made.started_now_has(vid)) continue;  // started by this round
          // The ledger's mirror runs at the rate of the job's allocation (set at every change
          // of it): the same value as l.rate(v, v.alloc, v.alloc_type), without recounting.
          double rate = v.progress.rate;
          if (rate <= 0) continue;
          double v_time = v.predicted_remaining() / rate;
          if (rule.eligible(v, v_time, q_run)) cand.emplace_back(-v_time, vid);
        }
      std::sort(cand.begin(), cand.end());  // longest remaining first: they lose least by waiting
      // The last chosen has the least time left of this server's victims.
      auto& chosen = b.step1.server_victims[static_cast<size_t>(s.id)];
      chosen.clear();
      long gpus = 0;
      double shortest = std::numeric_limits<double>::infinity();
      for (auto& [neg, vid] : cand) {
        if (have >= need) break;
        shortest = -neg;
        auto& v = l.jobs[vid];
        for (auto& [sid, w] : v.alloc)
          if (sid == s.id) have += w;
        gpus += v.workers;
        chosen.push_back(vid);
      }
      if (have < need || (one_server && chosen.empty())) return;
      opts.push_back({gpus, -std::min(have, need), -shortest, s.id});
    };
    // Only a server the rule may stop jobs on, or one wholly free (a share of a larger demand
    // that stops no one), can give: where the rule lists the former and no server of the
    // type has even the smallest server's GPUs free, those listed are all there is to see.
    // The options are the same either way (their order is sorted below).
    auto* listed = rule.listed(type);
    if (listed && (one_server || view.best_fit(type, l.smallest_server(type), loaned) < 0)) {
      const double bar = rule.bar(q_run);
      for (auto [neg_longest, sid] : *listed) {
        if (!(-neg_longest > bar)) break;
        consider(l.servers[static_cast<size_t>(sid)]);
      }
    } else {
      for (auto& s : l.servers) consider(s);
    }
    std::sort(opts.begin(), opts.end());
    // Servers until the demand is met: one for a demand that fits one.
    allocation a;
    int left = demand;
    size_t used = 0;
    for (; used < opts.size() && left > 0; ++used) {
      int give = std::min(left, -std::get<1>(opts[used]));
      a.emplace_back(std::get<3>(opts[used]), give);
      left -= give;
    }
    if (left > 0) continue;
    bool any = false;
    for (size_t k = 0; k < used; ++k)
      any = any || !b.step1.server_victims[static_cast<size_t>(std::get<3>(opts[k]))].empty();
    if (!any) continue;  // it fits without stopping anyone: not this step's to place
    if (budget_s >= 0) {
      double loss = 0;
      for (size_t k = 0; k < used; ++k)
        for (auto vid : b.step1.server_victims[static_cast<size_t>(std::get<3>(opts[k]))]) loss += q_run + rule.cost(l.jobs[vid]);
      if (loss >= budget_s) continue;
    }
    std::sort(a.begin(), a.end());
    for (size_t k = 0; k < used; ++k)
      for (auto vid : b.step1.server_victims[static_cast<size_t>(std::get<3>(opts[k]))]) {
        if (std::any_of(b.made.victims.begin(), b.made.victims.end(), [&](auto& x) { return x.job == vid; })) continue;
        auto& v = l.jobs[vid];
        view.give(v.alloc);
        hard.give(v.alloc);
        b.made.victims.push_back({vid, rule.why(v, q_run)});
      }
    view.take(a);
    hard.take(a);
    long plan = -1;
    if (q.elastic) {
      plan = static_cast<long>(b.made.plans.size());
      b.made.plans.push_back(elastic_plan{id, a, type, base_workers(q, p), true, {}});
    }
    b.made.starts.push_back({id, std::move(a), plan});
    return true;
  }
  return false;
}

} // namespace

/// Step 1's fallback for queued job `id` whose base demand fits nowhere: preempt running
/// jobs whose predicted remaining time is above preempt_ratio x (the queued job's predicted
/// run + the victim's restart overhead and checkpoint), none preempted max_preemptions
/// times already.
bool preempt_for(const cluster_ledger& l, const policy_spec& p, const planner_options& o, uint32_t id,
                 round_context& c, work_view& view, work_view& hard, int only_type, double budget_s) {
  if (o.preempt_ratio <= 0) return false;
  struct {
    const cluster_ledger& l;
    const policy_spec& p;
    const planner_options& o;
    walk_state& w;  // the bounds, found at the round's first call
    uint32_t id;
    double cost(const job_entry& v) const { return stop_cost_s(l, v); }
    bool eligible(const job_entry& v, double v_time, double q_run) const { return preempt_eligible(l, o, v, v_time, q_run); }
    // Exact: an eligible victim has v_time <= the longest and cost >= the cheapest, and the
    // rule's sum and product only grow with their operands.
    bool possible(double q_run) const {
      if (!w.preempt_bound_known) {
        w.preempt_bound_known = true;
        refresh_stoppable();
        w.preempt_longest_s = -1;
        for (auto& listed : l.stoppable_by_type)
          if (!listed.empty()) w.preempt_longest_s = std::max(w.preempt_longest_s, -listed.begin()->first);
        w.preempt_cheapest_s = l.stoppable_cheapest.empty() ? 0 : *l.stoppable_cheapest.begin();
      }
      return w.preempt_longest_s >= 0 && w.preempt_longest_s > o.preempt_ratio * (q_run + w.preempt_cheapest_s);
    }
    // Exact for the same reason, per server: its jobs the rule could stop (as of the round's
    // first call; later victims only give GPUs, which `have` already counts) hold at most
    // these GPUs there, and none is eligible unless the longest of them is.
    bool server_may_give(int sid, int short_by, double q_run) const {
      auto& s = l.stoppable[static_cast<size_t>(sid)];
      return s.gpus >= short_by && s.longest_s > o.preempt_ratio * (q_run + w.preempt_cheapest_s);
    }
    /// The servers of `type` with a job the rule could stop, longest first (the ledger's
    /// index of the summaries), and the bar their longest must pass to give.
    const stoppable_index* listed(int type) const { return &l.stoppable_by_type[static_cast<size_t>(type)]; }
    double bar(double q_run) const { return o.preempt_ratio * (q_run + w.preempt_cheapest_s); }
    // The ledger's per-server summaries, read again where its jobs changed (all of them when
    // the options it was read for changed, or the servers).
    void refresh_stoppable() const {
      const std::array<double, 5> key{static_cast<double>(o.max_preemptions), p.elastic ? 1.0 : 0.0,
                                      l.params.restart_overhead_s, l.params.checkpoint_s,
                                      l.params.checkpoint_per_gpu_s};
      if (!l.stoppable_known || key != l.stoppable_key || l.stoppable.size() != l.servers.size()) {
        l.stoppable_known = true;
        l.stoppable_key = key;
        l.stoppable.assign(l.servers.size(), {});
        l.stoppable_is_stale.assign(l.servers.size(), 1);
        l.stoppable_stale.clear();
        for (auto& s : l.servers) l.stoppable_stale.push_back(s.id);
        l.stoppable_by_type.assign(l.params.type_speed.size(), {});
        l.stoppable_cheapest.clear();
      }
      for (int sid : l.stoppable_stale) {
        auto i = static_cast<size_t>(sid);
        l.stoppable_is_stale[i] = 0;
        auto& sum = l.stoppable[i];
        auto& by_type = l.stoppable_by_type[static_cast<size_t>(l.servers[i].gpu_type)];
        if (sum.longest_s >= 0) {
          by_type.erase({-sum.longest_s, sid});
          l.stoppable_cheapest.erase(l.stoppable_cheapest.find(sum.cheapest_s));
        }
        sum = {};
        for (auto vid : l.servers[i].jobs) {
          auto& v = l.jobs[vid];
          if (v.status != job_status::running || v.progress.rate <= 0 || v.preemptions >= o.max_preemptions) continue;
          if (v.elastic && p.elastic && v.workers > v.min_workers) continue;
          double v_time = v.predicted_remaining() / v.progress.rate;
          if (sum.longest_s < 0 || cost(v) < sum.cheapest_s) sum.cheapest_s = cost(v);
          sum.longest_s = std::max(sum.longest_s, v_time);
          for (auto& [vsid, w] : v.alloc)
            if (vsid == sid) sum.gpus += w;
        }
        if (sum.longest_s >= 0) {
          by_type.insert({-sum.longest_s, sid});
          l.stoppable_cheapest.insert(sum.cheapest_s);
        }
      }
      l.stoppable_stale.clear();
    }
    std::string why(const job_entry& v, double q_run) const {
      auto why = reason_text("preempted for job ", id, ": its predicted remaining ",
                             whole{v.predicted_remaining() / v.progress.rate}, " s exceeds ", general{o.preempt_ratio},
                             " x (that job's run ", whole{q_run}, " s + its restart and checkpoint ", whole{cost(v)},
                             " s)");
      if (budget_s >= 0)
        append_text(why, "; on the faster type that job saves ", whole{budget_s},
                    " s, more than its victims lose (this one ", whole{q_run + cost(v)},
                    " s: its wait for that run, its restart and checkpoint)");
      return why;
    }
    double budget_s;
  } rule{l, p, o, c.step1, id, budget_s};
  return preempt_with(l, p, o, id, c, view, hard, rule, only_type, budget_s);
}

bool priority_preempt_for(const cluster_ledger& l, const policy_spec& p, const planner_options& o, uint32_t id,
                          round_context& c, work_view& view, work_view& hard) {
  if (!l.params.priorities || l.params.priority_max_preemptions <= 0) return false;
  struct {
    const cluster_ledger& l;
    uint32_t id;
    int own;  // tenant_round::own_victims_only
    bool possible(double) const { return true; }
    bool server_may_give(int, int, double) const { return true; }
    const stoppable_index* listed(int) const { return nullptr; }
    double bar(double) const { return 0; }
    bool eligible(const job_entry& v, double, double) const {
      return (own < 0 || v.tenant == own) &&
             priority_may_preempt(l.jobs[id], v, l.params.priority_max_preemptions, left(v), cost(v));
    }
    double cost(const job_entry& v) const { return stop_cost_s(l, v); }
    // What is left as of this round (the ledger's mirror is settled at allocation changes
    // only): a victim about to end is told apart from one just started.
    double left(const job_entry& v) const {
      return std::max(0.0, v.predicted_work - v.progress.done_at(l.round_at)) / v.progress.rate;
    }
    std::string why(const job_entry& v, double) const {
      return reason_text("priority: preempted for job ", id, " (class ", l.jobs[id].priority, " over its ", v.priority,
                         ", ", v.priority_preemptions + 1, " of ", l.params.priority_max_preemptions,
                         " stops for a class): its predicted remaining ", whole{left(v)},
                         " s exceeds its restart and checkpoint ", whole{cost(v)}, " s");
    }
  } rule{l, id, c.walk.books.own_victims_only};
  return preempt_with(l, p, o, id, c, view, hard, rule);
}

} // namespace aryl::detail
