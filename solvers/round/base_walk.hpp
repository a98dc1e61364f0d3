#pragma once
/// Step 1's walk over the queue, shared by the main walk (queue_walk.cpp) and the shadow walk
/// (reservation.cpp). Internal to solvers/.
#include <algorithm>

#include "solvers/round/backfill_bar.hpp"
#include "solvers/round/steps.hpp"

namespace aryl::detail {

/// Walks the queue from its head, skipping the jobs reserve_first tried, and gives each job
/// `may_try(id)` admits room for its base demand (find_room). Strict but with backfill, where
/// the walk goes on past a job that found none (no_room_bar skips those that cannot fit
/// either).
template <class MayTry>
void walk_bases(const cluster_ledger& l, const policy_spec& p, const planner_options& o, round_context& c,
                work_view& view, work_view& hard, MayTry may_try) {
  const bool backfill = backfills(p, o);
  const auto& promoted = c.step1.promoted;
  no_room_bar bar(l, p, o);
  walk_queue(l, p, c.walk, [&](uint32_t id) {
    if (!promoted.empty() && std::find(promoted.begin(), promoted.end(), id) != promoted.end()) return true;
    if (!may_try(id)) return true;
    if (backfill && bar.passes_over(l.jobs[id])) return true;
    if (find_room(l, p, o, id, c, view, hard)) return true;
    return backfill && bar.record(l.jobs[id]);
  });
}

} // namespace aryl::detail
