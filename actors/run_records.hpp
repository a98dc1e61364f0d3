#pragma once
/// What a run produces, as plain records: decision-log lines, one record per finished job,
/// cluster snapshots. The recorder collects them; outputs.hpp turns them into files.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "actors/job_outcome.hpp"

namespace aryl {

/// What first asked for a full round's sizes since the previous full round: the run's first
/// round, a job's arrival (or restore), a job's end (done, failed or cancelled), a loan, a
/// reclaim, another change of the cluster (a fault, a drain, a server joining or back, the
/// scheduler back, a worker lost), or a scale period's timer.
enum class round_cause : int32_t { first, arrival, end, loan, reclaim, cluster, timer };
inline constexpr std::array<const char*, 7> round_cause_names{"first", "arrival", "end", "loan",
                                                              "reclaim", "cluster", "timer"};

/// What a round plans (solvers/round_planner.hpp), and what asked for it.
enum class round_scope;
struct round_kind {
  round_scope scope{};
  round_cause cause{};
};

/// One decision: virtual time, the actor that made it, what, and why.
struct event_record {
  int64_t t_us = 0;
  std::string actor;
  std::string event;
  std::string detail;
  std::string why;
};

/// One attempt of a job: from the start of its workers to the failure that retried it, or to
/// the job's end (its last attempt).
struct attempt_record {
  int64_t start_us = -1;  ///< -1: it never got workers
  int64_t end_us = 0;
  job_outcome outcome = job_outcome::done;
  /// Live mode: how its workers ended, by rank ("0:3 1:sig15"; exit code, or the signal that
  /// killed it), those that ended it; empty in simulated time.
  std::string exits;
  /// Why it ended, as events.log says (a worker that could not start says why).
  std::string why;
};

struct job_record {
  uint32_t index = 0;
  std::string name;
  int gpus = 0;
  bool elastic = false;
  int64_t submit_us = 0;
  int64_t first_start_us = 0;
  int64_t end_us = 0;
  /// Total time spent queued: first wait plus every wait after a preemption.
  double queued_s = 0;
  double gpu_seconds = 0;
  int preemptions = 0;
  int scale_ins = 0;
  int scale_outs = 0;
  double duration_s = 0;
  int last_workers = 0;
  /// Seconds with any worker on a loaned inference server.
  double on_loaned_s = 0;
  /// JCT over the job's duration at its requested workers on one server of its home type.
  double slowdown = 0;
  /// Seconds (and GPU-seconds) it held GPUs but ran below that speed, overheads included.
  double below_speed_s = 0;
  double below_speed_gpu_s = 0;
  job_outcome outcome = job_outcome::done;
  /// False when the run-time estimate was the default one (job_spec::predicted).
  bool predicted = true;
  /// Work efficiency = GPU-seconds held (gpu_seconds) over needed_gpu_s, the GPU-seconds its
  /// work needs at its requested workers on one server of its home type (gpus x duration_s /
  /// the home type's speed): above 1 it held GPUs beyond what its work needs (sub-linear
  /// scale-out, spanning servers, overheads, slower GPUs).
  double needed_gpu_s = 0;
  /// gpu_seconds by pool: on training servers, and on loaned inference servers (any worker
  /// there, as for on_loaned_s); the same with each GPU-second weighted by its type's speed
  /// over the home type's; and needed GPU-seconds of the work progressed in each pool (work
  /// units x gpus / the home type's speed).
  double training_gpu_s = 0, loaned_gpu_s = 0;
  double training_speed_gpu_s = 0, loaned_speed_gpu_s = 0;
  double training_needed_gpu_s = 0, loaned_needed_gpu_s = 0;
  /// Whether it came with a duration estimate (job_spec::estimated), and its tenant.
  bool estimated = true;
  std::string tenant;
  /// Every attempt, the last one included once it ended (jobs.csv's attempts and exits).
  std::vector<attempt_record> attempts;
};

/// Cluster state after a change; piecewise constant until the next snapshot.
struct cluster_snapshot {
  int64_t t_us = 0;
  int training_busy_gpus = 0;
  int training_gpus = 0;
  int loaned_busy_gpus = 0;
  int loaned_servers = 0;
  int serving_servers = 0;
  int reclaiming_servers = 0;
  int serving_gpus = 0;     ///< GPUs of serving and reclaiming servers
  int inference_gpus = 0;
  int queued_jobs = 0;
  int running_jobs = 0;
};

/// The summary.json fields (README, "Outputs"; docs/simulation.md, "Measures").
/// What a run measures beside its jobs, as the recorder adds it up; a scheduler restarted on
/// its journal starts from the values journaled before it went away.
struct run_measures {
  double lost_gpu_s = 0;                ///< GPU-seconds lost to faults
  std::vector<double> recoveries_s;     ///< each crashed job's first crash to running again
  std::vector<double> reclaim_latency_s;  ///< each completed reclaim, request to return (simulated s)
  double reclaim_max_late_s = 0;        ///< latest return past a reclaim's deadline
  uint64_t slo_misses = 0;              ///< servers returned after their reclaim deadline
  /// Quota reclaims (tenants): each one's stops, first stop to the last victim's
  /// checkpoint written (simulated s), and those later than tenants.reclaim_grace_s.
  std::vector<double> quota_latency_s;
  uint64_t quota_late = 0;
  double quota_max_late_s = 0;
};

struct run_summary {
  uint64_t jobs_submitted = 0;
  uint64_t jobs_completed = 0;
  uint64_t jobs_cancelled = 0;
  double mean_jct_s = 0, p50_jct_s = 0, p95_jct_s = 0, p99_jct_s = 0;
  double mean_queue_s = 0, p50_queue_s = 0, p95_queue_s = 0;
  double mean_first_wait_s = 0;
  double makespan_s = 0;
  double gpu_usage = 0;         ///< all clusters, first submit to last finish
  double window_gpu_usage = 0;  ///< all clusters, first submit to last submit
  double training_gpu_usage = 0;
  double inference_gpu_usage = 0;
  /// Sums of jobs.csv's columns over every job, whatever its outcome: a preemption is a stop
  /// of a running job that queues it again (for another job, a reclaim, a drain, a lost server,
  /// a scheduler restart that could not adopt it).
  uint64_t preemptions = 0, scale_ins = 0, scale_outs = 0;
  double loaned_server_hours = 0;
  /// Completed jobs' slowdown (job_record::slowdown), and GPU-hours below requested speed.
  double mean_slowdown = 0, p95_slowdown = 0;
  double below_speed_gpu_hours = 0;
  /// Completed jobs' work efficiency: their GPU-seconds held over the GPU-seconds their work
  /// needs (job_record::needed_gpu_s, summed: needed_gpu_hours); the same with GPU-seconds
  /// weighted by their type's speed over the job's home type's; and per pool, GPU-seconds held
  /// there over the needed GPU-seconds of the work progressed there (0 when no work was).
  double work_efficiency = 0, work_efficiency_speed_weighted = 0;
  double work_efficiency_training = 0, work_efficiency_loaned = 0;
  double needed_gpu_hours = 0;
  /// GPU-hours per pool: training jobs on training servers, on loaned inference servers, and
  /// inference servers serving demand.
  double training_gpu_hours = 0, loaned_gpu_hours = 0, serving_gpu_hours = 0;
  uint64_t reclaim_slo_misses = 0;
  /// Request to return of each completed reclaim (simulated s), and the latest past deadline.
  double reclaim_latency_p50_s = 0, reclaim_latency_p99_s = 0, reclaim_max_late_s = 0;
  /// Quota reclaims (run_measures): how many, latency p50/p99, late ones and the latest.
  uint64_t quota_reclaims = 0, quota_reclaims_late = 0;
  double quota_reclaim_p50_s = 0, quota_reclaim_p99_s = 0, quota_reclaim_max_late_s = 0;
  /// Completed jobs that came without a duration estimate, and their mean JCT.
  uint64_t jobs_without_estimate = 0;
  double mean_jct_without_estimate_s = 0;
  uint64_t jobs_failed = 0;      ///< ended failed, timeout or node_lost
  double lost_gpu_hours = 0;     ///< work lost since checkpoints, GPUs held while stalled
  uint64_t recoveries = 0;       ///< crashed jobs that ran again
  double recovery_p50_s = 0, recovery_max_s = 0;
  uint64_t events = 0;
  /// Scheduling rounds up to the last job's end, by scope (full: sizes re-planned; starts:
  /// queued jobs sized on free GPUs; local: queued jobs started at their base), and the full
  /// rounds that decided nothing: what the run's scheduling cost is made of, deterministic in
  /// simulated time. Counted by this process (a restarted `aryl serve` from its restart).
  uint64_t full_rounds = 0, full_rounds_deciding_nothing = 0, starts_rounds = 0, local_rounds = 0;
  /// The full rounds by round_cause.
  std::array<uint64_t, round_cause_names.size()> full_rounds_by_cause{};
  /// Simulated time only: messages and timers the actors handled (the test coordinator's
  /// count), a measure of the run's cost that the machine's noise does not touch.
  uint64_t actor_activations = 0;
  /// Wall seconds of the run: the process's run; live with --state, from the run's first start
  /// (saved_run::start_unix_us), the time before scheduler restarts included.
  double sim_wall_s = 0;
  /// Wall clock only: how late (simulated seconds) the latest job completion timer fired.
  /// Large values mean the machine could not keep up with the speedup.
  double max_timer_lag_s = 0;
  /// `aryl serve --state`: times the scheduler was started again on its journal; of the jobs
  /// running then, those that restarted from their checkpoints and those whose workers it
  /// adopted, still running (summary.json lists these only after a restart).
  uint32_t scheduler_restarts = 0;
  uint64_t restarts_after_scheduler_restart = 0;
  uint64_t adopted_after_scheduler_restart = 0;
  std::string policy;
  std::string placement;
  uint64_t seed = 0;
};

} // namespace aryl
