// Step 4 of a full round (docs/round.md, "The steps"): a job that keeps its size and
// still has all its GPUs keeps exactly its allocation (the knapsack charged it no overhead,
// and any other change costs one); the others' extras go on the fewest servers that hold
// them, largest first (ties: class order), so that big demands find room before small ones
// split the free servers.
#include <algorithm>

#include "solvers/round/steps.hpp"

namespace aryl::detail {
namespace {

/// Each plan's final allocation starts at its base (a frozen one keeps its own); each job the
/// knapsack keeps at its size with all its GPUs there keeps its extras where they are; the
/// others' chosen extra workers, largest first, into `still_needed` (plan, extra workers).
/// Sets each sized plan's net gain over keeping its size (elastic_plan::net_s).
void keep_or_list(const cluster_ledger& l, const sizing_state& z, work_view& kv, std::vector<elastic_plan>& plans,
                  round_scratch& s) {
  auto& still_needed = s.still_needed;
  still_needed.clear();
  for (auto& e : plans)
    if (!e.frozen) e.final = e.base;
  const auto& in = z.in;
  const auto& sol = z.sol;
  for (size_t c = 0; c < z.class_plan.size(); ++c) {
    auto& e = plans[z.class_plan[c]];
    auto& j = l.jobs[e.job];
    // Net gain over keeping its size: the chosen item's value (or the empty choice's, 0)
    // less what keeping was worth.
    if (e.started || e.type == j.alloc_type)
      e.net_s = (sol.choice[c] < 0 ? 0 : in.classes[c].items[static_cast<size_t>(sol.choice[c])].value) - e.net_s;
    if (sol.choice[c] < 0) continue;
    int extra = in.classes[c].items[static_cast<size_t>(sol.choice[c])].weight;
    if (!e.started && e.type == j.alloc_type && j.min_workers + extra == e.current) {
      auto& kept = s.kept;
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
    still_needed.emplace_back(z.class_plan[c], extra);
  }
  // Listed in plan order: largest first, ties by plan, is the order a stable sort gives.
  std::sort(still_needed.begin(), still_needed.end(),
            [](auto& x, auto& y) { return x.second > y.second || (x.second == y.second && x.first < y.first); });
}

/// The knapsack valued each size at the span the job would have alone; other jobs' extras
/// may have taken its room. If the servers plan `e` really gets (its final allocation and
/// `s.placed`) leave its GPUs below the efficiency floor, it keeps only the extras on its
/// base's servers: the others go back to `left`, the list of its type's servers.
void keep_efficient(const cluster_ledger& l, const policy_spec& p, const planner_options& o, const elastic_plan& e,
                    std::vector<server_slot>& left, round_scratch& s) {
  if (o.min_extra_efficiency <= 0 || !p.elastic) return;
  auto& j = l.jobs[e.job];
  allocation& trial = s.kept;
  trial.assign(e.final.begin(), e.final.end());
  merge_into(trial, s.placed);
  const int w = count_workers(trial);
  const double sp = speed(l, e.type);
  const double r_min = work_rate(l.params.model, j.gpus, j.min_workers, std::max(servers_spanned(e.base), 1), sp);
  const double r_w = work_rate(l.params.model, j.gpus, w, servers_spanned(trial), sp);
  if (!(r_w * j.min_workers < o.min_extra_efficiency * r_min * w)) return;
  for (auto& [sid, k] : s.placed) {
    bool home = std::any_of(e.base.begin(), e.base.end(), [sid = sid](auto& x) { return x.first == sid; });
    if (home) continue;
    auto slot = std::find_if(left.begin(), left.end(), [sid = sid](auto& x) { return x.id == sid; });
    if (slot != left.end()) slot->free += k;
    else left.push_back({sid, e.type, l.servers[static_cast<size_t>(sid)].gpus, k});
    k = 0;
  }
  std::erase_if(s.placed, [](auto& x) { return x.second == 0; });
}

} // namespace

void place_extra_workers(const cluster_ledger& l, const policy_spec& p, const planner_options& o,
                         const sizing_state& z, work_view& kv, std::vector<elastic_plan>& plans, round_scratch& s) {
  keep_or_list(l, z, kv, plans, s);
  // The servers with GPUs left, per type, listed once: place_extras takes from this list as
  // from the view, and servers without free GPUs change nothing in where extras go, so one
  // list serves every job of the type instead of a pass over all servers per job. Listed
  // when a job's extras first need servers beyond its own (most rounds none does), from the
  // view as it then stands: the same list the view's takes would have left of an earlier
  // one, but for servers left with none, which place_extras passes over.
  auto& left = s.extra_slots;
  left.resize(l.params.type_speed.size());
  for (auto& v : left) v.clear();
  s.listed.assign(left.size(), 0);
  for (auto& [i, extra] : s.still_needed) {
    auto& e = plans[i];
    auto& j = l.jobs[e.job];
    auto t = static_cast<size_t>(e.type);
    extras_for(e, j, extra, s.scratch, s.order, s.extras);
    bool placed = false;
    if (!s.listed[t]) {
      auto& home = s.home_slots;
      home.clear();
      for (int sid : s.extras.home) {
        auto& sv = l.servers[static_cast<size_t>(sid)];
        const int f = kv.at(sid);
        if (sv.gpu_type == e.type && f > 0 && usable_for(sv, j, p, o) &&
            std::none_of(home.begin(), home.end(), [sid](auto& x) { return x.id == sid; }))
          home.push_back({sid, sv.gpu_type, sv.gpus, f});
      }
      placed = place_extras(home, s.extras, s.placed);
    }
    if (!placed) {
      if (!s.listed[t]) {
        s.listed[t] = 1;
        for (auto& sv : l.servers) {
          if (sv.gpu_type != e.type) continue;
          const int f = kv.at(sv.id);
          if (f > 0 && usable_for(sv, j, p, o)) left[t].push_back({sv.id, sv.gpu_type, sv.gpus, f});
        }
      }
      if (!place_extras(left[t], s.extras, s.placed)) continue;  // cannot happen: the capacity counted these GPUs
    }
    keep_efficient(l, p, o, e, left[t], s);
    kv.take(s.placed);
    merge_into(e.final, s.placed);
  }
}

} // namespace aryl::detail
