#pragma once
/// Fault plans (`--faults FILE`, `faults.random.*`): what goes wrong when, as plain data. A
/// plan from a file and a seeded random one are merged and sorted; the fault actor follows
/// it in simulated time. Free of CAF.
#include <cstdint>
#include <string>
#include <vector>

#include "solvers/sim_time.hpp"

namespace aryl {

struct fault_event {
  enum class kind { server_crash, worker_crash, surge };
  kind what = kind::server_crash;
  sim_time at;
  /// server_crash: the server (a training server's name, t0..), back after down_s seconds;
  /// down_s < 0: for good.
  std::string server;
  double down_s = -1;
  /// worker_crash: one worker of this job dies (nothing happens if it is not running then).
  uint32_t job = 0;
  /// surge: inference servers needed from then on (replaces the demand trace).
  int servers = 0;
  std::string source;  ///< "FILE:LINE" or "random": named in the decision log
};

/// Seeded random faults over [0, span_s): Poisson arrivals at these rates.
struct random_fault_rates {
  double server_crash_per_day = 0;  ///< per training server
  double mean_down_s = 3600;        ///< exponential; a crash is permanent with permanent_fraction
  double permanent_fraction = 0;
  double worker_crash_per_day = 0;  ///< over the cluster, on a random job
  double surge_per_day = 0;         ///< demand steps to a random level in 0..inference servers
  bool any() const { return server_crash_per_day > 0 || worker_crash_per_day > 0 || surge_per_day > 0; }
  friend bool operator==(const random_fault_rates&, const random_fault_rates&) = default;
};

/// Reads a plan file: YAML `faults:` list of maps, each with `at` (seconds) and one of
/// `server_crash: NAME` (with optional `down_for: S`), `worker_crash: JOB`, `surge: SERVERS`.
/// Throws input_error naming the file, line and key; `servers` are the configured training
/// servers' names (a crash names one of them).
std::vector<fault_event> read_fault_plan(const std::string& path, const std::vector<std::string>& servers);

/// Random faults, the same for the same arguments.
std::vector<fault_event> random_fault_plan(const random_fault_rates& r, uint64_t seed, double span_s,
                                           const std::vector<std::string>& servers, uint32_t jobs,
                                           int inference_servers);

} // namespace aryl
