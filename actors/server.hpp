#pragma once
/// The server actor: one per machine, training or inference. It owns the GPU slots of its
/// machine and checks every placement against them.
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "actors/node_link.hpp"
#include "actors/recorder_protocol.hpp"
#include "actors/server_protocol.hpp"

namespace aryl {

struct server_state {
  std::string server;
  int gpus = 0;
  int used = 0;
  int mode = 0;  ///< server_mode as int
  std::map<uint32_t, int> workers;  ///< job -> GPUs
  // Live mode only (with a node link):
  std::shared_ptr<node_link> node;
  std::vector<int64_t> gpu_job;                  ///< GPU index -> job holding it, -1 free
  std::map<uint32_t, job_actor> owners;          ///< job -> its actor, for worker reports
  std::map<uint32_t, launch_request> pending;    ///< launches waiting for their placement
  /// job -> rank -> the launch (1, 2, ... on this server) that started it, for the ranks
  /// whose exit has not been reported: only their reports reach the job (a worker given up for
  /// lost may still report, from an agent that comes back).
  std::map<uint32_t, std::map<uint32_t, uint64_t>> running;
  uint64_t launches = 0;  ///< launches sent to the machine so far
  /// job -> ranks given up, then found still running when the agent came back (stopped then).
  std::map<uint32_t, std::set<uint32_t>> strays;
  /// Jobs whose launch here is a torchrun node (one process that outlives a rescale).
  std::set<uint32_t> torchrun_jobs;
  /// A torchrun job removed here while its node runs: its GPU indices are kept until it is
  /// placed again with as many (the node keeps running) or the park ends (it is stopped).
  struct parking {
    int gpus = 0;
    uint64_t serial = 0;
  };
  std::map<uint32_t, parking> parked;
  uint64_t parks = 0;
  static inline const char* name = "server";
};

/// Reports to `recorder` (as a violation) any placement beyond the server's GPUs, any
/// training worker on a server that serves inference, and any removal of an absent job.
/// With a `node` (live mode) it fronts the machine's agent: a placement takes GPU indices,
/// a job's launch starts workers on them, a removal stops the job's workers there, and the
/// workers' reports go to the job's actor. When the server is marked down (lost), or its agent
/// registers again without some of them, the workers launched here are reported to their
/// jobs as exited with worker_lost_code; workers the returning agent still runs for jobs no
/// longer placed here are stopped. A torchrun job's node removed and placed again here with
/// as many GPUs (a rescale that leaves this server's share alone) keeps running; removed and
/// not placed again at once, it is stopped.
server_actor::behavior_type server_behavior(server_actor::stateful_pointer<server_state> self,
                                            std::string name, int gpus, int mode, recorder_actor recorder,
                                            std::shared_ptr<node_link> node);

} // namespace aryl
