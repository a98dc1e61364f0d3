// Reservation for a job queued past planner_options::reserve_after_s or reserve_stretch
// (docs/preemption.md, "Backfill", "Starved jobs"): the servers that would hold it soonest are
// held for it in step 1.
#include <algorithm>
#include <limits>
#include <tuple>
#include <utility>
#include <vector>

#include "solvers/round_state.hpp"

namespace aryl::detail {

/// Takes every GPU of server `sid` out of both views for the rest of step 1 (reserve_for).
void hold_server(int sid, work_view& view, work_view& hard) {
  const int v = view.at(sid), h = hard.at(sid);
  view.at_mut(sid) -= v;
  hard.at_mut(sid) -= h;
  buffers.reserved.emplace_back(sid, v, h);
}

/// For queued job `j`, which found no room (planner_options::reserve_after_s): holds every GPU
/// of the training servers of its first type that has enough that would hold it soonest (by
/// the predicted ends of the jobs there; its extra workers count as free, as for a start, and
/// so do jobs the preemption rule could stop for it, under `o`'s bounds), until they hold its
/// demand. Extra workers there keep their GPUs (release_reserved gives them
/// back after step 1); their free GPUs stay free for it. Returns in how many seconds the held
/// servers are predicted to hold it (the latest of theirs), infinity when one never does.
double reserve_for(const cluster_ledger& l, const policy_spec& p, const planner_options& o, const job_entry& j,
                 work_view& view, work_view& hard) {
  auto& b = buffers;
  const int demand = base_demand(j, p);
  types_for(l, j, o, b.types);
  std::vector<std::pair<double, int>> ends;  // (predicted end s, base workers here)
  for (int type : b.types) {
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
        base_of(r, p, b.base);
        int w = 0;
        for (auto& [sid, n] : b.base)
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
      hold_server(sid, view, hard);
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
void unhold_all(work_view& view, work_view& hard) {
  for (auto& [sid, v, h] : buffers.reserved) {
    view.at_mut(sid) += v;
    hard.at_mut(sid) += h;
  }
  buffers.reserved.clear();
}

/// After step 1: the extra workers' GPUs on reserved servers count again (they keep them).
void release_reserved(work_view& view) {
  for (auto& [sid, v, h] : buffers.reserved) view.at_mut(sid) += v - h;
}

} // namespace aryl::detail
