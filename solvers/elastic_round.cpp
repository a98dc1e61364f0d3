// Rounds of policies with elastic scaling (docs/round.md, "The steps"), planned on a working copy of
// the free GPUs in which every elastic job's workers above its minimum count as free:
//  1. base demand of queued jobs in queue order (min workers for elastic jobs), so a queued
//     job never waits for GPUs that only extend an elastic job;
//  2. when the queue is empty, elastic jobs on slower GPU types move to faster free ones if
//     the move pays for its restart; then (2b) a job spread over more servers than its workers
//     need moves onto fewer free ones if the faster rate pays for the change;
//  3. the free GPUs of each type go to elastic jobs by the multiple-choice knapsack on JCT
//     reductions, where keeping a job's current size costs nothing and changing it costs the
//     scaling overhead, each size valued at the rate of the servers its extras will span;
//  4. extra workers go on the fewest servers that hold them;
//  5. the result is diffed against the ledger: only jobs whose allocation changes get a
//     decision, applied as one batch.
// Running elastic jobs are planned after step 1, except those no later step could change or
// let change another job's outcome (inert()). A local round (between scale rounds) does step
// 1 only, and scales in just the jobs whose extra workers' GPUs it takes.
#include <algorithm>
#include <limits>
#include <optional>
#include <string>

#include "solvers/backfill_bar.hpp"
#include "solvers/jct_value.hpp"
#include "solvers/priorities.hpp"
#include "solvers/reason_text.hpp"
#include "solvers/round_state.hpp"

