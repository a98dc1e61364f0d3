#pragma once
/// The trace feeder: submits each job to the scheduler at its submit time.
#include <vector>

#include "actors/scheduler_protocol.hpp"
#include "actors/timebase.hpp"

namespace aryl {

using feeder_actor = caf::typed_actor<caf::reacts_to<tick_atom, uint64_t>>;

struct feeder_state {
  std::vector<job_spec> jobs;  ///< sorted by submit time
  size_t next = 0;
  static inline const char* name = "feeder";
};

/// Arms one timer at a time (the next submit time), so pending timers stay few however long
/// the trace is; jobs with the same submit time go out together, in trace order.
feeder_actor::behavior_type feeder_behavior(feeder_actor::stateful_pointer<feeder_state> self,
                                            std::vector<job_spec> jobs, scheduler_actor scheduler, timebase tb);

} // namespace aryl
