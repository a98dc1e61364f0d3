#pragma once
/// How the scheduler's rounds behave: the `scheduler.*` config keys (docs/round.md,
/// docs/config.md).
#include <algorithm>
#include <optional>
#include <vector>

#include "solvers/placement.hpp"
#include "solvers/policy.hpp"

namespace aryl {

/// What an extra worker is worth (docs/elastic.md, "What a change of size must pay").
enum class scale_horizon {
  hold,  ///< the JCT it saves over the time the job is expected to keep it
  end,   ///< the JCT it saves if kept until the job ends (every round re-decides)
};

/// The fewest workers an elastic job runs with (docs/elastic.md, "The floor of an elastic job").
enum class elastic_floor {
  request,  ///< its requested size: it starts there and is never shrunk below it
  min,      ///< its min_workers: it may start there and be shrunk to it (the paper's base)
};

/// Which rounds re-plan elastic sizes (docs/round.md, "Scale rounds").
enum class scale_rounds {
  every,     ///< every round (the knapsack over every running elastic job)
  capacity,  ///< rounds after GPUs were freed that an elastic job could use, or the cluster
             ///< changed; an elastic job arriving with free GPUs to grow on is sized alone
             ///< on them; the other rounds only start queued jobs
  arrivals,  ///< as capacity, but such an arrival re-plans every size
};

struct planner_options {
  placement_mode placement = placement_mode::consolidated;
  /// A queued job that finds no room does not stop the queue: later jobs may start
  /// (docs/preemption.md, "Backfill"). Unset: on for the policies that loan or scale (aryl and
  /// its two halves), off for the rigid ones, as those baselines are defined (`backfills`).
  std::optional<bool> backfill;
  /// A queued job that has waited this long (seconds, in all) is tried first in full and
  /// starts rounds, and when it finds no room the free GPUs of the servers that would hold it
  /// soonest are held for it: no start and no growth there until it fits (0: off).
  double reserve_after_s = 0;
  /// ... and so does a job queued at least this many times its predicted run at its request,
  /// and at least reserve_stretch_min_s (0: off): a job, most often a short wide one, that
  /// the jobs backfilling past it starve. The job that holds servers may stop jobs already
  /// stopped max_preemptions times (docs/preemption.md, "Starved jobs").
  double reserve_stretch = 5;
  double reserve_stretch_min_s = 1800;
  /// While servers are held so, a queued job predicted to end before they would hold the
  /// waiting job (EASY backfilling's shadow time) may start on them.
  bool shadow_backfill = true;
  /// Inelastic jobs may run on loaned inference servers (no by default: a reclaim can then scale a job in instead of preempting it).
  bool inelastic_on_loaned = false;
  /// Move elastic jobs off slower GPU types (loaned servers) onto faster free ones when the
  /// move pays for its restart overhead.
  bool migrate = true;
  /// An elastic job above its minimum moves with its size when the faster free GPUs hold
  /// it, instead of at its minimum (which may be slower than where it is).
  bool move_with_size = true;
  /// A move must shorten the job's predicted remaining time by more than this.
  double migrate_min_gain_s = 60;
  /// Place base demand on free GPUs of any type before shrinking elastic jobs' extra workers.
  bool free_gpus_first = false;
  /// Elastic jobs predicted to run at least this long start only on their fastest GPU type,
  /// when its servers can hold them: on a slower one they would lose more than they wait
  /// (docs/elastic.md, "Long jobs on their fastest type"). 0: off.
  double long_job_s = 100000;
  /// Rounds with elastic scaling or loaning re-plan elastic jobs' sizes and moves (the
  /// knapsack, over every running elastic job) at most this often, in seconds; the rounds in
  /// between only start queued jobs at their base demand on free GPUs. 0: every round
  /// re-plans (docs/round.md, "Scale period").
  double scale_period_s = 0;
  /// A token bucket on the valuation work of full rounds: a full round values every running
  /// elastic job, so it takes that many tokens; the bucket refills at scale_budget_per_s per
  /// simulated second up to scale_budget_burst. A round the bucket cannot pay for is local,
  /// and a timer brings the full round once the bucket holds enough (all of it when it is
  /// smaller than the round). 0: no budget (docs/round.md, "Scale budget"). The defaults never
  /// bind on docs/results.md's windows (64 + 64 servers); they bind from ~200k synthetic jobs.
  double scale_budget_per_s = 20;
  double scale_budget_burst = 100000;
  /// While jobs queue, a job's end re-plans sizes at most this long after the last full
  /// round: the round at the end only starts queued jobs, and the end's sizes wait for the
  /// next full round, at most this long (scale_rounds capacity or arrivals; 0: at once;
  /// docs/round.md, "Ends under a queue").
  double end_scale_period_s = 120;
  scale_rounds rounds = scale_rounds::arrivals;
  elastic_floor floor = elastic_floor::request;
  scale_horizon horizon = scale_horizon::hold;
  /// A change of an elastic job's size must gain this many seconds of predicted JCT beyond
  /// its full cost.
  double rescale_margin_s = 60;
  /// After its allocation changes, a job keeps its size this long unless queued base
  /// demand, a reclaim or a fault takes its GPUs: no voluntary growth or shrink.
  double rescale_cooldown_s = 3600;
  /// A size is offered only if each of its GPUs does at least this fraction of the work a
  /// GPU does at the job's minimum (sub-linear scaling and spanning servers waste GPUs).
  double min_extra_efficiency = 0.8;
  /// An elastic job's base that fits one server goes on the tightest server with room for
  /// its maximum (at most a server), if there is one, else on the tightest that holds it:
  /// growth then stays on its server.
  bool base_room_to_grow = true;
  /// A running elastic job spread over more servers than its workers need moves onto fewer
  /// when GPUs free up, if the rate it gains over its expected hold pays for the change.
  bool consolidate = true;
  /// A queued job whose base demand fits nowhere may preempt running jobs without extra
  /// workers when each victim's predicted remaining time exceeds this many times the queued
  /// job's predicted run plus the victim's restart and checkpoint (0: off).
  double preempt_ratio = 4;
  /// ... but never a job already preempted this many times (no job starves).
  int max_preemptions = 10;
  /// A queued job whose base demand fits only on a slower GPU type (loaned servers) may
  /// preempt on its fastest type by the rule above when the time it saves there exceeds what
  /// its victims lose (their wait for its run, their restarts and checkpoints).
  bool preempt_for_speed = true;
  /// The holding-time estimate's prior mean and the half-life of its observations
  /// (cluster_ledger::hold_estimate), seconds.
  double hold_prior_s = 3600;
  double hold_halflife_s = 6 * 3600;
  /// A job without an estimate whose tenant and cluster have no ended job yet is expected to
  /// run this long (seconds at its requested workers on a speed-1 GPU).
  double unestimated_prior_s = 3600;
  /// LAS queue thresholds in attained GPU-seconds, ascending.
  std::vector<double> las_thresholds{3600.0 * 8};
  /// A full round plans only the running elastic jobs a later step could change or let
  /// change another job's outcome (running_plans.cpp, inert()). No config key: skipping the
  /// others changes no decision, and the test that proves it turns this off.
  bool skip_inert = true;

