#pragma once
/// Fault plans (`--faults FILE`, `faults.random.*`): read from a file or drawn at random, merged
/// and sorted into the fault events (actors/fault_events.hpp) the fault actor follows in
/// simulated time. Free of CAF.
#include <cstdint>
#include <string>
#include <vector>

#include "actors/fault_events.hpp"
#include "solvers/sim_time.hpp"

namespace aryl {

/// Seeded random faults over [0, span_s): Poisson arrivals at these rates.
struct random_fault_rates {
  double server_crash_per_day = 0;  ///< per training server
  double mean_down_s = 3600;        ///< exponential; a crash is permanent with permanent_fraction
  double permanent_fraction = 0;
  /// Server crashes, disconnects and bad links strike inference servers too, at the same rates
  /// (drawn after the training servers': those stay where they were).
  bool inference_servers = false;
  double worker_crash_per_day = 0;  ///< over the cluster, on a random job
  double surge_per_day = 0;         ///< demand steps to a random level in 0..inference servers
  double disconnect_per_day = 0;    ///< per training server, for an exponential time:
  double mean_disconnect_s = 300;
  double link_per_day = 0;          ///< per training server, for an exponential time:
  double mean_link_s = 600;
  double link_delay_s = 5;          ///< ... with this delay
  double link_loss = 0.2;           ///< ... and this heartbeat loss
  double checkpoint_fail_per_day = 0;  ///< over the cluster, on a random job
  double checkpoint_slow_per_day = 0;  ///< over the cluster, on a random job, slower by an
  double mean_checkpoint_slow_s = 300; ///< exponential time
  double scheduler_crash_per_day = 0;  ///< the scheduler, away for an exponential time:
  double mean_scheduler_down_s = 60;
  bool any() const {
    return server_crash_per_day > 0 || worker_crash_per_day > 0 || surge_per_day > 0 || disconnect_per_day > 0 ||
           link_per_day > 0 || checkpoint_fail_per_day > 0 || checkpoint_slow_per_day > 0 ||
           scheduler_crash_per_day > 0;
  }
  friend bool operator==(const random_fault_rates&, const random_fault_rates&) = default;
};

/// Reads a plan file: YAML `faults:` list of maps, each with `at` (seconds) and one of
/// `server_crash: NAME` (with optional `down_for: S`), `worker_crash: JOB`, `surge: SERVERS`,
/// `disconnect: NAME` (with `for: S`), `link: NAME` (with `for: S` and `delay_s: D` and/or
/// `loss: P`), `checkpoint: JOB` (with `slow_s: X` or `fail: true`), `scheduler_crash: true` (with
/// `down_for: S`); nothing else, at the top level or in an entry. Job numbers and surge levels
/// are whole numbers. Throws input_error naming the file, line and key; `servers` are the
/// configured servers' names, training then inference (a server fault names one of them).
std::vector<fault_event> read_fault_plan(const std::string& path, const std::vector<std::string>& servers);

/// A simulated run's plan may strike only the jobs of its workload (indices 0..jobs-1): throws
/// input_error naming the entry's FILE:LINE otherwise. (Live mode's jobs arrive as they are
/// submitted: its plans are not checked against the trace.)
void check_fault_jobs(const std::vector<fault_event>& plan, size_t jobs);

/// Random faults, the same for the same arguments.
std::vector<fault_event> random_fault_plan(const random_fault_rates& r, uint64_t seed, double span_s,
                                           const std::vector<std::string>& servers, uint32_t jobs,
                                           int inference_servers);

} // namespace aryl
