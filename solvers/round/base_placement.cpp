// Step 1 of a round (docs/round.md, "The steps"; docs/preemption.md): a queued job's
// base demand on free GPUs, on extra workers' GPUs, on its fastest type by preemption, or by
// the fallbacks that stop running jobs.
#include <algorithm>
#include <optional>

#include "solvers/round/steps.hpp"

namespace aryl::detail {
namespace {

/// Where queued job `j`'s base demand (`demand` workers) would go on view `v`'s GPUs of
/// `type` under step 1's placement, without taking them; nothing if it does not fit there.
std::optional<allocation> base_on(const cluster_ledger& l, const policy_spec& p, const planner_options& o,
                                  const job_entry& j, int demand, work_view& v, int type, round_scratch& s) {
  const bool loaned = p.loaning && (j.elastic || o.inelastic_on_loaned);
  if (o.placement == placement_mode::consolidated && demand >= 1 && demand <= l.smallest_server(type)) {
    const int room = grow_room(l, p, o, j, type);
    int sid = room > demand ? v.best_fit(type, room, loaned) : -1;
    if (sid < 0) sid = v.best_fit(type, demand, loaned);
    if (sid < 0) return std::nullopt;
    return allocation{{sid, demand}};
  }
  // Beyond the smallest server, consolidated placement needs a server with at least that
  // many GPUs free (one it takes whole, or the host of the whole demand): in a busy round
  // most such demands fail here, without a pass over every server.
  if (o.placement == placement_mode::consolidated && v.best_fit(type, l.smallest_server(type), loaned) < 0)
    return std::nullopt;
  if (v.capacity(type, loaned) < demand) return std::nullopt;  // most rounds with a blocked queue head: no scan
  auto& slots = v.slots(j, p, o, type, s.slots);
  return place_one(o.placement, slots, {static_cast<int>(j.index), demand, type, {}});
}

/// Records queued job `id`'s start on `a`, taken from both views.
void start_on(const cluster_ledger& l, const policy_spec& p, uint32_t id, allocation a, round_plans& made,
              work_view& view, work_view& hard) {
  auto& j = l.jobs[id];
  view.take(a);
  hard.take(a);
  long plan = -1;
  if (j.elastic) {
    plan = static_cast<long>(made.plans.size());
    made.plans.push_back(elastic_plan{id, a, type_of(l, a), base_workers(j, p), true, {}});
  }
  made.starts.push_back({id, std::move(a), plan});
}

/// planner_options::preempt_for_speed, for queued job `j` whose base step 1 would start on
/// `slow`, a slower type than its fastest, `fast`, where it fits neither free GPUs nor extras:
/// it preempts on `fast` when its gain there, its predicted run at its base on `slow` less
/// that on `fast`, exceeds what its victims lose. False if it does not (nothing changed).
bool preempt_for_speed(const cluster_ledger& l, const policy_spec& p, const planner_options& o, uint32_t id,
                       int demand, int fast, int slow, round_context& c, work_view& view, work_view& hard) {
  auto& j = l.jobs[id];
  const double r_fast = work_rate(l.params.model, j.gpus, demand, base_span(l, fast, demand), speed(l, fast));
  const double r_slow = work_rate(l.params.model, j.gpus, demand, base_span(l, slow, demand), speed(l, slow));
  if (r_slow <= 0 || r_fast <= r_slow) return false;
  const double gain = j.predicted_remaining() / r_slow - j.predicted_remaining() / r_fast;
  return preempt_for(l, p, o, id, c, view, hard, fast, gain);
}

/// Step 1 for one queued job: its base demand on GPUs that are really free (`hard`) if it
/// fits there, so that running jobs are disturbed only when they must be, else on GPUs held
/// by extra workers (`view`); where that is a slower type than its fastest, possibly on the
/// fastest by preemption (planner_options::preempt_for_speed). Records the start; false if
/// it fits nowhere.
bool place_base(const cluster_ledger& l, const policy_spec& p, const planner_options& o, uint32_t id,
                round_context& c, work_view& view, work_view& hard) {
  auto& b = c;
  auto& j = l.jobs[id];
  std::optional<allocation> a;
  auto& types = b.scratch.types;
  types_for(l, j, o, types);
  const int demand = base_demand(j, p);
  int type = -1;
  bool on_hard = false;
  if (o.free_gpus_first) {
    for (int t : types)
      if ((a = base_on(l, p, o, j, demand, hard, t, b.scratch))) {
        type = t;
        on_hard = true;
        break;
      }
    if (!a)
      for (int t : types)
        if ((a = base_on(l, p, o, j, demand, view, t, b.scratch))) {
          type = t;
          break;
        }
  } else {
    for (int t : types) {
      if ((a = base_on(l, p, o, j, demand, hard, t, b.scratch)) || (a = base_on(l, p, o, j, demand, view, t, b.scratch))) {
        type = t;
        break;
      }
    }
  }
  if (!a) return false;
  const int fast = types.front();
  if (o.preempt_for_speed && o.preempt_ratio > 0 && speed(l, fast) > speed(l, type)) {
    // Free GPUs come first, so a start on a slower type's free GPUs has not yet looked at the
    // fastest type's extras; otherwise the fastest type was tried in full before.
    const bool fast_holds = o.free_gpus_first && on_hard && base_on(l, p, o, j, demand, view, fast, b.scratch);
    if (!fast_holds && preempt_for_speed(l, p, o, id, demand, fast, type, c, view, hard)) return true;
  }
  start_on(l, p, id, std::move(*a), c.made, view, hard);
  return true;
}

} // namespace

void place_on_loaned(const cluster_ledger& l, const policy_spec& p, const planner_options& o, round_context& c,
                     work_view& view, work_view& hard) {
  const auto& books = c.walk.books;
  auto& types = c.scratch.types;
  auto& slots = c.scratch.slots;
  for (size_t i = 0; i < books.passed.size(); ++i) {
    const uint32_t id = books.passed[i];
    auto& j = l.jobs[id];
    // Once per job: a round may walk the queue more than once.
    if (std::find(books.passed.begin(), books.passed.begin() + static_cast<long>(i), id) !=
            books.passed.begin() + static_cast<long>(i) ||
        !(j.elastic || o.inelastic_on_loaned))
      continue;
    const int demand = base_workers(j, p);
    types_for(l, j, o, types);
    std::optional<allocation> a;
    for (int t : types) {
      hard.slots(j, p, o, t, slots);
      std::erase_if(slots, [&](auto& x) { return l.servers[static_cast<size_t>(x.id)].mode != server_mode::loaned; });
      if ((a = place_one(o.placement, slots, {static_cast<int>(j.index), demand, t, {}}))) break;
    }
    if (a) start_on(l, p, id, std::move(*a), c.made, view, hard);
  }
}

/// Step 1 for queued job `id`: room for its base demand, by placing it, reclaiming its
/// tenant's quota, or preempting; false if none.
bool find_room(const cluster_ledger& l, const policy_spec& p, const planner_options& o, uint32_t id, round_context& c,
               work_view& view, work_view& hard) {
  if (c.walk.books.own_victims_only >= 0) return priority_preempt_for(l, p, o, id, c, view, hard);
  return place_base(l, p, o, id, c, view, hard) || quota_reclaim_for(l, p, o, id, c, view, hard) ||
         preempt_for(l, p, o, id, c, view, hard) || priority_preempt_for(l, p, o, id, c, view, hard);
}

/// The views of a round: `view` counts every elastic job's extra workers free, `hard` only
/// the GPUs really free.
void build_views(const policy_spec& p, work_view& view, work_view& hard) {
  hard.reset(false);
  view.reset(p.elastic);
}

/// A queued job's base demand on GPUs really free now, from the ledger (its free-GPU index
/// where the request fits one server), in the order of step 1.
std::optional<std::pair<allocation, int>> place_on_free(const cluster_ledger& l, const policy_spec& p,
                                                        const planner_options& o, const job_entry& j,
                                                        round_scratch& scr) {
  auto& types = scr.types;
  types_for(l, j, o, types);
  const int demand = j.elastic ? base_workers(j, p) : j.gpus;
  const bool loaned = p.loaning && (j.elastic || o.inelastic_on_loaned);
  for (int type : types) {
    if (o.placement == placement_mode::consolidated && demand >= 1 && demand <= l.smallest_server(type)) {
      const int room = grow_room(l, p, o, j, type);
      int sid = room > demand ? l.best_fit(type, room, loaned) : -1;
      if (sid < 0) sid = l.best_fit(type, demand, loaned);
      if (sid >= 0) return std::make_pair(allocation{{sid, demand}}, type);
      continue;
    }
    auto& slots = scr.slots;
    slots.clear();
    for (auto& s : l.servers)
      if (s.gpu_type == type && usable_for(s, j, p, o)) slots.push_back({s.id, s.gpu_type, s.gpus, s.free});
    if (auto a = place_one(o.placement, slots, {static_cast<int>(j.index), demand, type, {}})) return std::make_pair(std::move(*a), type);
  }
  return std::nullopt;
}

} // namespace aryl::detail
