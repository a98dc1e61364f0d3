#pragma once
/// Shared between the recorder actor (writer) and the driver (reader): how far the run is,
/// and its result. Plain fields are written before the flag that publishes them.
#include <atomic>
#include <cstdint>
#include <string>

#include "runtime/run_records.hpp"

namespace aryl {

struct run_status {
  std::atomic<bool> finished{false};
  std::atomic<bool> failed{false};
  std::atomic<uint64_t> jobs_done{0};
  std::atomic<int64_t> now_us{0};
  /// Time of the last event that moved a job (submit, start, rescale, preempt, finish).
  std::atomic<int64_t> last_job_event_us{0};
  std::string failure;   ///< set before `failed`
  run_summary summary;   ///< set before `finished`
};

} // namespace aryl
