#pragma once
/// Live mode: how a job's real workers are run. Plain types: the driver and the live
/// runtime include this without CAF.
#include <string>
#include <vector>

namespace aryl {

/// In simulated time `follow_workers` is false and each job's own completion timer, from the
/// throughput model, says when it is done.
struct worker_settings {
  /// The job is done when every worker of its current launch exits 0; it waits for the old
  /// workers to exit before launching a new size.
  bool follow_workers = false;
  /// Simulated seconds per real second: emulated workers progress this much faster.
  double speedup = 1;
  /// argv of the worker; empty: the agent's emulated worker.
  std::vector<std::string> command;
  /// Whether a job's command runs one process per server that starts the server's workers
  /// itself (a torchrun launch: runtime/inputs/torchrun_command.hpp); null: none does.
  bool (*node_per_server)(const std::vector<std::string>& command) = nullptr;
};

} // namespace aryl
