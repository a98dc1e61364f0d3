#pragma once
/// A restored journal is an input like any other: every record of `aryl serve --state FILE`
/// passes the checks a submit or a trace row does before the scheduler takes it. Plain
/// structs in; no CAF, no SQLite.
#include <cstdint>
#include <string>

#include "actors/state_records.hpp"

namespace aryl::live {

/// Throws aryl::input_error "PATH: job N: FIELD ..." for the first record of `s` that is not
/// one a run can have written: a queued or running job whose spec fails job_spec_problem, or
/// whose workers, retries, work done or measurements are out of range; an ended job whose
/// final record names no valid job (name, gpus, duration) or outcome; an index journaled
/// twice, or beyond the indices the run has given out (the trace's `trace_jobs`, then one per
/// submitted job: every submitted job is journaled with the counter). Cluster-dependent checks
/// (GPU type, size, horizon) are the driver's check_runnable.
void check_saved_state(const saved_state& s, uint32_t trace_jobs, const std::string& path);

} // namespace aryl::live
