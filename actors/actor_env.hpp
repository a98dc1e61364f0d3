#pragma once
/// What actors are given at spawn: handles of their peers, the time base, and settings.
/// Nothing here is global; two runs can live side by side in one process.
#include <memory>
#include <string>
#include <vector>

#include "actors/inference_protocol.hpp"
#include "actors/job_protocol.hpp"
#include "actors/journal_protocol.hpp"
#include "actors/recorder_protocol.hpp"
#include "actors/scheduler_protocol.hpp"
#include "actors/server_directory.hpp"
#include "actors/server_protocol.hpp"
#include "actors/worker_settings.hpp"
#include "actors/timebase.hpp"
#include "solvers/throughput.hpp"

namespace aryl {

/// When jobs checkpoint, and how long a stop's checkpoint takes (config jobs.checkpoint_*).
struct checkpoint_settings {
  double interval_s = 0;   ///< periodic, in the job's run time; 0: only when stopped
  double fixed_s = 0;
  double per_gpu_s = 0;
  double jitter = 0;       ///< +- share of the time, from `seed`, the job and its generation
  uint64_t seed = 0;
};

struct job_env {
  timebase tb;
  throughput_model model;
  /// Weak: the scheduler owns its jobs, and a strong handle back would keep both alive
  /// for ever (the scheduler's own copy of this struct would even hold itself).
  caf::actor_addr scheduler;
  recorder_actor recorder;
  bool check_invariants = false;
  worker_settings workers = {};
  /// Server actors by id (live mode: a job launches its workers through them).
  std::shared_ptr<server_directory> servers = {};
  checkpoint_settings checkpoints = {};
  /// `aryl serve --state`: where rank 0's progress is journaled; null: nowhere.
  journal_actor journal = {};
};

} // namespace aryl
