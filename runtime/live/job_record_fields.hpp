#pragma once
/// The fields of an ended job's final record (job_record) as the journal of `aryl serve
/// --state` keeps them: one table for the journal's writer and readers (state_journal.cpp)
/// and the checks of a restored record (state_checks.cpp), so a field added to job_record is
/// written, read and checked once it is listed here.
#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "actors/run_records.hpp"

namespace aryl::live {

/// One field: its key in a `jobs` row's JSON record, and where it lives in job_record. Its
/// place in record_fields is its place in the compact store's array (append only).
struct record_field {
  const char* key;
  std::variant<uint32_t job_record::*, std::string job_record::*, int job_record::*, bool job_record::*,
               int64_t job_record::*, double job_record::*, job_outcome job_record::*,
               std::vector<attempt_record> job_record::*>
      member;
};

inline constexpr record_field record_fields[] = {
    {"index", &job_record::index},
    {"name", &job_record::name},
    {"gpus", &job_record::gpus},
    {"elastic", &job_record::elastic},
    {"submit_us", &job_record::submit_us},
    {"first_start_us", &job_record::first_start_us},
    {"end_us", &job_record::end_us},
    {"queued_s", &job_record::queued_s},
    {"gpu_seconds", &job_record::gpu_seconds},
    {"preemptions", &job_record::preemptions},
    {"scale_ins", &job_record::scale_ins},
    {"scale_outs", &job_record::scale_outs},
    {"duration_s", &job_record::duration_s},
    {"last_workers", &job_record::last_workers},
    {"on_loaned_s", &job_record::on_loaned_s},
    {"slowdown", &job_record::slowdown},
    {"below_speed_s", &job_record::below_speed_s},
    {"below_speed_gpu_s", &job_record::below_speed_gpu_s},
    {"outcome", &job_record::outcome},
    // Work efficiency: journals from before it lack these (read as 0).
    {"needed_gpu_s", &job_record::needed_gpu_s},
    {"training_gpu_s", &job_record::training_gpu_s},
    {"loaned_gpu_s", &job_record::loaned_gpu_s},
    {"training_speed_gpu_s", &job_record::training_speed_gpu_s},
    {"loaned_speed_gpu_s", &job_record::loaned_speed_gpu_s},
    {"training_needed_gpu_s", &job_record::training_needed_gpu_s},
    {"loaned_needed_gpu_s", &job_record::loaned_needed_gpu_s},
    // Journals from before it lack it (read as true).
    {"predicted", &job_record::predicted},
    // Journals from before these lack them (read as estimated, no tenant).
    {"estimated", &job_record::estimated},
    {"tenant", &job_record::tenant},
    // Journals from before attempts lack them (read as none).
    {"attempts", &job_record::attempts},
};

/// Fields every journal has: the first 19; a record may lack the ones after (see above),
/// which then keep job_record's defaults.
inline constexpr size_t record_fields_always = 19;

} // namespace aryl::live
