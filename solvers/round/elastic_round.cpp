// Rounds of policies with elastic scaling (docs/round.md, "The steps"), planned on a working copy of
// the free GPUs in which every elastic job's workers above its minimum count as free:
//  1. base demand of queued jobs in queue order (queue_walk.cpp, base_placement.cpp, with
//     preemption, quota reclaim, reservation and backfill);
//  2. elastic jobs on slower GPU types move to faster free ones if the move pays for its
//     restart (moves.cpp); then (2b) a job spread over more servers than its workers need
//     moves onto fewer free ones if the faster rate pays for the change (consolidation.cpp);
//  3. the free GPUs of each type go to elastic jobs by the multiple-choice knapsack on JCT
//     reductions (sizing.cpp);
//  4. extra workers go on the fewest servers that hold them (extra_workers.cpp);
//  5. the result is diffed against the ledger: only jobs whose allocation changes get a
//     decision, applied as one batch (apply.cpp).
// Running elastic jobs are planned after step 1 (running_plans.cpp), except those no later
// step could change or let change another job's outcome. A local round (local_round.cpp) does
// step 1 only.
#include "solvers/round/steps.hpp"

namespace aryl::detail {

void plan_elastic(cluster_ledger& l, const policy_spec& p, const planner_options& o, sim_time now, round_context& c,
                  std::vector<decision>& out, bool starts_only) {
  work_view view = view_of(l, c.view_mem), hard = view_of(l, c.hard_mem);
  build_views(p, view, hard);
  walk_for_bases(l, p, o, now, c, view, hard);
  auto& plans = c.made.plans;
  if (starts_only) {
    // A round that sizes only its starts (round_scope::starts): the running jobs keep what
    // they hold, less the extras its starts took; the starts share the GPUs really free.
    scale_in_losers(l, p, view, c.made, c.scratch);
  } else {
    plan_running(l, p, o, now, view, hard, c.defer_frozen, c.made, c.scratch);
    own_quota_growth(l, p, o, now, c.walk.books, view, hard, c.made);
    if (o.migrate) move_to_faster(l, p, o, view, hard, plans, c.scratch);
    if (consolidates(p, o)) consolidate(l, p, o, now, view, hard, plans, c.scratch);
    freeze_in_cooldown(l, p, o, now, view, c.made, c.scratch.kept);
  }
  // The GPUs the knapsack shares: with extra workers' counted free, or only those really free
  // when the running jobs are not re-planned.
  work_view& kv = starts_only ? hard : view;
  value_sizes(l, p, o, now, kv, plans, c.sizing);
  choose_sizes(l, plans, c.sizing);
  place_extra_workers(l, p, o, c.sizing, kv, plans, c.scratch);
  apply_round(l, now, c.made, c.scratch, out, "shortest predicted job that fits its base demand");
}

} // namespace aryl::detail
