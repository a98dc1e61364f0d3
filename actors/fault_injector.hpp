#pragma once
/// The fault actor: follows a fault plan in simulated time. Server crashes, worker crashes,
/// bad agent links and checkpoint faults go to the scheduler (which passes the physical event
/// to the actors it reaches, and notices a lost server only when its heartbeats stop); a
/// surge sets the inference demand; a scheduler crash sends the scheduler away.
#include <map>
#include <string>
#include <vector>

#include "actors/fault_protocol.hpp"
#include "actors/inference_protocol.hpp"
#include "actors/recorder_protocol.hpp"
#include "actors/scheduler_protocol.hpp"
#include "actors/fault_events.hpp"
#include "actors/timebase.hpp"

namespace aryl {

using fault_actor = caf::typed_actor<caf::reacts_to<tick_atom, uint64_t>>;

struct fault_injector_state {
  std::vector<fault_event> events;  ///< sorted by time
  size_t next = 0;
  static inline const char* name = "faults";
};

/// `servers`: server name -> id. Quits after the last fault.
fault_actor::behavior_type fault_behavior(fault_actor::stateful_pointer<fault_injector_state> self,
                                          std::vector<fault_event> events, std::map<std::string, int> servers,
                                          scheduler_actor scheduler, inference_actor inference,
                                          recorder_actor recorder, timebase tb);

} // namespace aryl