namespace aryl::detail {
namespace {

/// Why plan `e` changes job `j` to `workers` workers, with the gain and the cost that
/// justified it (seconds of predicted JCT).
std::string change_reason(const cluster_ledger& l, const elastic_plan& e, const job_entry& j, int workers) {
  const char* what = workers > j.workers ? "scale out" : workers < j.workers ? "scale in" : "rebalance";
  if (e.quota_growth)
    return reason_text("grow to its requested size within its tenant's quota: gains ", whole{e.net_s},
                       " s of predicted JCT after its cost (", whole{e.cost_s}, " s, stops included) and margin");
  if (e.consolidated)
    return reason_text("consolidate onto ", servers_spanned(e.final), " servers from ", servers_spanned(j.alloc),
                       ": gains ", whole{e.net_s}, " s of predicted JCT after its cost (", whole{e.cost_s},
                       " s) and margin, over an expected hold of ", whole{e.hold_s}, " s");
  if (e.type != j.alloc_type)
    return reason_text("move to faster free GPUs: saves ", whole{e.net_s}, " s of predicted JCT beyond its restart (",
                       whole{e.cost_s}, " s) and margin");
  if (e.forced && e.frozen)  // a round that did not value sizes (scale_in_losers)
    return reason_text(what,
                       ": queued base demand took GPUs of its extra workers (on a server where several jobs have "
                       "extras, the shortest predicted remaining time gives them up first)");
  if (e.forced)
    return reason_text(what, ": queued base demand took GPUs of its extra workers; its best size left is worth ",
                       whole{e.net_s}, " s after its cost (",
                       whole{l.params.scale_overhead_s + l.checkpoint_time_s(j.workers)}, " s)");
  if (e.traded_s >= 0) {  // the knapsack's choice costs this job: the others gain more
    auto why = reason_text(what, ": the round's sizes save ", whole{e.traded_s},
                           " s more of predicted JCT than the best that keeps its size; it loses ", whole{-e.net_s},
                           " s after its cost (", whole{e.cost_s}, " s) and margin");
    if (e.hold_s > 0) append_text(why, ", over an expected hold of ", whole{e.hold_s}, " s");
    return why;
  }
  if (e.hold_s > 0)
    return reason_text(what, ": gains ", whole{e.net_s}, " s of predicted JCT over keeping its size, after its cost (",
                       whole{e.cost_s}, " s) and margin, over an expected hold of ", whole{e.hold_s}, " s");
  return reason_text(what, ": gains ", whole{e.net_s}, " s of predicted JCT over keeping its size (to its end), after its cost (",
                     whole{e.cost_s}, " s) and margin");
}

/// After the knapsack (step 3), for each job the solution `sol` changes at a loss to itself
/// (its chosen item worth less than keeping its size): how much more the round's sizes save
/// than the best solution that keeps its size, into its traded_s, for its decision's reason.
/// That solution is found by solving again with the job's class held to its kept item,
/// raised by a constant no total without it reaches (none: it keeps its minimum, the empty
/// choice), then restored.
void price_trades(const cluster_ledger& l, std::vector<elastic_plan>& plans, const std::vector<size_t>& class_plan,
                  mckp_input& in, const mckp_result& sol) {
  constexpr double raise = 1e12;
  auto& b = buffers;
  for (size_t c = 0; c < class_plan.size(); ++c) {
    auto& e = plans[class_plan[c]];
    auto& j = l.jobs[e.job];
    if (e.started || e.forced || e.type != j.alloc_type) continue;
    const double keep_v = e.net_s;  // step 3 left there what keeping its size is worth
    const double chosen = sol.choice[c] < 0 ? 0 : in.classes[c].items[static_cast<size_t>(sol.choice[c])].value;
    if (chosen >= keep_v) continue;
    const int keep_w = e.current - j.min_workers;
    auto& items = in.classes[c].items;
    b.held_items.swap(items);
    items.clear();
    if (keep_w > 0) items.push_back({keep_w, keep_v + raise});
    solve_mckp(in, b.alt_sol);
    items.swap(b.held_items);
    // Its extras have their GPUs (not forced), so the knapsack can always keep its size.
    if (keep_w > 0 && b.alt_sol.choice[c] != 0) continue;
    e.traded_s = std::max(0.0, sol.value - (b.alt_sol.value - (keep_w > 0 ? raise : 0)));
  }
}

/// Applies a round: changed running jobs as one batch, then the starts.
void apply(cluster_ledger& l, sim_time now, std::vector<decision>& out, const char* start_why) {
  auto& b = buffers;
  auto& changes = b.changes;
  for (auto& c : changes) b.spare_allocs.push_back(std::move(c.alloc));
  changes.clear();
  for (auto& v : b.victims) {
    auto before = l.jobs[v.job].alloc;
    l.preempt(v.job, now);
    if (v.why.rfind("priority:", 0) == 0) ++l.jobs[v.job].priority_preemptions;
    out.push_back({decision::kind::preempt, v.job, {}, std::move(before), -1, std::move(v.why)});
  }
  b.victims.clear();
  for (auto& e : b.plans) {
    if (e.started) continue;
    auto id = e.job;
    auto& j = l.jobs[id];
    auto& fin = e.final;
    if (fin == j.alloc && e.type == j.alloc_type) continue;
    out.push_back({decision::kind::rescale, id, fin, j.alloc, e.type, change_reason(l, e, j, count_workers(fin))});
    changes.push_back({id, b.spare_alloc(), e.type});
    changes.back().alloc.assign(fin.begin(), fin.end());
  }
  l.reassign(changes, now);
  for (auto& s : b.starts) {
    auto& alloc = s.plan >= 0 ? b.plans[static_cast<size_t>(s.plan)].final : s.alloc;
    int type = type_of(l, alloc);
    l.start(s.job, alloc, type, now);
    out.push_back({decision::kind::start, s.job, alloc, {}, type, start_why});
  }
}

/// Where this round's starts took GPUs of extra workers, those jobs scale in: the shortest
/// predicted remaining time first (the longest keep their extras, which save them the most);
/// no other job changes. Their plans are frozen at that size.
void scale_in_losers(const cluster_ledger& l, const policy_spec& p, const work_view& view) {
  auto& b = buffers;
  // Only servers this round took GPUs from can have lost extra workers' GPUs; in id order.
  auto& losers = b.losers;
  auto& changed = b.changed;
  changed.assign(view.touched.begin(), view.touched.end());
  std::sort(changed.begin(), changed.end());
  for (int sid : changed) {
    auto& s = l.servers[static_cast<size_t>(sid)];
    if (!p.elastic || s.extra == 0) continue;
    // Jobs this round stops for a queued one gave all their GPUs back: their extras need none.
    auto stopped = [&](uint32_t id) {
      return std::any_of(b.victims.begin(), b.victims.end(), [&](auto& v) { return v.job == id; });
    };
    auto extra_here = [&](uint32_t id) {
      base_of(l.jobs[id], p, b.base);
      int extra = 0;
      for_each_extra(l.jobs[id].alloc, b.base, [&](int x, int w) {
        if (x == s.id) extra = w;
      });
      return extra;
    };
    int extras = s.extra;
    if (!b.victims.empty())
      for (auto id : s.jobs)
        if (l.jobs[id].elastic && stopped(id)) extras -= extra_here(id);
    int lost = extras - std::min(extras, view.at(sid));
    if (lost <= 0) continue;
    losers.clear();
    for (auto id : s.jobs)
      if (l.jobs[id].elastic && !stopped(id)) losers.push_back(id);
    std::sort(losers.begin(), losers.end(), [&](uint32_t x, uint32_t y) {  // a total order
      bool px = b.is_protected(x), py = b.is_protected(y);
      if (px != py) return py;
      auto rx = l.jobs[x].predicted_remaining(), ry = l.jobs[y].predicted_remaining();
      return rx < ry || (rx == ry && x > y);
    });
    for (auto id : losers) {
      if (lost == 0) break;
      auto& j = l.jobs[id];
      const int extra = extra_here(id);
      if (extra == 0) continue;
      // The job's plan: found if an earlier server already shrank it.
      auto it = std::find_if(b.plans.begin(), b.plans.end(), [&](auto& e) { return e.job == id && !e.started; });
      if (it == b.plans.end()) {
        b.plans.push_back(elastic_plan{id, {}, j.alloc_type, j.workers, false, j.alloc});
        it = b.plans.end() - 1;
        it->forced = true;
        it->frozen = true;
      }
      int k = std::min(extra, lost);
      lost -= k;
      for (auto& [sid, w] : it->final)
        if (sid == s.id) w -= k;
      std::erase_if(it->final, [](auto& sw) { return sw.second == 0; });
    }
  }
}

/// Where a move of elastic job `j` puts `w` workers of `type` in view `v`: place_one's pick.
/// A size that fits one server is read from the view's index (best_fit is place_one's
/// consolidated rule); a larger one needs a server with the smallest server's GPUs free
/// before the pass over every server. Moves are tried in every round for each job on a
/// slower type while a faster one has room.
std::optional<allocation> place_move(const cluster_ledger& l, const policy_spec& p, const planner_options& o,
                                     const job_entry& j, const work_view& v, int type, int w) {
  if (o.placement == placement_mode::consolidated) {
    const int smallest = l.smallest_server(type);
    if (w <= smallest) {
      const int sid = v.best_fit(type, w, p.loaning);
      if (sid < 0) return std::nullopt;
      return allocation{{sid, w}};
    }
    if (v.best_fit(type, smallest, p.loaning) < 0) return std::nullopt;
  }
  auto& slots = v.slots(j, p, o, type, buffers.slots);
  return place_one(o.placement, slots, {static_cast<int>(j.index), w, type, {}});
}

} // namespace

void plan_local(cluster_ledger& l, const policy_spec& p, const planner_options& o, sim_time now,
                std::vector<decision>& out) {
  auto& b = buffers;
  b.recycle();
  b.starts.clear();
  b.victims.clear();
  work_view view{l, b.free_view, b.stamp_view, b.touched_view, b.epoch_view},
      hard{l, b.free_hard, b.stamp_hard, b.touched_hard, b.epoch_hard};
  // Jobs that fit on GPUs really free start at once, found from the ledger's index; the
  // views are built only when a job needs extra workers' GPUs. From then on the round
  // continues as step 1 of a full round does.
  const char* why = "shortest predicted job that fits its base demand (sizes wait for the scale round)";
  // Servers held for a job queued past reserve_after_s stay held (the free-GPU index does not
  // know them, so the views from the start), except for that job itself.
  bool viewing = !o.free_gpus_first || !l.reserved_servers.empty();
  if (viewing) build_views(p, view, hard);
  if (!l.reserved_servers.empty()) {
    // The job they are held for goes first, on them too; if it still finds no room, they stay
    // held for the rest of the round.
    const uint32_t id = l.reserved_for;
    b.promoted.push_back(id);
    if (l.queued.count(id) == 0 || find_room(l, p, holder_options(o), id, view, hard))
      l.reserved_servers.clear();  // it started, or left the queue (cancelled)
    for (int sid : l.reserved_servers) hold_server(sid, view, hard);
  }
  walk_queue(l, p, [&](uint32_t id) {
    if (!b.promoted.empty() && b.promoted.front() == id) return true;
    if (!viewing) {
      if (auto a = place_on_free(l, p, o, l.jobs[id])) {
        l.start(id, a->first, a->second, now);
        b.started_now.push_back(id);
        out.push_back({decision::kind::start, id, std::move(a->first), {}, a->second, why});
        return true;
      }
      viewing = true;
      build_views(p, view, hard);
    }
    // Strict even when backfilling: what fits behind a job that finds no room waits for the
    // next full or starts round, so backfilling walks the queue once per freeing of GPUs, not
    // once per arrival (docs/preemption.md, "Backfill").
    return find_room(l, p, o, id, view, hard);
  });
  if (!viewing) return;
  unprotect(view);
  release_reserved(view);
  for (auto& e : b.plans) e.final = e.base;  // jobs started now run at their base
  scale_in_losers(l, p, view);
  apply(l, now, out, why);
}

void plan_elastic(cluster_ledger& l, const policy_spec& p, const planner_options& o, sim_time now,
                  std::vector<decision>& out, bool starts_only) {
  auto& b = buffers;
  work_view view{l, b.free_view, b.stamp_view, b.touched_view, b.epoch_view},
      hard{l, b.free_hard, b.stamp_hard, b.touched_hard, b.epoch_hard};
  b.recycle();
  b.starts.clear();
  b.victims.clear();
  build_views(p, view, hard);
  // 1. Base demand in queue order, after the jobs queued past reserve_after_s or
  // reserve_stretch.
  bool queue_cleared = true;
  const bool backfill = backfills(p, o);
  l.reserved_servers.clear();
  double shadow_s = 0;
  if (o.reserve_after_s > 0 || o.reserve_stretch > 0) {
    const planner_options holder = holder_options(o);
    std::optional<long> top_class;
    walk_queue(l, p, [&](uint32_t id) {
      if (l.params.priorities) {
        // Classes come first: a job below the queue's highest class holds no servers.
        const long c = effective_class(l.jobs[id], l.round_at, l.params.priority_aging_s);
        if (!top_class) top_class = c;
        if (c < *top_class) return false;
      }
      if (!reserves(l.jobs[id], o, now)) return true;
      b.promoted.push_back(id);
      if (find_room(l, p, holder, id, view, hard)) return true;
      queue_cleared = false;
      shadow_s = reserve_for(l, p, holder, l.jobs[id], view, hard);
      l.reserved_for = id;
      for (auto& r : b.reserved) l.reserved_servers.push_back(std::get<0>(r));
      return false;  // one reservation a round: the first such job in queue order
    });
  }
  auto walk = [&](auto&& may_try) {
    no_room_bar bar(l, p, o);
    walk_queue(l, p, [&](uint32_t id) {
      if (!b.promoted.empty() && std::find(b.promoted.begin(), b.promoted.end(), id) != b.promoted.end()) return true;
      if (!may_try(id)) return true;
      if (backfill && bar.passes_over(l.jobs[id])) {
        queue_cleared = false;
        return true;
      }
      if (find_room(l, p, o, id, view, hard)) return true;
      queue_cleared = false;
      return backfill && bar.record(l.jobs[id]);
    });
  };
  walk([](uint32_t) { return true; });
  if (l.params.quotas && p.loaning) place_on_loaned(l, p, o, view, hard);
  if (backfill && o.shadow_backfill && !l.reserved_servers.empty() && shadow_s > 0 &&
      shadow_s < std::numeric_limits<double>::infinity()) {
    // EASY's shadow time: a job that found no room may still start on the held servers if it
    // is predicted to end before they would hold the waiting job, so holding idles fewer
    // GPUs without delaying it (as far as the predictions hold).
    unhold_all(view, hard);
    const double sp = speed(l, l.servers[static_cast<size_t>(l.reserved_servers.front())].gpu_type);
    walk([&](uint32_t id) {
      if (std::any_of(b.starts.begin(), b.starts.end(), [&](auto& st) { return st.job == id; })) return false;
      auto& j = l.jobs[id];
      const double rate = work_rate(l.params.model, j.gpus, base_demand(j, p), 1, sp);
      return rate > 0 && j.predicted_remaining() / rate <= shadow_s;
    });
    for (int sid : l.reserved_servers) hold_server(sid, view, hard);
  }
  unprotect(view);
  release_reserved(view);
  // A round that sizes only its starts (round_scope::starts): the running jobs keep what they
  // hold, less the extras its starts took; the starts share the GPUs really free.
  if (starts_only) {
    scale_in_losers(l, p, view);
  } else {
    plan_running(l, p, o, view, hard);
    own_quota_growth(l, p, o, now, view, hard);
  }
  auto& plans = b.plans;
  auto base_workers = [&](const job_entry& j) { return aryl::detail::base_workers(j, p); };

  // 2. Moves off slower GPU types, longest predicted remaining time first.
  if (!starts_only && o.migrate && (queue_cleared || !o.migrate_only_when_queue_empty)) {
    auto& slow = b.slow;
    slow.clear();
    double best = 0;
    for (auto s : l.params.type_speed) best = std::max(best, s);
    for (size_t i = 0; i < plans.size(); ++i)
      if (!plans[i].started && speed(l, plans[i].type) < best)
        slow.emplace_back(-l.jobs[plans[i].job].predicted_remaining(), i);
    std::sort(slow.begin(), slow.end());
    // Free GPUs per type on the servers elastic jobs may use, kept as moves take them.
    auto& hard_type_free = b.hard_type_free;
    auto& view_type_free = b.view_type_free;
    hard_type_free.assign(l.params.type_speed.size(), 0);
    view_type_free.assign(l.params.type_speed.size(), 0);
    if (!slow.empty())  // the servers an elastic job may use: training, and loaned ones when loaning
      for (size_t t = 0; t < hard_type_free.size(); ++t) {
        hard_type_free[t] = static_cast<int>(hard.total(static_cast<int>(t), p.loaning));
        view_type_free[t] = static_cast<int>(view.total(static_cast<int>(t), p.loaning));
      }
    for (auto& [neg_rem, i] : slow) {
      auto& e = plans[i];
      auto id = e.job;
      auto& j = l.jobs[id];
      double rem = -neg_rem;
      double t_now = -1;  // computed when some faster type has room: most rounds none has
      auto t_new = [&](int type, int servers, int workers) {
        return l.params.restart_overhead_s +
               remaining_time_s(l.params.model, rem, j.gpus, workers, servers, speed(l, type));
      };
      // A job grown on the slow type moves with its size where the fast GPUs hold it (kept
      // there as it is, out of this round's knapsack), else at its base.
      const int sized = o.move_with_size && p.elastic ? std::min(e.current, j.max_workers) : base_workers(j);
      std::optional<allocation> a;
      int moved_workers = 0;
      for (size_t t = 0; t < l.params.type_speed.size() && !a; ++t) {
        int type = static_cast<int>(t);
        // A job pinned to a GPU type (its gpu_type) never moves off it, however fast another is.
        if (speed(l, type) <= speed(l, e.type) || (j.gpu_type >= 0 && type != j.gpu_type)) continue;
        // Only onto GPUs that are really free: a move never takes GPUs from other jobs.
        auto& target = o.migrate_onto_extras ? view : hard;
        auto& target_free = o.migrate_onto_extras ? view_type_free : hard_type_free;
        const int sizes[2] = {std::max(sized, base_workers(j)), base_workers(j)};
        for (int k = 0; k < (sizes[0] > sizes[1] ? 2 : 1); ++k) {
          const int w = sizes[k];
          if (target_free[t] < w) continue;  // most rounds: the fast GPUs are all busy
          if (t_now < 0)
            t_now = remaining_time_s(l.params.model, rem, j.gpus, e.current, servers_spanned(j.alloc), speed(l, e.type));
          // One server is the best any placement gives: no need to place where that cannot pay.
          if (t_now - t_new(type, 1, w) <= o.migrate_min_gain_s) continue;
          a = place_move(l, p, o, j, target, type, w);
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
        view_type_free[static_cast<size_t>(e.type)] += count_workers(e.base);
        view_type_free[t] -= count_workers(*a);
        for (auto& [sid, w] : *a) {
          auto& f = hard.at_mut(sid);
          hard_type_free[t] -= std::min(std::max(f, 0), w);
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
  }

  // 2b. Consolidation: a job whose workers span more servers than their count needs moves
  // onto fewer, on GPUs really free now and its own, when the rate it gains over the time it
  // is expected to keep its size pays for the change (overhead, checkpoint) and the margin.
  if (!starts_only && consolidates(p, o))
    consolidate(l, p, o, now, view, hard);

  // 3. Scale-out knapsack over what is left, per GPU type. A job within its cooldown whose
  // extra workers all still have their GPUs keeps them (no voluntary change), and is left
  // out of the knapsack.
  if (!starts_only && p.elastic && o.rescale_cooldown_s > 0)
    for (auto& e : plans) {
      auto& j = l.jobs[e.job];
      if (e.started || e.type != j.alloc_type || e.current <= j.min_workers) continue;
      if ((now - j.resized_at).seconds() >= o.rescale_cooldown_s) continue;
      bool intact = true;
      for_each_extra(j.alloc, e.base, [&](int sid, int w) { intact = intact && view.at(sid) >= w; });
      if (!intact) continue;
      auto& kept = b.kept;
      kept.clear();
      for_each_extra(j.alloc, e.base, [&](int sid, int w) { kept.emplace_back(sid, w); });
      view.take(kept);
      e.final = e.base;
      merge_into(e.final, kept);
      e.frozen = true;
    }
  // The GPUs the knapsack shares: with extra workers' counted free, or only those really free
  // when the running jobs are not re-planned.
  work_view& kv = starts_only ? hard : view;
  auto& in = b.in;
  in.capacity.assign(l.params.type_speed.size(), 0);
  for (size_t t = 0; t < in.capacity.size(); ++t) in.capacity[t] = static_cast<int>(kv.total(static_cast<int>(t), p.loaning));
  b.hold_by_type.clear();
  for (size_t t = 0; t < l.params.type_speed.size(); ++t)
    b.hold_by_type.push_back(l.hold_estimate(static_cast<int>(t), now));
  auto& class_plan = b.class_plan;
  class_plan.clear();
  const bool share_falls = falling_share(l.params.model);
  for (size_t i = 0; i < plans.size(); ++i) {
    auto& e = plans[i];
    auto& j = l.jobs[e.job];
    if (!p.elastic || j.max_workers <= j.min_workers || e.frozen) continue;
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
    if (in.capacity[static_cast<size_t>(e.type)] == 0) continue;
    int current = e.current;
    const int home_span = servers_spanned(e.base);
    const bool hold = o.horizon == scale_horizon::hold;
    const double t_min = hold ? 0 : remaining_time_s(l.params.model, rem, j.gpus, j.min_workers, home_span, sp);
    mckp_class c{b.spare_item_list(), e.type};
    // No job can take more extra workers than its type has free GPUs: items past that could
    // never be chosen, and a trace's max_workers may be far beyond the cluster.
    const int top = std::min(j.max_workers, j.min_workers + in.capacity[static_cast<size_t>(e.type)]);
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
    const double r_min = work_rate(l.params.model, j.gpus, j.min_workers, base_span, sp);
    // Its requested size's term taken once for every size below.
    const double base_rate = requested_base(l.params.model, j.gpus);
    const double hold_s = hold ? b.hold_by_type[static_cast<size_t>(e.type)] : 0;
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
    in.classes.push_back(std::move(c));
    class_plan.push_back(i);
  }
  auto& sol = b.sol;
  // The knapsack takes an item only if it raises the total: with no item worth more than
  // nothing (most rounds), every class keeps its empty choice.
  bool worth_solving = false;
  for (auto& c : in.classes)
    for (auto& it : c.items) worth_solving = worth_solving || it.value > 0;
  if (worth_solving) {
    solve_mckp(in, sol);
    price_trades(l, plans, class_plan, in, sol);
  } else {
    sol.value = 0;
    sol.choice.assign(in.classes.size(), -1);
  }

  // 4. Extra workers. A job that keeps its size and still has all its GPUs keeps exactly its
  // allocation (the knapsack charged it no overhead, and any other change costs one). The
  // others' extras go on the fewest servers that hold them, largest first (ties: class
  // order), so that big demands find room before small ones split the free servers.
  auto& still_needed = b.still_needed;  // (plan, extra workers)
  still_needed.clear();
  for (auto& e : plans)
    if (!e.frozen) e.final = e.base;
  for (size_t c = 0; c < class_plan.size(); ++c) {
    auto& e = plans[class_plan[c]];
    auto& j = l.jobs[e.job];
    // Net gain over keeping its size: the chosen item's value (or the empty choice's, 0)
    // less what keeping was worth.
    if (e.started || e.type == j.alloc_type)
      e.net_s = (sol.choice[c] < 0 ? 0 : in.classes[c].items[static_cast<size_t>(sol.choice[c])].value) - e.net_s;
    if (sol.choice[c] < 0) continue;
    int extra = in.classes[c].items[static_cast<size_t>(sol.choice[c])].weight;
    if (!e.started && e.type == j.alloc_type && j.min_workers + extra == e.current) {
      auto& kept = b.kept;
      kept.clear();
      bool fits = true;
      for_each_extra(j.alloc, e.base, [&](int sid, int w) {
        kept.emplace_back(sid, w);
        fits = fits && kv.at(sid) >= w;
      });
      if (fits) {
        kv.take(kept);
        merge_into(e.final, kept);
        continue;
      }
    }
    still_needed.emplace_back(class_plan[c], extra);
  }
  // Listed in plan order: largest first, ties by plan, is the order a stable sort gives.
  std::sort(still_needed.begin(), still_needed.end(),
            [](auto& x, auto& y) { return x.second > y.second || (x.second == y.second && x.first < y.first); });
  // The servers with GPUs left, per type, listed once: place_extras takes from this list as
  // from the view, and servers without free GPUs change nothing in where extras go, so one
  // list serves every job of the type instead of a pass over all servers per job. Listed
  // when a job's extras first need servers beyond its own (most rounds none does), from the
  // view as it then stands: the same list the view's takes would have left of an earlier
  // one, but for servers left with none, which place_extras passes over.
  auto& left = b.extra_slots;
  left.resize(l.params.type_speed.size());
  for (auto& v : left) v.clear();
  b.listed.assign(left.size(), 0);
  for (auto& [i, extra] : still_needed) {
    auto& e = plans[i];
    auto& j = l.jobs[e.job];
    auto t = static_cast<size_t>(e.type);
    extras_for(e, j, extra, b.scratch, b.extras);
    bool placed = false;
    if (!b.listed[t]) {
      auto& home = b.home_slots;
      home.clear();
      for (int sid : b.extras.home) {
        auto& s = l.servers[static_cast<size_t>(sid)];
        const int f = kv.at(sid);
        if (s.gpu_type == e.type && f > 0 && usable_for(s, j, p, o) &&
            std::none_of(home.begin(), home.end(), [sid](auto& x) { return x.id == sid; }))
          home.push_back({sid, s.gpu_type, s.gpus, f});
      }
      placed = place_extras(home, b.extras, b.placed);
    }
    if (!placed) {
      if (!b.listed[t]) {
        b.listed[t] = 1;
        for (auto& s : l.servers) {
          if (s.gpu_type != e.type) continue;
          const int f = kv.at(s.id);
          if (f > 0 && usable_for(s, j, p, o)) left[t].push_back({s.id, s.gpu_type, s.gpus, f});
        }
      }
      if (!place_extras(left[t], b.extras, b.placed)) continue;  // cannot happen: the capacity counted these GPUs
    }
    // The knapsack valued each size at the span the job would have alone; other jobs' extras
    // may have taken its room. If the servers it really gets leave its GPUs below the
    // efficiency floor, it keeps only the extras on its base's servers.
    if (o.min_extra_efficiency > 0 && p.elastic) {
      allocation& trial = b.kept;
      trial.assign(e.final.begin(), e.final.end());
      merge_into(trial, b.placed);
      const int w = count_workers(trial);
      const double sp = speed(l, e.type);
      const double r_min = work_rate(l.params.model, j.gpus, j.min_workers, std::max(servers_spanned(e.base), 1), sp);
      const double r_w = work_rate(l.params.model, j.gpus, w, servers_spanned(trial), sp);
      if (r_w * j.min_workers < o.min_extra_efficiency * r_min * w) {
        for (auto& [sid, k] : b.placed) {
          bool home = std::any_of(e.base.begin(), e.base.end(), [sid = sid](auto& x) { return x.first == sid; });
          if (home) continue;
          auto slot = std::find_if(left[t].begin(), left[t].end(), [sid = sid](auto& x) { return x.id == sid; });
          if (slot != left[t].end()) slot->free += k;
          else left[t].push_back({sid, e.type, l.servers[static_cast<size_t>(sid)].gpus, k});
          k = 0;
        }
        std::erase_if(b.placed, [](auto& x) { return x.second == 0; });
      }
    }
    kv.take(b.placed);
    merge_into(e.final, b.placed);
  }

  apply(l, now, out, "shortest predicted job that fits its base demand");
}

} // namespace aryl::detail
