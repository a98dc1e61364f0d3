#pragma once
/// The embedded default training workload, used when no trace is given: job sizes, durations and
/// the daily arrival cycle follow the Microsoft Philly 2017 trace (constants and their derivation
/// in docs/workload.md).
#include <cstdint>
#include <vector>

#include "solvers/job_spec.hpp"

namespace aryl {

struct synthetic_options {
  uint64_t seed = 1;
  /// Number of jobs generated (exactly).
  int jobs = 2000;
  /// Arrival window in days, used as given only when target_load <= 0. With a target load the
  /// window is whatever makes the offered load equal it (see generate_synthetic).
  double days = 2;
  /// GPUs of the training cluster; no job asks for more than half of them.
  int cluster_gpus = 128;
  /// Offered load = sum(gpus * duration_s) / (cluster_gpus * window); <= 0 = use `days`.
  double target_load = 0.8;
  /// Durations are capped at this many seconds (default one day) so that a run ends within about
  /// a day of its last arrival; Philly's tail reaches 53 days (3.2% of jobs exceed one day).
  double max_duration_s = 86400;
};

/// Generates `options.jobs` inelastic jobs (min = max = gpus, predict_factor 1, no GPU type,
/// names "syn-<index>"), sorted by submit time, index = position, submit times in whole seconds
/// from 0 (= 00:00 of the first day), durations in whole seconds in [1, max_duration_s].
/// Sizes and durations are drawn first (per-size-class empirical duration quantiles); then the
/// arrival window W = sum(gpus * duration_s) / (cluster_gpus * target_load) is fixed and the
/// submit times are drawn i.i.d. over [0, W) from the hour-of-day profile, then sorted.
/// Deterministic for a seed (std::mt19937_64 and explicit inverse-CDF sampling only).
/// Throws input_error for out-of-range options.
std::vector<job_spec> generate_synthetic(const synthetic_options& options);

/// Offered load of a workload over [first submit, last submit + mean inter-arrival gap]:
/// sum(gpus * duration_s) / (cluster_gpus * that span). 0 for fewer than two jobs.
double offered_load(const std::vector<job_spec>& jobs, int cluster_gpus);

} // namespace aryl
