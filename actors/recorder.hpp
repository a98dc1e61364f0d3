#pragma once
/// The recorder actor: subscribes to decisions, finished jobs and cluster snapshots and
/// writes the run's outputs. It ends the run when every expected job has finished, or at
/// the first invariant violation.
#include <memory>
#include <vector>

#include "actors/recorder_protocol.hpp"
#include "runtime/outputs.hpp"
#include "runtime/run_status.hpp"

namespace aryl {

struct recorder_state {
  std::shared_ptr<run_writer> writer;
  std::shared_ptr<run_status> status;
  uint64_t expected = 0;
  std::vector<char> completed;  ///< by job index
  run_summary header;
  static inline const char* name = "recorder";
};

recorder_actor::behavior_type recorder_behavior(recorder_actor::stateful_pointer<recorder_state> self,
                                                std::shared_ptr<run_writer> writer,
                                                std::shared_ptr<run_status> status, uint64_t expected,
                                                run_summary header);

} // namespace aryl
