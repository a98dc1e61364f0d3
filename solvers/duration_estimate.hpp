#pragma once
/// Remaining time of jobs that came without a duration estimate, from the durations of the
/// jobs that ended (docs/round.md, "Jobs without an estimate"). Pure: no clock, no I/O.
#include <cstdint>
#include <vector>

#include "solvers/cluster_ledger.hpp"

namespace aryl {

/// Durations (work: seconds at the requested workers on a speed-1 GPU) of ended jobs, per
/// tenant and over all tenants.
class duration_history {
public:
  /// A tenant's own history is used once it holds this many ended jobs; before, all tenants'.
  static constexpr size_t min_tenant_samples = 10;

  /// Records an ended job of `tenant` (>= 0) that did `work` > 0.
  void add(int tenant, double work);
  /// Expected remaining work of a job of `tenant` that has done `done` >= 0: the mean
  /// residual life E[D - done | D > done] of the ended durations D (its tenant's if it has
  /// enough, else all). A job past every ended duration is expected to run as long again as
  /// it has. With no ended job at all, `prior` counts as the one duration seen. At least 1.
  double expected_remaining(int tenant, double done, double prior) const;

private:
  struct sample {
    // Every job's end adds a duration, but only jobs without an estimate read them: additions
    // wait unsorted until the next read merges them (inserting each in order was quadratic).
    mutable std::vector<double> sorted;   ///< ascending, as of the last read
    mutable std::vector<double> pending;  ///< added since, unsorted
    mutable std::vector<double> suffix;   ///< suffix[i] = sum of sorted[i..]; rebuilt with `sorted`
    void add(double w);
    size_t size() const { return sorted.size() + pending.size(); }
    /// (count, sum) of the durations above `done`.
    std::pair<size_t, double> above(double done) const;
  };
  sample all_;
  std::vector<sample> by_tenant_;
};

/// Sets predicted_work of every queued or running job of `ledger` that came without an
/// estimate to what it has done by `now` plus history.expected_remaining; a queued job is
/// re-queued under its new key. Jobs with an estimate are not touched.
void refresh_estimates(cluster_ledger& ledger, const duration_history& history, double prior_s, sim_time now);

} // namespace aryl
