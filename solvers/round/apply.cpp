// Step 5 of a round (docs/round.md, "The steps"): the result is diffed against the ledger, and
// only jobs whose allocation changes get a decision, applied as one batch; and a round that
// does not size the running jobs scales in those whose extra workers' GPUs its starts took.
#include <algorithm>
#include <string>

#include "solvers/reason_text.hpp"
#include "solvers/round/steps.hpp"

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

} // namespace

void apply_round(cluster_ledger& l, sim_time now, round_plans& made, round_scratch& s, std::vector<decision>& out,
                 const char* start_why) {
  auto& changes = s.changes;
  for (auto& c : changes) made.spare_allocs.push_back(std::move(c.alloc));
  changes.clear();
  for (auto& v : made.victims) {
    auto before = l.jobs[v.job].alloc;
    l.preempt(v.job, now);
    if (v.why.rfind("priority:", 0) == 0) ++l.jobs[v.job].priority_preemptions;
    out.push_back({decision::kind::preempt, v.job, {}, std::move(before), -1, std::move(v.why)});
  }
  made.victims.clear();
  for (auto& e : made.plans) {
    if (e.started) continue;
    auto id = e.job;
    auto& j = l.jobs[id];
    auto& fin = e.final;
    if (fin == j.alloc && e.type == j.alloc_type) continue;
    out.push_back({decision::kind::rescale, id, fin, j.alloc, e.type, change_reason(l, e, j, count_workers(fin))});
    changes.push_back({id, made.spare_alloc(), e.type});
    changes.back().alloc.assign(fin.begin(), fin.end());
  }
  l.reassign(changes, now);
  for (auto& st : made.starts) {
    auto& alloc = st.plan >= 0 ? made.plans[static_cast<size_t>(st.plan)].final : st.alloc;
    int type = type_of(l, alloc);
    l.start(st.job, alloc, type, now);
    out.push_back({decision::kind::start, st.job, alloc, {}, type, start_why});
  }
}

/// The longest predicted remaining time keep their extras, which save them the most; no
/// other job changes.
void scale_in_losers(const cluster_ledger& l, const policy_spec& p, const work_view& view, round_plans& made,
                     round_scratch& scr) {
  // Only servers this round took GPUs from can have lost extra workers' GPUs; in id order.
  auto& losers = scr.losers;
  auto& changed = scr.changed;
  changed.assign(view.touched.begin(), view.touched.end());
  std::sort(changed.begin(), changed.end());
  for (int sid : changed) {
    auto& s = l.servers[static_cast<size_t>(sid)];
    if (!p.elastic || s.extra == 0) continue;
    // Jobs this round stops for a queued one gave all their GPUs back: their extras need none.
    auto stopped = [&](uint32_t id) { return made.stopped(id); };
    auto extra_here = [&](uint32_t id) {
      base_of(l.jobs[id], p, scr.base);
      int extra = 0;
      for_each_extra(l.jobs[id].alloc, scr.base, [&](int x, int w) {
        if (x == s.id) extra = w;
      });
      return extra;
    };
    int extras = s.extra;
    if (!made.victims.empty())
      for (auto id : s.jobs)
        if (l.jobs[id].elastic && stopped(id)) extras -= extra_here(id);
    int lost = extras - std::min(extras, view.at(sid));
    if (lost <= 0) continue;
    losers.clear();
    for (auto id : s.jobs)
      if (l.jobs[id].elastic && !stopped(id)) losers.push_back(id);
    std::sort(losers.begin(), losers.end(), [&](uint32_t x, uint32_t y) {  // a total order
      auto rx = l.jobs[x].predicted_remaining(), ry = l.jobs[y].predicted_remaining();
      return rx < ry || (rx == ry && x > y);
    });
    for (auto id : losers) {
      if (lost == 0) break;
      auto& j = l.jobs[id];
      const int extra = extra_here(id);
      if (extra == 0) continue;
      // The job's plan: found if an earlier server already shrank it.
      auto it = std::find_if(made.plans.begin(), made.plans.end(), [&](auto& e) { return e.job == id && !e.started; });
      if (it == made.plans.end()) {
        made.plans.push_back(elastic_plan{id, {}, j.alloc_type, j.workers, false, j.alloc});
        it = made.plans.end() - 1;
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

} // namespace aryl::detail
