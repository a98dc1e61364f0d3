// Step 1 of a full round (docs/round.md, "The steps"): base demand of queued jobs in queue
// order (min workers for elastic jobs), so a queued job never waits for GPUs that only extend
// an elastic job; after the jobs that hold servers, and before the shadow walk on them.
#include "solvers/round/base_walk.hpp"

namespace aryl::detail {

void walk_for_bases(cluster_ledger& l, const policy_spec& p, const planner_options& o, sim_time now,
                    round_context& c, work_view& view, work_view& hard) {
  l.reserved_servers.clear();
  const double shadow_s = reserve_first(l, p, o, now, c, view, hard, l.reserved_servers, l.reserved_for);
  walk_bases(l, p, o, c, view, hard, [](uint32_t) { return true; });
  if (l.params.quotas && p.loaning) place_on_loaned(l, p, o, c, view, hard);
  shadow_backfill(l, p, o, c, view, hard, l.reserved_servers, shadow_s);
  release_reserved(c.step1, view);
}

} // namespace aryl::detail