  friend bool operator==(const planner_options&, const planner_options&) = default;
};

/// `o` with the scaling rule aryl had before sizes had to pay for themselves: extras valued
/// as kept to the job's end, no margin, cooldown or efficiency floor, no preemption for
/// queued jobs, bases by best fit, moves at the minimum (every idle GPU goes to extras at
/// once). For comparisons and for tests of mechanisms that need extras on every free GPU.
inline planner_options myopic_scaling(planner_options o) {
  o.horizon = scale_horizon::end;
  o.rescale_margin_s = 0;
  o.rescale_cooldown_s = 0;
  o.min_extra_efficiency = 0;
  o.preempt_ratio = 0;
  o.base_room_to_grow = false;
  o.move_with_size = false;
  o.consolidate = false;
  o.backfill = false;
  return o;
}

/// The fewest workers the scheduler gives elastic job (min_workers, gpus, max_workers) under `o`:
/// every step that reads a job's minimum (its base demand, its extra workers, how far a
/// reclaim, queued demand or a fault may shrink it) reads this one. `cap`: the most GPUs of one
/// type the cluster has for the job (0: unknown); a request above it is floored there, never
/// below the minimum, so a job the cluster can hold at its minimum runs.
inline int floor_workers(int min_workers, int gpus, int max_workers, const planner_options& o, long cap = 0) {
  if (o.floor == elastic_floor::min) return min_workers;
  int f = gpus < min_workers ? min_workers : gpus > max_workers ? max_workers : gpus;
  if (cap > 0 && f > cap) f = static_cast<int>(std::max<long>(min_workers, cap));
  return f;
}

/// Whether policy `p` backfills under `o` (planner_options::backfill).
inline bool backfills(const policy_spec& p, const planner_options& o) {
  return o.backfill.value_or(p.elastic || p.loaning);
}

} // namespace aryl
