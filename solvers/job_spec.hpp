#pragma once
/// A training job as read from a trace: what was submitted, before any scheduling.
#include <cstdint>
#include <string>
#include <vector>

#include "solvers/sim_time.hpp"

namespace aryl {

struct job_spec {
  /// Dense index, 0..n-1 in (stable) submit order; the key every actor uses.
  uint32_t index = 0;
  /// Name from the trace (or generated); only for outputs.
  std::string name;
  sim_time submit;
  /// Requested GPUs (= workers; one GPU per worker).
  int gpus = 1;
  /// Run time in seconds at `gpus` workers on a speed-1.0 GPU: the job's true work.
  double duration_s = 0;
  /// Required GPU type; empty = any type.
  std::string gpu_type;
  bool elastic = false;
  /// Inelastic jobs: min = max = gpus.
  int min_workers = 1;
  int max_workers = 1;
  /// Predicted work = true work x this factor (1 = exact prediction).
  double predict_factor = 1.0;
  /// False: the job came without a duration estimate (a canonical row with `estimate_s` empty,
  /// jobs.unestimated_fraction, a live submit without --duration); the scheduler estimates its
  /// remaining time from ended jobs (solvers/duration_estimate.hpp) and never reads duration_s.
  bool estimated = true;
  /// The trace's own estimate in seconds (canonical `estimate_s`); 0: duration_s x predict_factor.
  double estimate_s = 0;
  std::string user;
  /// Who the job runs for: the Philly VC, the canonical `tenant` column; empty: no tenant.
  std::string tenant;
  /// Its class: higher goes first and may stop lower (docs/tenants.md, "Priorities"); the
  /// canonical `priority` column, `aryl submit --priority`; 0 by default.
  int priority = 0;
  /// False for a submitted job that gave no run-time estimate: duration_s is then the
  /// configured default (live.default_estimate_s), not the user's.
  bool predicted = true;
  /// Seconds it may hold workers in one attempt (Slurm's --time): at the limit it is stopped and
  /// ends as timeout. Waiting in the queue after a preemption does not count; a retry after a
  /// failure starts a new attempt. 0: no limit.
  double time_limit_s = 0;
  /// Retries after a failure (a worker exiting non-zero, a lost machine) before it ends failed
  /// or node_lost (Kubernetes' backoffLimit); -1: the config's faults.max_retries.
  int max_retries = -1;
  /// `aryl hold`: queued, never started until `aryl release` (journaled with the job).
  bool held = false;
  /// `aryl submit --after`: the jobs that must end first and how, "ok:3,any:5"
  /// (solvers/job_queue_rules.hpp); empty: none.
  std::string after;
  /// An array task (`aryl submit --array`): its array's id (the index of its first task; -1:
  /// not a task), its task id, the array's task count and the most of its tasks queued or
  /// running at once (0: no limit). On a client's submit, `array` is the task list as given
  /// ("0-99%10"), expanded by the scheduler.
  std::string array;
  int64_t array_job = -1;
  uint32_t array_task = 0;
  uint32_t array_count = 0;
  uint32_t array_limit = 0;
  /// Live mode: argv of each worker (submitted with the job); empty = live.worker_command.
  std::vector<std::string> command;
  /// `aryl submit --key`: a submit of the same user with the same key is answered the first
  /// one's job id and takes no second job (a retry is safe); empty: none.
  std::string key;
};

} // namespace aryl
