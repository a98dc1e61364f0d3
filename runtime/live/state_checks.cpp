#include "runtime/live/state_checks.hpp"

#include "solvers/control_chars.hpp"

#include <fmt/format.h>

#include <cmath>
#include <set>
#include <variant>

#include "solvers/input_error.hpp"
#include "runtime/inputs/job_checks.hpp"
#include "runtime/live/job_record_fields.hpp"

namespace aryl::live {
namespace {

/// The value of `f` in `r` if it is a field of type T (record_fields).
template <class T>
const T* field_of(const job_record& r, const record_field& f) {
  auto* member = std::get_if<T job_record::*>(&f.member);
  return member ? &(r.**member) : nullptr;
}

/// The first out-of-range measurement of a record, naming its field, or "": its seconds
/// (every real field), then its counts (whole numbers; gpus is job_spec_problem's), then its
/// times, each in record_fields' order.
std::string record_problem(const job_record& r) {
  for (auto& f : record_fields)
    if (auto* v = field_of<double>(r, f); v && (!std::isfinite(*v) || *v < 0))
      return fmt::format("record: {} {} is not a finite number >= 0", f.key, *v);
  for (auto& f : record_fields)
    if (auto* v = field_of<int>(r, f); v && *v < 0) return fmt::format("record: {} {} is negative", f.key, *v);
  // -1: not yet (never started, not ended).
  for (auto& f : record_fields)
    if (auto* v = field_of<int64_t>(r, f); v && (*v < -1 || *v > sim_time::horizon().us))
      return fmt::format("record: {} {} is not in -1..{}", f.key, *v, sim_time::horizon().us);
  // Shown in status, show and logs, one line each.
  for (auto& f : record_fields)
    if (auto* v = field_of<std::string>(r, f); v && find_control(*v) != std::string::npos)
      return fmt::format("record: {} holds {}", f.key, describe_control(*v));
  for (size_t i = 0; i < r.attempts.size(); ++i) {
    auto& a = r.attempts[i];
    if (a.start_us < -1 || a.start_us > sim_time::horizon().us || a.end_us < 0 || a.end_us > sim_time::horizon().us)
      return fmt::format("record: attempt {}: its times are not in -1..{}", i + 1, sim_time::horizon().us);
    for (auto* text : {&a.exits, &a.why})
      if (find_control(*text) != std::string::npos)
        return fmt::format("record: attempt {} holds {}", i + 1, describe_control(*text));
  }
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
  s.tenant = r.tenant;
  s.estimated = r.estimated;
  return s;
}

std::string job_problem(const saved_job& j) {
  if (j.status == saved_status::ended) {
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
