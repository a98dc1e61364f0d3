#pragma once
/// The recorder actor: subscribes to decisions, finished jobs and cluster snapshots and
/// writes the run's outputs. It ends the run when every expected job has finished (unless
/// kept open, in live mode, until told to stop), or at the first invariant violation.
#include <cstdint>
#include <memory>
#include <vector>

#include "actors/recorder_protocol.hpp"
#include "actors/run_sink.hpp"
#include "actors/run_status.hpp"

namespace aryl {

struct recorder_state {
  std::shared_ptr<run_sink> writer;
  std::shared_ptr<run_status> status;
  uint64_t expected = 0;
  std::vector<char> completed;  ///< by job index
  run_summary header;
  /// Serving until told to stop: every job done does not end the run.
  bool keep_open = false;
  /// Where the measures are journaled (a journal_actor), if anywhere.
  caf::actor journal;
  /// The last event's time: a later one stamped earlier (live mode: actors on other threads
  /// read the wall clock a little apart) is written at this time, so events.log never goes back.
  int64_t last_event_us = INT64_MIN;
  static inline const char* name = "recorder";
};

/// `index_space`: job indices in use at the start, if more than `expected` (a restarted
/// serve's journaled counter, should it ever run ahead of the jobs it journaled).
recorder_actor::behavior_type recorder_behavior(recorder_actor::stateful_pointer<recorder_state> self,
                                                std::shared_ptr<run_sink> writer,
                                                std::shared_ptr<run_status> status, uint64_t expected,
                                                run_summary header, bool keep_open = false,
                                                uint64_t index_space = 0);

} // namespace aryl
