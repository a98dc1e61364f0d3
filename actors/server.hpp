#pragma once
/// The server actor: one per machine, training or inference. It owns the GPU slots of its
/// machine and checks every placement against them.
#include <map>
#include <string>

#include "actors/recorder_protocol.hpp"
#include "actors/server_protocol.hpp"

namespace aryl {

struct server_state {
  std::string server;
  int gpus = 0;
  int used = 0;
  int mode = 0;  ///< server_mode as int
  std::map<uint32_t, int> workers;  ///< job -> GPUs
  static inline const char* name = "server";
};

/// Reports to `recorder` (as a violation) any placement beyond the server's GPUs, any
/// training worker on a server that serves inference, and any removal of an absent job.
server_actor::behavior_type server_behavior(server_actor::stateful_pointer<server_state> self,
                                            std::string name, int gpus, int mode, recorder_actor recorder);

} // namespace aryl
