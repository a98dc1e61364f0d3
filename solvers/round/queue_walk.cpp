// Step 1 of a full round (docs/design.md, "Phase 1"): base demand of queued jobs in queue
// order (min workers for elastic jobs), so a queued job never waits for GPUs that only extend
// an elastic job; after the jobs that hold servers, and before the shadow walk on them.
#include "solvers/round/base_walk.hpp"

namespace aryl::detail {

walk_outcome walk_for_bases(cluster_ledger& l, const policy_spec& p, const planner_options& o, sim_time now,
                            round_context& c, work_view& view, work_view& hard) {
  walk_outcome out;
  l.reserved_servers.clear();
  reserve_first(l, p, o, now, c, view, hard, l.reserved_servers, l.reserved_for, out);
  walk_bases(l, p, o, c, view, hard, [](uint32_t) { return true; }, out);
  if (l.params.quotas && p.loaning) place_on_loaned(l, p, o, c, view, hard);
  shadow_backfill(l, p, o, c, view, hard, l.reserved_servers, out);
  unprotect(c.step1, view);
  release_reserved(c.step1, view);
  return out;
}

} // namespace aryl::detail
