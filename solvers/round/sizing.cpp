// Step 3 of a full round (docs/elastic.md, "What a change of size must pay"): the free GPUs of each type go
// to elastic jobs by the multiple-choice knapsack on JCT reductions, where keeping a job's
// current size costs nothing and changing it costs the scaling overhead, each size valued at
// the rate of the servers its extras will span.
#include <algorithm>
#include <cmath>

#include "solvers/jct_value.hpp"
#include "solvers/round/steps.hpp"

namespace aryl::detail {
namespace {

/// After the knapsack (step 3), for each job the solution `sol` changes at a loss to itself
/// (its chosen item worth less than keeping its size): how much more the round's sizes save
/// than the best solution that keeps its size, into its traded_s, for its decision's reason.
/// That solution is found by solving again with the job's class held to its kept item,
/// raised by a constant no total without it reaches (none: it keeps its minimum, the empty
/// choice), then restored.
void price_trades(const cluster_ledger& l, std::vector<elastic_plan>& plans, sizing_state& z) {
  auto& in = z.in;
  const auto& sol = z.sol;
  const auto& class_plan = z.class_plan;
  constexpr double raise = 1e12;
  for (size_t c = 0; c < class_plan.size(); ++c) {
    auto& e = plans[class_plan[c]];
    auto& j = l.jobs[e.job];
    if (e.started || e.forced || e.type != j.alloc_type) continue;
    const double keep_v = e.net_s;  // step 3 left there what keeping its size is worth
    const double chosen = sol.choice[c] < 0 ? 0 : in.classes[c].items[static_cast<size_t>(sol.choice[c])].value;
    if (chosen >= keep_v) continue;
    const int keep_w = e.current - j.min_workers;
    auto& items = in.classes[c].items;
    z.held_items.swap(items);
    items.clear();
    if (keep_w > 0) items.push_back({keep_w, keep_v + raise});
    solve_mckp(in, z.alt_sol);
    items.swap(z.held_items);
    // Its extras have their GPUs (not forced), so the knapsack can always keep its size.
    if (keep_w > 0 && z.alt_sol.choice[c] != 0) continue;
    e.traded_s = std::max(0.0, sol.value - (z.alt_sol.value - (keep_w > 0 ? raise : 0)));
  }
}

/// The knapsack class of plan `e` into `c`: an item per size above its minimum, valued at the
/// JCT it saves (or, valuing by holding time, over the time it is expected to keep it) less
/// its change's cost; false when the class is left out (no GPU of its type to size it with:
/// it runs at its base, as an empty class would choose).
bool class_of(const cluster_ledger& l, const planner_options& o, const work_view& kv, bool share_falls,
              elastic_plan& e, sizing_state& z, mckp_class& c) {
  auto& j = l.jobs[e.job];
  double rem = j.predicted_remaining();
  double sp = speed(l, e.type);
  bool moved = !e.started && e.type != j.alloc_type;
  // Keeping its size is free only for a job whose extra workers all still have their GPUs.
  bool intact = !moved;
  if (intact && !e.started)
    for_each_extra(j.alloc, e.base, [&](int sid, int w) {
      if (kv.at(sid) < w) intact = false;
    });
  e.forced = !e.started && !intact && !moved;
  // No GPU of its type to size it with (its own intact extras would be counted): it runs
  // at its base, as an empty class would choose.
  if (z.in.capacity[static_cast<size_t>(e.type)] == 0) return false;
  int current = e.current;
  const int home_span = servers_spanned(e.base);
  const bool hold = o.horizon == scale_horizon::hold;
  const double t_min = hold ? 0 : remaining_time_s(l.params.model, rem, j.gpus, j.min_workers, home_span, sp);
  c.items = z.spare_item_list();
  c.gpu_type = e.type;
  // No job can take more extra workers than its type has free GPUs: items past that could
  // never be chosen, and a trace's max_workers may be far beyond the cluster.
  const int top = std::min(j.max_workers, j.min_workers + z.in.capacity[static_cast<size_t>(e.type)]);
  // Each size at the span step 4 gives it: the job's current allocation when it keeps its
  // size, else its base's servers while their free GPUs hold its extras, and more servers
  // beyond (every size up to `top` fits somewhere: `top` is bounded by the type's free
  // GPUs). How many more does not matter: a rate is the same on any number of servers from
  // two (locality_efficiency). Planned as if alone: when other jobs' extras take the same
  // servers it can end up on more (the ledger then runs it at the rate of the servers it
  // really gets).
  long home_free = 0;
  for (auto& [sid, w] : e.base) home_free += kv.at(sid);  // a base has each server once
  const int base_span = std::max(home_span, 1);
  // Its requested size's term taken once, for its minimum and every size below (work_rate's
  // arithmetic, as work_rate_at says).
  const double base_rate = requested_base(l.params.model, j.gpus);
  const double r_min = j.gpus > 0 ? work_rate_at(l.params.model, base_rate, j.min_workers, base_span, sp) : 0.0;
  const double hold_s = hold ? z.hold_by_type[static_cast<size_t>(e.type)] : 0;
  // A change now: the overhead, and (valuing by holding time) the stop's checkpoint of the
  // workers it has. Relative to staying at min, so a job already above min pays it for
  // min too (the class's empty choice), and keeping its size pays nothing.
  const double change_s = l.params.scale_overhead_s + (hold ? l.checkpoint_time_s(current) : 0) + o.rescale_margin_s;
  const bool pays_change = !e.started && intact;
  if (!moved) {  // a move's reason is its own gain and restart
    e.cost_s = change_s - o.rescale_margin_s;
    e.hold_s = hold_s;
  }
  double keep_v = 0;  // keeping its size: the empty choice at min, else its kept item
  for (int w = j.min_workers + 1; w <= top; ++w) {
    bool kept = !e.started && intact && w == current;
    int servers = kept ? servers_spanned(j.alloc) : w - j.min_workers <= home_free ? home_span : home_span + 1;
    double r_w = j.gpus > 0 ? work_rate_at(l.params.model, base_rate, w, std::max(servers, 1), sp) : 0.0;
    // Sizes whose GPUs do too little work each are not offered (kept ones stay offered:
    // dropping them would force a change).
    if (!kept && r_w * j.min_workers < o.min_extra_efficiency * r_min * w) {
      // Where a GPU's share only falls with the size (and its span only grows), a size that
      // fails by more than rounding error fails for every larger one: only the kept size is
      // left to offer. Most sizes of a busy round fail so.
      if (share_falls && r_w * j.min_workers < o.min_extra_efficiency * r_min * w * (1 - 1e-9)) {
        if (!pays_change || current <= w) break;
        w = current - 1;
      }
      continue;
    }
    double v;
    if (hold) {
      // Kept for an exponential time of mean H, or until the job ends (T_w): the JCT saved
      // is E[min(X, T_w)] x (r_w / r_min - 1), and with probability P(X < T_w) the extras
      // are taken back, which is one more change (its overhead and checkpoint).
      double t_w = rem / r_w;
      double p_back = -std::expm1(-t_w / hold_s);
      double held = hold_s * p_back;
      v = held * (r_w / r_min - 1) - p_back * (l.params.scale_overhead_s + l.checkpoint_time_s(w));
    } else {
      v = t_min - rem / r_w;
    }
    if (pays_change) {
      if (w != current) v -= change_s;
      if (current > j.min_workers) v += change_s;
    }
    if (kept) keep_v = v;
    c.items.push_back({w - j.min_workers, v});
  }
  if (!moved) e.net_s = keep_v;  // until the knapsack's choice: what keeping its size is worth
  return true;
}

/// Running job `j` (of base `base`) keeps its extra workers if they all still have their GPUs
/// in `view`, which then holds them; false if some lost theirs.
/// (`kept`, which then holds its extras, is left in any state when false.)
bool keep_extras(const job_entry& j, const allocation& base, work_view& view, allocation& kept) {
  bool intact = true;
  kept.clear();
  for_each_extra(j.alloc, base, [&](int sid, int w) {
    intact = intact && view.at(sid) >= w;
    kept.emplace_back(sid, w);
  });
  if (!intact) return false;
  view.take(kept);
  return true;
}

} // namespace

void freeze_in_cooldown(const cluster_ledger& l, const policy_spec& p, const planner_options& o, sim_time now,
                        work_view& view, round_plans& made, allocation& kept) {
  if (!p.elastic || o.rescale_cooldown_s <= 0) return;
  auto& plans = made.plans;
  const auto& later = made.frozen_unplanned;
  // The running jobs' plans ascend by job id ahead of the started ones', as plan_running
  // made them; the unplanned jobs are taken in that order among them. One that lost GPUs
  // gets the plan plan_running would have made (no step since changes such a plan).
  size_t next = 0;
  long inserted = 0;
  for (size_t i = 0;;) {
    const bool end = i == plans.size();
    if (next < later.size() && (end || plans[i].started || later[next] < plans[i].job)) {
      const uint32_t id = later[next++];
      auto& j = l.jobs[id];
      if (keep_extras(j, j.base, view, kept)) continue;  // frozen at its allocation: no plan needed
      elastic_plan e{id, made.spare_alloc(), j.alloc_type, j.workers, false, made.spare_alloc()};
      base_of(j, p, e.base);
      plans.insert(plans.begin() + static_cast<long>(i), std::move(e));
      ++i;
      ++inserted;
      continue;
    }
    if (end) break;
    auto& e = plans[i++];
    auto& j = l.jobs[e.job];
    if (e.started || e.type != j.alloc_type || e.current <= j.min_workers) continue;
    if ((now - j.resized_at).seconds() >= o.rescale_cooldown_s) continue;
    if (!keep_extras(j, e.base, view, kept)) continue;
    e.final = e.base;
    merge_into(e.final, kept);
    e.frozen = true;
  }
  if (inserted > 0)
    for (auto& st : made.starts)
      if (st.plan >= 0) st.plan += inserted;
}

void value_sizes(const cluster_ledger& l, const policy_spec& p, const planner_options& o, sim_time now,
                 const work_view& kv, std::vector<elastic_plan>& plans, sizing_state& z) {
  auto& in = z.in;
  in.capacity.assign(l.params.type_speed.size(), 0);
  for (size_t t = 0; t < in.capacity.size(); ++t) in.capacity[t] = static_cast<int>(kv.total(static_cast<int>(t), p.loaning));
  z.hold_by_type.clear();
  for (size_t t = 0; t < l.params.type_speed.size(); ++t) z.hold_by_type.push_back(l.hold_estimate(static_cast<int>(t), now));
  z.class_plan.clear();
  const bool share_falls = falling_share(l.params.model);
  for (size_t i = 0; i < plans.size(); ++i) {
    auto& e = plans[i];
    auto& j = l.jobs[e.job];
    if (!p.elastic || j.max_workers <= j.min_workers || e.frozen) continue;
    // Built in place; one left out has taken no item list yet.
    if (!class_of(l, o, kv, share_falls, e, z, in.classes.emplace_back())) {
      in.classes.pop_back();
      continue;
    }
    z.class_plan.push_back(i);
  }
}

void choose_sizes(const cluster_ledger& l, std::vector<elastic_plan>& plans, sizing_state& z) {
  // The knapsack takes an item only if it raises the total: with no item worth more than
  // nothing (most rounds), every class keeps its empty choice.
  const bool worth_solving = std::any_of(z.in.classes.begin(), z.in.classes.end(), [](const mckp_class& c) {
    return std::any_of(c.items.begin(), c.items.end(), [](const mckp_item& it) { return it.value > 0; });
  });
  if (worth_solving) {
    solve_mckp(z.in, z.sol);
    price_trades(l, plans, z);
  } else {
    z.sol.value = 0;
    z.sol.choice.assign(z.in.classes.size(), -1);
  }
}

} // namespace aryl::detail
