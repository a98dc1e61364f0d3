#pragma once
/// Values for the scale-out knapsack: how much adding workers shortens a job's remaining
/// time (docs/elastic.md, "What a change of size must pay"). Pure functions of the throughput model.
#include <limits>
#include <vector>

#include "solvers/mckp.hpp"
#include "solvers/throughput.hpp"

namespace aryl {

/// What the value of scaling one running elastic job depends on.
struct scale_out_job {
  double remaining_work = 0;      ///< work units left (see work_rate), >= 0
  int requested = 1;              ///< the job's requested workers n, >= 1
  int current_workers = 1;        ///< workers now, >= 1
  int max_workers = 1;            ///< upper limit on workers
  double type_speed = 1.0;        ///< relative speed of the job's GPU type, > 0
  double scale_overhead_s = 0;    ///< seconds lost to one scaling operation, >= 0
  /// span[k] = servers its workers span with k workers added (k = 0: now), e.g. from
  /// spans_with_extras; past the end the last entry holds; empty: one server throughout.
  std::vector<int> span = {};
};

/// Remaining seconds = remaining_work / work_rate(model, requested, workers, servers,
/// type_speed). +infinity when `workers` is 0 (no progress).
inline double remaining_time_s(const throughput_model& m, double remaining_work, int requested,
                               int workers, int servers, double type_speed) {
  double rate = work_rate(m, requested, workers, servers, type_speed);
  if (rate <= 0) return std::numeric_limits<double>::infinity();
  return remaining_work / rate;
}

/// Value in seconds of adding `k` (>= 1) workers: T(cur) - T(cur + k) - scale overhead,
/// each T at the span the job has with that many workers.
/// Negative when the job is too close to done for the overhead to pay off.
/// Throws std::invalid_argument if current_workers < 1, k < 1, requested < 1 or
/// type_speed <= 0.
double scale_out_value(const throughput_model& m, const scale_out_job& job, int k);

/// The job's knapsack class: item i adds i + 1 workers (weight i + 1 GPUs, one GPU per
/// worker) for i + 1 = 1 .. max_workers - current_workers; empty when the job is already at
/// (or above) its maximum. Same preconditions as scale_out_value.
mckp_class scale_out_class(const throughput_model& m, const scale_out_job& job,
                           int gpu_type = 0);

} // namespace aryl
