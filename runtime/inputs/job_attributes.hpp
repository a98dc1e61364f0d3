#pragma once
/// Elasticity and runtime-prediction error, assigned to jobs after loading (docs/workload.md).
#include <cstdint>
#include <vector>

#include "solvers/job_spec.hpp"

namespace aryl {

struct job_attribute_options {
  /// Probability that a job (whose trace did not say) is elastic; in [0, 1].
  double elastic_fraction = 0;
  /// Elastic jobs: min_workers = max(1, floor(gpus * this)); in (0, 1].
  double min_workers_fraction = 0.5;
  /// Elastic jobs: max_workers = ceil(gpus * this); >= 1.
  double max_workers_factor = 2;
  /// Probability that a job's runtime prediction is wrong; in [0, 1].
  double mispredict_fraction = 0;
  /// A mispredicted job's predict_factor is uniform in [1 - error, 1 + error]; in [0, 1).
  double mispredict_error = 0.25;
  /// Probability that a job comes without a duration estimate (job_spec::estimated); in [0, 1].
  double unestimated_fraction = 0;
  uint64_t seed = 1;
};

/// Sets elastic, min_workers, max_workers and predict_factor of every job.
/// Each job draws from its own random stream, seeded by (seed, job.index): a job's attributes
/// do not depend on the other jobs, and raising elastic_fraction (or mispredict_fraction) only
/// adds elastic (mispredicted) jobs, it never changes which of the others are.
/// Jobs whose explicit_elastic flag is set (see trace_load::explicit_elastic) keep their
/// elastic/min_workers/max_workers from the trace; `explicit_elastic`, when given, must have one
/// flag per job. Jobs not made elastic get min = max = gpus; jobs not mispredicted get
/// predict_factor = 1. A job the trace left without an estimate stays so; unestimated_fraction
/// only takes estimates away (a fourth draw, after the three above). Throws input_error for out-of-range options.
void assign_job_attributes(std::vector<job_spec>& jobs, const job_attribute_options& options,
                           const std::vector<bool>* explicit_elastic = nullptr);

} // namespace aryl
