// Step 2b of a full round (docs/elastic.md, "Consolidation"): a running elastic job spread over
// more servers than its workers need moves onto fewer, on GPUs really free and its own.
#include <algorithm>
#include <cmath>

#include "solvers/round/steps.hpp"

namespace aryl::detail {

/// Step 2b for every running elastic job outside its cooldown whose allocation is intact and
/// spread: its size on the fewest servers that GPUs really free plus its own hold (the
/// consolidated rule), kept if it spans fewer servers and its gain, E[min(hold, T)] x
/// (r_new / r_now - 1), exceeds the change's overhead, checkpoint and margin. The job keeps
/// that allocation this round (out of the knapsack).
void consolidate(const cluster_ledger& l, const policy_spec& p, const planner_options& o, sim_time now,
                 work_view& view, work_view& hard, std::vector<elastic_plan>& plans, round_scratch& scr) {
  // GPUs really free per type where elastic jobs may run (a job moves onto fewer servers only
  // if some server has room beyond its own share), and the largest server: counted at the
  // first spread job, as most rounds have none.
  auto& type_free = scr.hard_type_free;
  int widest = 0;
  for (auto& e : plans) {
    if (e.started || e.frozen || e.type != l.jobs[e.job].alloc_type) continue;
    auto& j = l.jobs[e.job];
    if (j.alloc.size() <= 1) continue;  // one server (an allocation lists each server once)
    if (o.rescale_cooldown_s > 0 && (now - j.resized_at).seconds() < o.rescale_cooldown_s) continue;
    const int spanned = servers_spanned(j.alloc);
    if (spanned <= 1) continue;
    if (widest == 0) {
      // The servers an elastic job may use of each type are the view's scope (training, and
      // loaned ones when loaning). The widest server of all bounds theirs: a wider bound only
      // prunes less, place_one decides.
      type_free.assign(l.params.type_speed.size(), 0);
      for (size_t t = 0; t < type_free.size(); ++t) type_free[t] = static_cast<int>(hard.total(static_cast<int>(t), p.loaning));
      widest = std::max(l.widest_server(), 1);
    }
    if (spanned <= (j.workers + widest - 1) / widest) continue;
    // Locality is a step (the same rate on any number of servers from two): only a move onto
    // one server can raise the rate, and none holds more workers than the widest.
    if (j.workers > widest) continue;
    // One server fewer needs free GPUs elsewhere for at least its smallest share.
    int smallest_share = j.workers;
    for (auto& [sid, w] : j.alloc) smallest_share = std::min(smallest_share, w);
    if (type_free[static_cast<size_t>(e.type)] < smallest_share) continue;
    bool intact = true;
    for_each_extra(j.alloc, e.base, [&](int sid, int w) { intact = intact && view.at(sid) >= w; });
    if (!intact) continue;  // its size changes anyway: the knapsack places it
    auto& slots = hard.slots(j, p, o, e.type, scr.slots);
    for (auto& sl : slots)
      for (auto& [sid, w] : j.alloc)
        if (sid == sl.id) sl.free += w;
    auto a = place_one(o.placement, slots, {static_cast<int>(e.job), j.workers, e.type, {}});
    if (!a || servers_spanned(*a) >= spanned) continue;
    const double sp = speed(l, e.type);
    const double rem = j.predicted_remaining();
    const double r_now = work_rate(l.params.model, j.gpus, j.workers, spanned, sp);
    const double r_new = work_rate(l.params.model, j.gpus, j.workers, servers_spanned(*a), sp);
    if (r_now <= 0 || r_new <= r_now) continue;
    const double t_new = rem / r_new;
    const double hold_s = o.horizon == scale_horizon::hold ? l.hold_estimate(e.type, now) : 0;
    const double held = hold_s > 0 ? hold_s * -std::expm1(-t_new / hold_s) : t_new;
    const double cost = l.params.scale_overhead_s + l.checkpoint_time_s(j.workers);
    const double gain = held * (r_new / r_now - 1) - cost - o.rescale_margin_s;
    if (gain <= 0) continue;
    view.give(e.base);  // its extras already count as free in the view
    view.take(*a);
    for (auto& [sid, w] : *a) {
      int own = 0;
      for (auto& [osid, ow] : j.alloc)
        if (osid == sid) own = ow;
      auto& f = hard.at_mut(sid);
      const int taken = std::min(std::max(f, 0), std::max(0, w - own));
      f -= taken;
      type_free[static_cast<size_t>(e.type)] -= taken;
    }
    keep_on_fewest(*a, base_workers(j, p), e.base);
    e.final = std::move(*a);
    e.frozen = true;
    e.consolidated = true;
    e.net_s = gain;
    e.cost_s = cost;
    e.hold_s = hold_s;
  }
}

} // namespace aryl::detail
