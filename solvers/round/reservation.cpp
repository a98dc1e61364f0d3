// Reservation for a job queued past planner_options::reserve_after_s or reserve_stretch
// (docs/preemption.md, "Backfill", "Starved jobs"): the servers that would hold it soonest are
// held for it in step 1.
#include <algorithm>
#include <limits>
#include <tuple>
#include <utility>
#include <vector>

#include "solvers/priorities.hpp"
#include "solvers/round/base_walk.hpp"

namespace aryl::detail {

/// Takes every GPU of server `sid` out of both views for the rest of step 1 (reserve_for).
void hold_server(int sid, walk_state& w, work_view& view, work_view& hard) {
  const int v = view.at(sid), h = hard.at(sid);
  view.at_mut(sid) -= v;
  hard.at_mut(sid) -= h;
  w.reserved.emplace_back(sid, v, h);
}

/// For queued job `j`, which found no room (planner_options::reserve_after_s): holds every GPU
/// of the training servers of its first type that has enough that would hold it soonest (by
/// the predicted ends of the jobs there; its extra workers count as free, as for a start, and
/// so do jobs the preemption rule could stop for it, under `o`'s bounds), until they hold its
/// demand. Extra workers there keep their GPUs (release_reserved gives them
/// back after step 1); their free GPUs stay free for it. Returns in how many seconds the held
/// servers are predicted to hold it (the latest of theirs), infinity when one never does.
double reserve_for(const cluster_ledger& l, const policy_spec& p, const planner_options& o, const job_entry& j,
                   round_context& c, work_view& view, work_view& hard) {
  auto& b = c;
  const int demand = base_demand(j, p);
  types_for(l, j, o, b.scratch.types);
  std::vector<std::pair<double, int>> ends;  // (predicted end s, base workers here)
  for (int type : b.scratch.types) {
    long gpus = 0;
    bool one = false;
    for (auto& s : l.servers)
      if (s.gpu_type == type && s.mode == server_mode::training) {
        gpus += s.gpus;
        one = one || s.gpus >= demand;
      }
    if (gpus < demand) continue;
    std::vector<std::tuple<double, int, int>> order;  // (when it has its share free, -free, server)
    // A job the preemption rule could stop for `j` on this type (queue_preemption.cpp's rule)
    // counts as room now: once the others on its server end, `j` starts there by stopping it.
    const double q_run = base_run_s(l, j, demand, type);
    auto stoppable = [&](const job_entry& r, double r_time) {
      // As preempt_with takes them: extras go first, so a job with extras is not a victim.
      return o.preempt_ratio > 0 && !(r.elastic && p.elastic && r.workers > r.min_workers) &&
             preempt_eligible(l, o, r, r_time, q_run);
    };
    for (auto& s : l.servers) {
      if (s.gpu_type != type || s.mode != server_mode::training || (one && s.gpus < demand)) continue;
      const int need = std::min(demand, s.gpus);
      int have = view.at(s.id);
      ends.clear();
      for (auto id : s.jobs) {
        auto& r = l.jobs[id];
        // Its base workers here (base_of: all of a rigid job's): its extras are room in the
        // view already.
        base_of(r, p, b.scratch.base);
        int w = 0;
        for (auto& [sid, n] : b.scratch.base)
          if (sid == s.id) w += n;
        double end = r.progress.rate > 0 ? r.predicted_remaining() / r.progress.rate : 1e18;
        if (end < 1e18 && stoppable(r, end)) end = 0;
        if (w > 0) ends.emplace_back(end, w);
      }
      std::sort(ends.begin(), ends.end());
      double when = 0;
      for (auto& [end, w] : ends) {
        if (have >= need) break;
        have += w;
        when = end;
      }
      order.emplace_back(have >= need ? when : 1e18, -hard.at(s.id), s.id);
    }
    std::sort(order.begin(), order.end());
    int held = 0;
    double shadow = 0;
    for (auto& [when, neg_free, sid] : order) {
      hold_server(sid, c.step1, view, hard);
      held += l.servers[static_cast<size_t>(sid)].gpus;
      shadow = when >= 1e18 ? std::numeric_limits<double>::infinity() : std::max(shadow, when);
      if (held >= demand) break;
    }
    return shadow;
  }
  return std::numeric_limits<double>::infinity();
}

/// Gives the held servers' GPUs back to both views before the shadow walk (its jobs may use
/// them); hold_server takes them again after it.
void unhold_all(walk_state& w, work_view& view, work_view& hard) {
  for (auto& [sid, v, h] : w.reserved) {
    view.at_mut(sid) += v;
    hard.at_mut(sid) += h;
  }
  w.reserved.clear();
}

/// After step 1: the extra workers' GPUs on reserved servers count again (they keep them).
void release_reserved(const walk_state& w, work_view& view) {
  for (auto& [sid, v, h] : w.reserved) view.at_mut(sid) += v - h;
}

double reserve_first(const cluster_ledger& l, const policy_spec& p, const planner_options& o, sim_time now,
                     round_context& c, work_view& view, work_view& hard, std::vector<int>& reserved_servers,
                     uint32_t& reserved_for) {
  double shadow_s = 0;
  if (o.reserve_after_s <= 0 && o.reserve_stretch <= 0) return shadow_s;
  const planner_options holder = holder_options(o);
  std::optional<long> top_class;
  walk_queue(l, p, c.walk, [&](uint32_t id) {
    if (l.params.priorities) {
      // Classes come first: a job below the queue's highest class holds no servers.
      const long k = effective_class(l.jobs[id], l.round_at, l.params.priority_aging_s);
      if (!top_class) top_class = k;
      if (k < *top_class) return false;
    }
    if (!reserves(l.jobs[id], o, now)) return true;
    c.step1.promoted.push_back(id);
    if (find_room(l, p, holder, id, c, view, hard)) return true;
    shadow_s = reserve_for(l, p, holder, l.jobs[id], c, view, hard);
    reserved_for = id;
    for (auto& r : c.step1.reserved) reserved_servers.push_back(std::get<0>(r));
    return false;  // one reservation a round: the first such job in queue order
  });
  return shadow_s;
}

void shadow_backfill(const cluster_ledger& l, const policy_spec& p, const planner_options& o, round_context& c,
                     work_view& view, work_view& hard, const std::vector<int>& reserved_servers, double shadow_s) {
  if (!backfills(p, o) || !o.shadow_backfill || reserved_servers.empty() || shadow_s <= 0 ||
      shadow_s >= std::numeric_limits<double>::infinity())
    return;
  unhold_all(c.step1, view, hard);
  const double sp = speed(l, l.servers[static_cast<size_t>(reserved_servers.front())].gpu_type);
  const auto& starts = c.made.starts;
  walk_bases(l, p, o, c, view, hard, [&](uint32_t id) {
    if (std::any_of(starts.begin(), starts.end(), [&](auto& st) { return st.job == id; })) return false;
    auto& j = l.jobs[id];
    const double rate = work_rate(l.params.model, j.gpus, base_demand(j, p), 1, sp);
    return rate > 0 && j.predicted_remaining() / rate <= shadow_s;
  });
  for (int sid : reserved_servers) hold_server(sid, c.step1, view, hard);
}

} // namespace aryl::detail
