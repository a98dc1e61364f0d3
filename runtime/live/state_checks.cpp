#include "runtime/live/state_checks.hpp"

#include <fmt/format.h>

#include <cmath>
#include <set>

#include "solvers/input_error.hpp"
#include "runtime/inputs/job_checks.hpp"

namespace aryl::live {
namespace {

/// The first out-of-range measurement of a record, naming its field, or "".
std::string record_problem(const job_record& r) {
  const std::pair<const char*, double> seconds[] = {
      {"queued_s", r.queued_s},
      {"gpu_seconds", r.gpu_seconds},
      {"duration_s", r.duration_s},
      {"on_loaned_s", r.on_loaned_s},
      {"slowdown", r.slowdown},
      {"below_speed_s", r.below_speed_s},
      {"below_speed_gpu_s", r.below_speed_gpu_s},
      {"needed_gpu_s", r.needed_gpu_s},
      {"training_gpu_s", r.training_gpu_s},
      {"loaned_gpu_s", r.loaned_gpu_s},
      {"training_speed_gpu_s", r.training_speed_gpu_s},
      {"loaned_speed_gpu_s", r.loaned_speed_gpu_s},
      {"training_needed_gpu_s", r.training_needed_gpu_s},
      {"loaned_needed_gpu_s", r.loaned_needed_gpu_s}};
  for (auto& [name, v] : seconds)
    if (!std::isfinite(v) || v < 0) return fmt::format("record: {} {} is not a finite number >= 0", name, v);
  const std::pair<const char*, int64_t> counts[] = {
      {"preemptions", r.preemptions}, {"scale_ins", r.scale_ins}, {"scale_outs", r.scale_outs},
      {"last_workers", r.last_workers}};
  for (auto& [name, v] : counts)
    if (v < 0) return fmt::format("record: {} {} is negative", name, v);
  // -1: not yet (never started, not ended).
  const std::pair<const char*, int64_t> times[] = {
      {"submit_us", r.submit_us}, {"first_start_us", r.first_start_us}, {"end_us", r.end_us}};
  for (auto& [name, v] : times)
    if (v < -1 || v > sim_time::horizon().us)
      return fmt::format("record: {} {} is not in -1..{}", name, v, sim_time::horizon().us);
  return {};
}

/// What an ended job's final record says of the job, as a spec.
job_spec spec_of(const job_record& r) {
  job_spec s;
  s.index = r.index;
  s.name = r.name;
  s.gpus = s.min_workers = s.max_workers = r.gpus;
  s.duration_s = r.duration_s;
  s.submit = sim_time::from_us(r.submit_us);
  return s;
}

std::string job_problem(const saved_job& j) {
  if (j.status == "ended") {
    if (j.record.outcome != "done" && j.record.outcome != "cancelled" && j.record.outcome != "failed")
      return fmt::format("record: outcome '{}' is not done, cancelled or failed", j.record.outcome);
    if (auto why = job_spec_problem(spec_of(j.record)); !why.empty()) return "record: " + why;
    return record_problem(j.record);
  }
  if (auto why = job_spec_problem(j.spec); !why.empty()) return why;
  if (j.workers < 0 || j.workers > j.spec.max_workers)
    return fmt::format("workers {} is not in 0..max_workers ({})", j.workers, j.spec.max_workers);
  if (j.retries < 0) return fmt::format("retries {} is negative", j.retries);
  if (!std::isfinite(j.work_done) || j.work_done < 0)
    return fmt::format("work_done {} is not a finite number >= 0", j.work_done);
  return record_problem(j.record);
}

} // namespace

void check_saved_state(const saved_state& s, uint32_t trace_jobs, const std::string& path) {
  auto bad = [&](uint64_t job, const std::string& why) {
    throw input_error(fmt::format("{}: job {}: {}", path, job, why));
  };
  // Indices are dense: trace jobs 0..trace_jobs-1, then one per submitted job, each journaled
  // with the counter in one transaction (state_sink::put_admitted).
  const uint64_t numbered = std::max<uint64_t>(s.run.next_index, trace_jobs);
  std::set<uint32_t> seen;
  uint64_t submitted = 0;
  for (auto& j : s.jobs) {
    auto index = j.spec.index;
    if (index >= numbered)
      bad(index, fmt::format("index {} is beyond the {} jobs the run has numbered (trace jobs {}, next index {})",
                             index, numbered, trace_jobs, s.run.next_index));
    if (!seen.insert(index).second) bad(index, "index journaled twice");
    if (index >= trace_jobs) ++submitted;
    if (auto why = job_problem(j); !why.empty()) bad(index, why);
  }
  if (numbered - trace_jobs > submitted)
    throw input_error(fmt::format("{}: next_index {}: the run would have numbered {} submitted jobs, the file holds {}",
                                  path, s.run.next_index, numbered - trace_jobs, submitted));
}

} // namespace aryl::live
