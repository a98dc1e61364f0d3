// A full round's plans of the running elastic jobs (elastic_round.cpp, after step 1): which
// jobs get one. Internal to solvers/.
#include <algorithm>
#include <iterator>
#include <limits>

#include "solvers/round/steps.hpp"

namespace aryl::detail {
namespace {

/// Whether running elastic job `id` can neither change nor shape anyone's change in the rest
/// of a full round (after step 1), so that it needs no plan: at its minimum on one server of
/// the fastest type, or of any type when no job can move (`moves_closed`) (nothing to keep,
/// spread or move), a server with no GPU free in the view that no later step can free (no
/// spread elastic job there to consolidate away, no quotas to grow by stopping jobs)
/// (every size above its minimum would span a second server), and every such size below the
/// efficiency floor at the rate of two or more servers (locality is a step: any number of
/// servers from two gives the same rate), so its knapsack class would be empty. Reads the
/// ledger's min_home, and the job's entry only where the model's share of a GPU may rise.
/// `fails_at(min)`: whether min + 1 workers fall below the floor under a falling share.
template <class TypeGpus, class FailsAt>
bool inert(const cluster_ledger& l, const policy_spec& p, const planner_options& o, uint32_t id,
           const work_view& view, double best_speed, bool moves_closed, TypeGpus&& type_gpus, FailsAt&& fails_at) {
  if (!p.elastic) return false;
  auto& h = l.min_home[id];
  const int sid = h.server;
  if (sid < 0) return false;
  auto& s = l.servers[static_cast<size_t>(sid)];
  if (o.migrate && !moves_closed && speed(l, s.gpu_type) < best_speed) return false;
  if (view.at(sid) != 0) return false;
  // Its server may not stay full: a spread neighbour that consolidates (step 2b) leaves it,
  // and a quota's growth may stop jobs there (step 1b).
  if (l.params.quotas) return false;
  if (consolidates(p, o) && s.spread_elastic > 0) return false;
  if (h.max_workers <= h.min_workers) return true;
  if (o.min_extra_efficiency <= 0) return false;
  auto& m = l.params.model;
  if (falling_share(m) && fails_at(h.min_workers)) return true;
  auto& j = l.jobs[id];
  const double sp = speed(l, s.gpu_type);
  const double r_min = work_rate(m, j.gpus, j.min_workers, 1, sp);
  const int top = std::min(j.max_workers, j.min_workers + type_gpus(s.gpu_type));
  for (int w = j.min_workers + 1; w <= top; ++w)
    if (!(work_rate(m, j.gpus, w, 2, sp) * j.min_workers < o.min_extra_efficiency * r_min * w)) return false;
  return true;
}

/// Whether running elastic job `j` keeps its allocation this round unless step 1 took GPUs of
/// its extra workers, so that its plan can wait for freeze_in_cooldown to find that out: above
/// its minimum and within its cooldown (freeze_in_cooldown freezes it if its extras still
/// have their GPUs; consolidation passes over it), on a type no job moves off this round
/// (`may_move`: step 2 would try it), without quotas (step 1b may grow or stop it), and with
/// its allocation listed in server order, so that the frozen plan's allocation (its base and
/// extras, sorted) is its allocation and apply() would find no change.
bool frozen_unless_taken(const cluster_ledger& l, const policy_spec& p, const planner_options& o, sim_time now,
                         const job_entry& j, bool may_move) {
  if (!p.elastic || o.rescale_cooldown_s <= 0 || l.params.quotas || may_move) return false;
  if (j.workers <= j.min_workers || (now - j.resized_at).seconds() >= o.rescale_cooldown_s) return false;
  for (size_t i = 1; i < j.alloc.size(); ++i)
    if (!(j.alloc[i - 1].first < j.alloc[i].first)) return false;
  return true;
}

} // namespace

/// A full round's plans of the running elastic jobs, after step 1 and ahead of the plans of
/// the jobs step 1 started (in the ledger's order of running jobs, as the later steps and
/// their ties read them). Jobs step 1 preempted and inert jobs get none: no later step
/// would change them or let them change another job's outcome.
void plan_running(const cluster_ledger& l, const policy_spec& p, const planner_options& o, sim_time now,
                  const work_view& view, const work_view& hard, bool defer_frozen, round_plans& made,
                  round_scratch& scr) {
  double best = 0, slowest = std::numeric_limits<double>::infinity();
  for (auto s : l.params.type_speed) {
    best = std::max(best, s);
    slowest = std::min(slowest, s);
  }
  // Step 2 moves a job only onto a faster type's GPUs really free: where no type but the
  // slowest has one, no job moves this round, and a job on a slower type is as inert as one
  // on the fastest (nothing later in the round frees GPUs of a faster type).
  bool moves_closed = true;
  if (o.migrate) {
    for (size_t t = 0; t < l.params.type_speed.size() && moves_closed; ++t)
      moves_closed = !(l.params.type_speed[t] > slowest && hard.total(static_cast<int>(t), p.loaning) > 0);
  }
  // Each type's GPUs, counted the first time a job needs them (most rounds none does).
  auto& type_gpus = scr.type_gpus;
  type_gpus.clear();
  auto gpus_of = [&](int type) {
    if (type_gpus.empty()) {
      type_gpus.assign(l.params.type_speed.size(), 0);
      for (auto& s : l.servers) type_gpus[static_cast<size_t>(s.gpu_type)] += s.gpus;
    }
    return type_gpus[static_cast<size_t>(type)];
  };
  // The plans step 1 made for its starts wait aside while the running jobs' are built in
  // place ahead of them (plans are large: each is built once and moved no more).
  auto& plans = made.plans;
  auto& started = scr.started_plans;
  started.clear();
  started.swap(plans);
  // Under a power law that does not rise, a GPU's share of the work only falls as workers are
  // added: the first size decides for all. Its share over the minimum's is
  // eff(min + 1) loc(2) / (eff(min) loc(1)), whatever the job's speed and request: decided
  // once per minimum a round meets, with a margin far above rounding error (at the margin,
  // each size is checked as the knapsack would).
  auto& fails = scr.share_fails;  // by minimum: -1 not yet known
  fails.clear();
  auto fails_at = [&](int min) {
    auto i = static_cast<size_t>(min);
    if (fails.size() <= i) fails.resize(i + 1, -1);
    if (fails[i] < 0) {
      auto& m = l.params.model;
      fails[i] = efficiency(m, min + 1) * locality_efficiency(m, 2) <
                 o.min_extra_efficiency * efficiency(m, min) * locality_efficiency(m, 1) * (1 - 1e-9);
    }
    return fails[i] == 1;
  };
  // What frozen_unless_taken asks of the round rather than of the job, asked once.
  const bool may_defer = defer_frozen && p.elastic && o.rescale_cooldown_s > 0 && !l.params.quotas;
  const bool any_may_move = o.migrate && !moves_closed;
  for (auto id : l.running_elastic) {
    if (made.stopped(id)) continue;
    if (o.skip_inert && inert(l, p, o, id, view, best, moves_closed, gpus_of, fails_at)) continue;
    auto& j = l.jobs[id];
    if (may_defer && frozen_unless_taken(l, p, o, now, j, any_may_move && speed(l, j.alloc_type) < best)) {
      made.frozen_unplanned.push_back(id);
      continue;
    }
    auto& e = plans.emplace_back(elastic_plan{id, made.spare_alloc(), j.alloc_type, j.workers, false, made.spare_alloc()});
    base_of(j, p, e.base);
  }
  for (auto& st : made.starts)
    if (st.plan >= 0) st.plan += static_cast<long>(plans.size());
  std::move(started.begin(), started.end(), std::back_inserter(plans));
  started.clear();
}

} // namespace aryl::detail
