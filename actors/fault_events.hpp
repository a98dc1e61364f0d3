#pragma once
/// A fault as the fault injector follows it: what goes wrong when, as plain data. Plans are
/// read and drawn in runtime/inputs/fault_plan.hpp; the actors only play them. Free of CAF.
#include <cstdint>
#include <string>

#include "solvers/sim_time.hpp"

namespace aryl {

struct fault_event {
  enum class kind { server_crash, worker_crash, surge, disconnect, link, checkpoint, scheduler_crash };
  kind what = kind::server_crash;
  sim_time at;
  /// server_crash: the server (t0.. for training, i0.. for inference), back after down_s seconds;
  /// down_s < 0: for good. disconnect, link: the server whose agent's link fails.
  /// scheduler_crash: the scheduler is away for down_s seconds (never for good).
  std::string server;
  double down_s = -1;
  /// worker_crash: one worker of this job dies (nothing happens if it is not running then).
  /// checkpoint: this job's next checkpoint is slow or fails (nothing if it is not active).
  uint32_t job = 0;
  /// surge: inference servers needed from then on (replaces the demand trace).
  int servers = 0;
  /// disconnect: the agent is unreachable for for_s seconds (its workers run on), then
  /// registers again. link: for for_s seconds its heartbeats and reports arrive delay_s late,
  /// and each heartbeat is lost with probability loss.
  double for_s = 0;
  double delay_s = 0;
  double loss = 0;
  /// checkpoint: it takes slow_s seconds more, or (fail) it is not written.
  double slow_s = 0;
  bool fail = false;
  std::string source;  ///< "FILE:LINE" or "random": named in the decision log
};

} // namespace aryl
