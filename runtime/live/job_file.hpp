#pragma once
/// `aryl submit --file F`: a job described in YAML or JSON (JSON is YAML), with the keys of
/// the protocol's submit message: name, gpus, min_workers, max_workers, command,
/// expected_duration_s, gpu_type, tenant, priority, time_limit, max_retries.
#include <string>

#include "runtime/wire/messages.hpp"

namespace aryl::live {

/// Fills `job` from the file's keys (the ones absent keep their values). Throws
/// aryl::input_error naming the file, the line and the key for an unreadable file, one that
/// is not a regular file or is larger than max_job_file_bytes (naming the limit), an
/// unknown or repeated key, a value of the wrong type or range, a name or GPU type holding a
/// control character, or text after the job's map.
void read_job_file(const std::string& path, wire::submit& job);

/// Seconds of the time limit `text` (runtime/inputs/duration_text.hpp), or aryl::input_error
/// naming `what` (a flag, a file's line and key).
double time_limit_of(const std::string& what, const std::string& text);

} // namespace aryl::live
