#pragma once
/// The checks a job passes wherever it enters a run: a client's submit, a job file, a
/// restored journal record (and the trace reader's per-column checks promise the same).
/// Pure: no cluster, no clock; whether the cluster can ever run the job is the driver's
/// check_runnable.
#include <string>

#include "solvers/job_spec.hpp"

namespace aryl {

/// Longest job name: one cell of a table, one field of a log line.
inline constexpr size_t max_job_name_bytes = 256;
/// Most retries a job may ask for.
inline constexpr int max_job_retries = 1000;
/// Longest submit key (job_spec::key).
inline constexpr size_t max_submit_key_bytes = 256;

/// "" if `key` may be a submit's key (job_spec::key: 1..max_submit_key_bytes without control
/// characters), else why not. Checked where a key is given (flag, job file, wire), since an
/// empty key there is a mistake, not "no key".
std::string submit_key_problem(const std::string& key);

/// "" if `j` is a job any run could take, else its first problem, naming the field
/// ("gpus 0 is not in 1..1000000"): a name of 1..max_job_name_bytes without control
/// characters; 1 <= min_workers <= gpus <= max_workers <= max_job_gpus, and min = gpus = max
/// for an inelastic job; a duration in (0, max_input_seconds]; a finite predict_factor > 0;
/// a submit time >= 0; a time limit in [0, max_time_limit_s]; max_retries in
/// -1..max_job_retries.
std::string job_spec_problem(const job_spec& j);

} // namespace aryl
