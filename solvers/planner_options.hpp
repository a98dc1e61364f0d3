#pragma once
/// How the scheduler's rounds behave: the `scheduler.*` config keys (docs/design.md).
#include <vector>

#include "solvers/placement.hpp"

namespace aryl {

struct planner_options {
  placement_mode placement = placement_mode::consolidated;
  bool backfill = false;
  /// Inelastic jobs may run on loaned inference servers (DESIGN.md 3 choice: no).
  bool inelastic_on_loaned = false;
  /// Move elastic jobs off slower GPU types (loaned servers) onto faster free ones when the
  /// move pays for its restart overhead.
  bool migrate = true;
  /// A move must shorten the job's predicted remaining time by more than this.
  double migrate_min_gain_s = 60;
  bool migrate_only_when_queue_empty = false;
  /// Moves may also take GPUs held by other elastic jobs' extra workers.
  bool migrate_onto_extras = false;
  /// Place base demand on free GPUs of any type before shrinking elastic jobs' extra workers.
  bool free_gpus_first = true;
  /// Elastic jobs predicted shorter than this start on the slowest GPU type that fits.
  double short_job_s = 0;
  /// Rounds with elastic scaling or loaning re-plan elastic jobs' sizes and moves (the
  /// knapsack, over every running elastic job) at most this often, in seconds; the rounds in
  /// between only start queued jobs at their base demand on free GPUs. 0: every round
  /// re-plans (docs/design.md, "Scale period").
  double scale_period_s = 0;
  /// LAS queue thresholds in attained GPU-seconds, ascending.
  std::vector<double> las_thresholds{3600.0 * 8};

  friend bool operator==(const planner_options&, const planner_options&) = default;
};

} // namespace aryl
