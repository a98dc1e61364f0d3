#include "runtime/inputs/job_checks.hpp"

#include <fmt/format.h>

#include <cmath>

#include "solvers/control_chars.hpp"
#include "runtime/inputs/duration_text.hpp"
#include "runtime/inputs/input_limits.hpp"

namespace aryl {

std::string submit_key_problem(const std::string& key) {
  if (key.empty() || key.size() > max_submit_key_bytes)
    return fmt::format("{} bytes, where 1 to {} are required", key.size(), max_submit_key_bytes);
  if (find_control(key) != std::string::npos) return "holds " + describe_control(key);
  return {};
}

std::string job_spec_problem(const job_spec& j) {
  if (j.name.empty() || j.name.size() > max_job_name_bytes)
    return fmt::format("name: {} bytes, where 1 to {} are required", j.name.size(), max_job_name_bytes);
  // Shown in logs, tables and jobs.csv, one line per job.
  if (find_control(j.name) != std::string::npos) return "name: holds " + describe_control(j.name);
  if (find_control(j.tenant) != std::string::npos) return "tenant: holds " + describe_control(j.tenant);
  if (j.priority < -max_priority || j.priority > max_priority)
    return fmt::format("priority {} is not in [-{}, {}]", j.priority, max_priority, max_priority);
  if (j.gpus < 1 || j.gpus > max_job_gpus) return fmt::format("gpus {} is not in 1..{}", j.gpus, max_job_gpus);
  if (j.min_workers < 1 || j.min_workers > j.gpus || j.max_workers < j.gpus || j.max_workers > max_job_gpus)
    return fmt::format("workers must satisfy 1 <= min_workers ({}) <= gpus ({}) <= max_workers ({}) <= {}",
                       j.min_workers, j.gpus, j.max_workers, max_job_gpus);
  if (!j.elastic && (j.min_workers != j.gpus || j.max_workers != j.gpus))
    return fmt::format("an inelastic job has min_workers ({}) = gpus ({}) = max_workers ({})", j.min_workers, j.gpus,
                       j.max_workers);
  if (!(j.duration_s > 0) || j.duration_s > max_input_seconds)
    return fmt::format("expected duration {} s is not in (0, {:g}]", j.duration_s, max_input_seconds);
  if (!std::isfinite(j.predict_factor) || !(j.predict_factor > 0))
    return fmt::format("predict_factor {} is not a finite number > 0", j.predict_factor);
  if (j.submit.us < 0) return fmt::format("submit time {} us is negative", j.submit.us);
  if (!(j.time_limit_s >= 0) || j.time_limit_s > max_time_limit_s)
    return fmt::format("time limit {} s is not in [0, {:g}] (0: none)", j.time_limit_s, max_time_limit_s);
  if (j.max_retries < -1 || j.max_retries > max_job_retries)
    return fmt::format("max_retries {} is not in 0..{} (-1: the config's)", j.max_retries, max_job_retries);
  return {};
}

} // namespace aryl
