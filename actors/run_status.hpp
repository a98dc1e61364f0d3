#pragma once
/// Shared between the recorder actor (writer) and the driver (reader): how far the run is,
/// and its result. Plain fields are written before the flag that publishes them.
#include <atomic>
#include <cstdint>
#include <string>

#include "actors/run_records.hpp"

namespace aryl {

struct run_status {
  std::atomic<bool> finished{false};
  std::atomic<bool> failed{false};
  std::atomic<uint64_t> jobs_done{0};
  std::atomic<int64_t> now_us{0};
  /// Time of the last event that moved a job (submit, start, rescale, preempt, finish).
  std::atomic<int64_t> last_job_event_us{0};
  std::string failure;   ///< set before `failed`
  int failure_code = 3;  ///< exit code for `failure`: 2 input error, 3 run stopped, 4 internal
  /// Jobs holding GPUs after the latest round (each has a finish timer: the run moves on).
  std::atomic<int> running_jobs{0};
  std::atomic<uint64_t> slo_misses{0};  ///< servers returned to inference after their deadline
  std::atomic<int> inference_needed{-1};  ///< inference servers demand needs now; -1: no inference
  /// The latest a job completion timer fired past its due time (wall clock), µs.
  std::atomic<int64_t> max_lag_us{0};
  run_summary summary;   ///< set before `finished`
};

} // namespace aryl
