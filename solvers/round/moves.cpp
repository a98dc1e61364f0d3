// Step 2 of a full round (docs/round.md, "The steps"): elastic jobs on slower GPU types move to
// faster free ones when the move pays for its restart, longest predicted remaining time first.
#include <algorithm>
#include <optional>

#include "solvers/jct_value.hpp"
#include "solvers/round/steps.hpp"

namespace aryl::detail {
namespace {

/// Where a move of elastic job `j` puts `w` workers of `type` in view `v`: place_one's pick.
/// A size that fits one server is read from the view's index (best_fit is place_one's
/// consolidated rule); a larger one needs a server with the smallest server's GPUs free
/// before the pass over every server. Moves are tried in every round for each job on a
/// slower type while a faster one has room.
std::optional<allocation> place_move(const cluster_ledger& l, const policy_spec& p, const planner_options& o,
                                     const job_entry& j, const work_view& v, int type, int w,
                                     std::vector<server_slot>& slots_buf) {
  if (o.placement == placement_mode::consolidated) {
    const int smallest = l.smallest_server(type);
    if (w <= smallest) {
      const int sid = v.best_fit(type, w, p.loaning);
      if (sid < 0) return std::nullopt;
      return allocation{{sid, w}};
    }
    if (v.best_fit(type, smallest, p.loaning) < 0) return std::nullopt;
  }
  auto& slots = v.slots(j, p, o, type, slots_buf);
  return place_one(o.placement, slots, {static_cast<int>(j.index), w, type, {}});
}

/// Moves plan `e` (a running job `rem` predicted seconds from its end) to the first faster
/// type where that pays for its restart, if any: its size there where the fast GPUs hold it
/// (kept there as it is, out of this round's knapsack), else its base. Only onto GPUs really
/// free: a move never takes GPUs from other jobs (`hard_free`: their count per type on the
/// servers elastic jobs may use, as moves take them).
void try_move(const cluster_ledger& l, const policy_spec& p, const planner_options& o, elastic_plan& e, double rem,
              work_view& view, work_view& hard, std::vector<long>& hard_free, std::vector<server_slot>& slots_buf) {
  auto& j = l.jobs[e.job];
  auto base_workers = [&](const job_entry& x) { return aryl::detail::base_workers(x, p); };
  double t_now = -1;  // computed when some faster type has room: most rounds none has
  auto t_new = [&](int type, int servers, int workers) {
    return l.params.restart_overhead_s + remaining_time_s(l.params.model, rem, j.gpus, workers, servers, speed(l, type));
  };
  const int sized = o.move_with_size && p.elastic ? std::min(e.current, j.max_workers) : base_workers(j);
  std::optional<allocation> a;
  int moved_workers = 0;
  for (size_t t = 0; t < l.params.type_speed.size() && !a; ++t) {
    int type = static_cast<int>(t);
    // A job pinned to a GPU type (its gpu_type) never moves off it, however fast another is.
    if (speed(l, type) <= speed(l, e.type) || (j.gpu_type >= 0 && type != j.gpu_type)) continue;
    const int sizes[2] = {std::max(sized, base_workers(j)), base_workers(j)};
    for (int k = 0; k < (sizes[0] > sizes[1] ? 2 : 1); ++k) {
      const int w = sizes[k];
      if (hard_free[t] < w) continue;  // most rounds: the fast GPUs are all busy
      if (t_now < 0)
        t_now = remaining_time_s(l.params.model, rem, j.gpus, e.current, servers_spanned(j.alloc), speed(l, e.type));
      // One server is the best any placement gives: no need to place where that cannot pay.
      if (t_now - t_new(type, 1, w) <= o.migrate_min_gain_s) continue;
      a = place_move(l, p, o, j, hard, type, w, slots_buf);
      if (a && t_now - t_new(type, servers_spanned(*a), w) > o.migrate_min_gain_s) {
        moved_workers = w;
        break;
      }
      a.reset();
    }
    if (!a) continue;
    e.net_s = t_now - t_new(type, servers_spanned(*a), moved_workers) - o.migrate_min_gain_s;
    e.cost_s = l.params.restart_overhead_s;
    view.give(e.base);
    view.take(*a);
    for (auto& [sid, w] : *a) {
      auto& f = hard.at_mut(sid);
      hard_free[t] -= std::min(std::max(f, 0), w);
      f -= w;
    }
    if (moved_workers > base_workers(j)) {
      keep_on_fewest(*a, base_workers(j), e.base);
      e.final = std::move(*a);
      e.frozen = true;
    } else {
      e.base = std::move(*a);
    }
    e.type = type;
  }
}

} // namespace

void move_to_faster(const cluster_ledger& l, const policy_spec& p, const planner_options& o, work_view& view,
                    work_view& hard, std::vector<elastic_plan>& plans, round_scratch& s) {
  auto& slow = s.slow;
  slow.clear();
  double best = 0;
  for (auto sp : l.params.type_speed) best = std::max(best, sp);
  for (size_t i = 0; i < plans.size(); ++i)
    if (!plans[i].started && speed(l, plans[i].type) < best)
      slow.emplace_back(-l.jobs[plans[i].job].predicted_remaining(), i);
  std::sort(slow.begin(), slow.end());
  auto& hard_free = s.hard_type_free;
  hard_free.assign(l.params.type_speed.size(), 0);
  if (!slow.empty())
    for (size_t t = 0; t < hard_free.size(); ++t)
      hard_free[t] = static_cast<int>(hard.total(static_cast<int>(t), p.loaning));
  for (auto& [neg_rem, i] : slow) try_move(l, p, o, plans[i], -neg_rem, view, hard, hard_free, s.slots);
}

} // namespace aryl::detail
