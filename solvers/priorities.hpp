#pragma once
/// Job classes (docs/tenants.md, "Priorities"): the queue walks higher classes first, and a
/// waiting job's class rises with its wait so that no stream of higher-class jobs holds it
/// back for ever. Pure.
///
/// A job's class is an integer (job_entry::priority, 0 by default; higher goes first). Only
/// when some job has a class other than 0 (ledger_params::priorities) does anything here
/// change a round: without classes the queue is walked exactly as before.
#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

#include "solvers/cluster_ledger.hpp"
#include "solvers/policy.hpp"
#include "solvers/tenants.hpp"

namespace aryl {

/// The class a queued job has in the queue's order at `now`: its own, plus one for every
/// whole `aging_s` seconds it has waited queued in all (earlier spells included); aging_s <= 0:
/// its own. A running job's waiting stopped at its start. Aging orders the queue only: it
/// gives no right to preempt (priority_may_preempt reads the job's own class).
long effective_class(const job_entry& j, sim_time now, double aging_s);

/// Whether queued job `q` may stop running job `v` for its class: `v`'s own class is lower,
/// `v` was stopped for a class fewer than `max_preemptions` times, and `v` has more
/// predicted time left (`v_remaining_s`) than its stop costs it (`stop_cost_s`: restart
/// overhead plus checkpoint): a victim that would end sooner is cheaper to wait for.
bool priority_may_preempt(const job_entry& q, const job_entry& v, int max_preemptions, double v_remaining_s,
                          double stop_cost_s);

/// Whether policy `p` preempts lower classes for a job's class (the rule of
/// queue_preemption.cpp): only its rounds with elasticity or loaning do. The rigid policies'
/// rounds and the preemptive ones' rankings (srtf, las) have no place for it, so a job with a
/// class other than 0 is refused under them (docs/tenants.md, "Priorities").
inline bool preempts_for_classes(const policy_spec& p) { return !p.preemptive && (p.elastic || p.loaning); }

namespace detail {

/// by_class's order and its sort keys, kept for their memory.
struct class_order {
  std::vector<std::tuple<long, long, uint32_t>> keyed;
  std::vector<std::pair<long, uint32_t>> out;
};

/// Queued job ids of `index` (the policy's order), reordered by effective class at the
/// ledger's round time, highest first; the policy's order within a class; into `order`.
/// Pairs (rank, id), the shape the walks read.
template <class Index>
const std::vector<std::pair<long, uint32_t>>& by_class(const cluster_ledger& l, const Index& index, class_order& order) {
  auto& keyed = order.keyed;
  auto& out = order.out;
  keyed.clear();
  out.clear();
  long pos = 0;
  for (auto& [key, id] : index) keyed.emplace_back(-effective_class(l.jobs[id], l.round_at, l.params.priority_aging_s), pos++, id);
  std::sort(keyed.begin(), keyed.end());
  long rank = 0;
  for (auto& [c, p, id] : keyed) out.emplace_back(rank++, id);
  return out;
}

} // namespace detail
} // namespace aryl
