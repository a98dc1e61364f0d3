#include "runtime/inputs/job_attributes.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "solvers/input_error.hpp"

namespace aryl {
namespace {

/// SplitMix64 (Steele, Lea, Flood 2014): a small generator whose state can be any 64-bit value,
/// used as one independent stream per job.
struct splitmix64 {
  uint64_t state;

  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
};

/// The stream of job `index`: the seed and the index are mixed so that neighbouring indices and
/// neighbouring seeds give unrelated streams.
splitmix64 job_stream(uint64_t seed, uint32_t index) {
  splitmix64 mix{seed};
  const uint64_t a = mix.next();
  splitmix64 second{a ^ (static_cast<uint64_t>(index) * 0xD1B54A32D192ED03ULL)};
  return splitmix64{second.next()};
}

void check(bool ok, const char* name, double value, const char* range) {
  if (!ok) throw input_error(std::string("job attributes: ") + name + " " + std::to_string(value) + " is not in " + range);
}

} // namespace

void assign_job_attributes(std::vector<job_spec>& jobs, const job_attribute_options& o,
                           const std::vector<bool>* explicit_elastic) {
  check(o.elastic_fraction >= 0 && o.elastic_fraction <= 1, "elastic_fraction", o.elastic_fraction, "[0, 1]");
  check(o.min_workers_fraction >= 0 && o.min_workers_fraction <= 1, "min_workers_fraction", o.min_workers_fraction,
        "[0, 1]");
  check(o.max_workers_factor >= 1 && std::isfinite(o.max_workers_factor), "max_workers_factor",
        o.max_workers_factor, "[1, inf)");
  check(o.mispredict_fraction >= 0 && o.mispredict_fraction <= 1, "mispredict_fraction", o.mispredict_fraction,
        "[0, 1]");
  // At most 0.99, as the config table takes it: a factor of 1 - 1 would predict no work at all.
  check(o.mispredict_error >= 0 && o.mispredict_error <= 0.99, "mispredict_error", o.mispredict_error, "[0, 0.99]");
  check(o.unestimated_fraction >= 0 && o.unestimated_fraction <= 1, "unestimated_fraction", o.unestimated_fraction,
        "[0, 1]");
  if (explicit_elastic && explicit_elastic->size() != jobs.size())
    throw std::invalid_argument("assign_job_attributes: explicit_elastic has " +
                                std::to_string(explicit_elastic->size()) + " flags for " +
                                std::to_string(jobs.size()) + " jobs");

  // Tolerance so that, e.g., 10 * 1.1 = 11.000000000000002 still rounds up to 11.
  constexpr double eps = 1e-9;
  for (size_t i = 0; i < jobs.size(); ++i) {
    job_spec& job = jobs[i];
    splitmix64 rng = job_stream(o.seed, job.index);
    // Always four draws, in this order, whatever the options: the coupling promised above.
    const double u_elastic = rng.uniform();
    const double u_mispredict = rng.uniform();
    const double u_factor = rng.uniform();
    const double u_estimate = rng.uniform();

    if (!(explicit_elastic && (*explicit_elastic)[i])) {
      job.elastic = u_elastic < o.elastic_fraction;
      if (job.elastic) {
        job.min_workers = std::max(1, static_cast<int>(std::floor(job.gpus * o.min_workers_fraction + eps)));
        job.max_workers = std::max(job.gpus, static_cast<int>(std::ceil(job.gpus * o.max_workers_factor - eps)));
      } else {
        job.min_workers = job.max_workers = job.gpus;
      }
    }
    job.predict_factor =
        u_mispredict < o.mispredict_fraction ? 1 + o.mispredict_error * (2 * u_factor - 1) : 1.0;
    if (u_estimate < o.unestimated_fraction) job.estimated = false;
  }
}

} // namespace aryl
