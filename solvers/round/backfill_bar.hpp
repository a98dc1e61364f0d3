#pragma once
// Step 1's backfilling walk (round/base_walk.hpp). Internal to solvers/.
#include <vector>

#include "solvers/round_planner.hpp"

namespace aryl::detail {

/// A backfilling walk's memory of the jobs that found no room this round (docs/preemption.md,
/// "Backfill"). A later job is passed over when one of them asked for no more GPUs on no
/// fewer servers: a longer job (the walk is in SJF order) of no smaller demand would find no
/// room either, nor better victims to preempt. Once a job of one GPU that may use any type
/// and loaned servers found none, no job behind it can start and the walk ends. Without this
/// a busy round tried each of thousands of queued jobs. With tenants or job classes the walk
/// is not in SJF order (nor under a FIFO policy), and every job is tried.
class no_room_bar {
public:
  no_room_bar(const cluster_ledger& l, const policy_spec& p, const planner_options& o)
      : p_(p), o_(o),
        on_(p.order == queue_order::sjf && !l.params.quotas && !l.params.fair_share && !l.params.priorities) {}
  bool passes_over(const job_entry& j) const {
    if (!on_) return false;
    const int demand = demand_of(j);
    const bool loaned = may_loan(j);
    for (auto& f : failed_)
      if (demand >= f.demand && (f.type < 0 || f.type == j.gpu_type) && (f.loaned || !loaned)) return true;
    return false;
  }
  /// Records that `j` found no room; false when no job behind it can start.
  bool record(const job_entry& j) {
    if (!on_) return true;
    failed_.push_back({demand_of(j), j.gpu_type, may_loan(j)});
    auto& f = failed_.back();
    return !(f.demand <= 1 && f.type < 0 && (f.loaned || !p_.loaning));
  }

private:
  struct entry {
    int demand;
    int type;
    bool loaned;
  };
  int demand_of(const job_entry& j) const { return base_demand(j, p_); }  // as place_base
  bool may_loan(const job_entry& j) const { return p_.loaning && (j.elastic || o_.inelastic_on_loaned); }
  const policy_spec& p_;
  const planner_options& o_;
  bool on_;
  std::vector<entry> failed_;
};

} // namespace aryl::detail
