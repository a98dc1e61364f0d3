#pragma once
/// Runs one simulation: builds the cluster from the config, spawns the actors, drives time
/// (simulated or wall clock) until every job has finished, and returns the summary.
/// Free of CAF types so that the command line and tests include it cheaply.
#include <ostream>
#include <string>
#include <vector>

#include "runtime/config.hpp"
#include "runtime/inference_demand.hpp"
#include "runtime/job_spec.hpp"
#include "runtime/run_records.hpp"

namespace aryl {

struct run_inputs {
  std::vector<job_spec> jobs;          ///< sorted by submit time, index = position
  std::vector<demand_point> demand;    ///< inference demand (servers needed)
};

struct run_outcome {
  bool ok = false;
  /// Why the run stopped early: an invariant violation or a deadlock, with a state dump, or
  /// an input error found while running (one line).
  std::string error;
  /// The process exit code: 0 ok, 2 input error, 3 run stopped, 4 internal error.
  int exit_code = 3;
  /// Something the user should know about a successful run (wall clock falling behind).
  std::string warning;
  run_summary summary;
};

/// Throws input_error for inputs that can never run (a job larger than the cluster, a GPU
/// type the cluster lacks, a job that would outlast the simulation horizon) and for output
/// files that cannot be written. `progress` gets a progress line now and then on long runs.
run_outcome run_simulation(const config& c, run_inputs in, std::ostream* progress);

} // namespace aryl
