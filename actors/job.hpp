#pragma once
/// The job actor: one per submitted job. It owns the job's true progress and completion
/// timer; the scheduler only ever sees what it acknowledges.
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "actors/actor_env.hpp"
#include "solvers/job_spec.hpp"
#include "solvers/job_progress.hpp"

namespace aryl {

struct job_state {
  job_spec spec;
  std::shared_ptr<const job_env> env;  ///< the handlers' (see job_ctx)
  job_progress progress;
  uint64_t generation = 0;
  int workers = 0;
  sim_time due;  ///< when the job completes at its current rate
  /// The earliest completion timer pending, if any. A job keeps one timer, not one per
  /// assignment: a rescale that pushes completion back lets the pending timer fire and
  /// re-arm; only an earlier completion arms another.
  bool ticking = false;
  sim_time tick_at;
  // Checkpoints and crashes (simulated time):
  double ckpt_work = 0;        ///< work saved by the latest stop's checkpoint
  sim_time ckpt_until;         ///< the latest stop's checkpoint is written then
  bool crashed = false;        ///< workers died; no progress until a reassignment without them
  sim_time crashed_at;
  std::set<int> dead_servers;  ///< crashed servers the current assignment still holds
  bool recovering = false;     ///< since the first crash, not yet running again
  sim_time recover_from;
  /// A checkpoint fault waiting for the job's next checkpoint (armed then), or spoiling the
  /// periodic one it fell on while that is the latest.
  std::optional<checkpoint_fault> ckpt_fault;
  sim_time ckpt_fault_armed;
  // Live mode (env.workers.follow_workers):
  std::set<uint32_t> live_ranks;        ///< ranks of the current launch that have not exited
  std::optional<job_assignment> next;   ///< set while the previous launch's workers stop
  bool stopping = false;                ///< a worker failed: the launch's exits are expected
  /// The current launch's exits that the scheduler did not ask for: what the job's attempt
  /// records (sent to the scheduler before the failure or the end they cause).
  std::vector<worker_exit> exits;
  int64_t decided_unix_ns = 0;          ///< when the latest assignment arrived (system clock)
  // Live mode, a torchrun job: one node (process) per server, TorchElastic re-forming the
  // group when nodes come and go; live_ranks then holds node slots, not ranks.
  bool torchrun = false;
  std::map<int, uint32_t> node_slot;    ///< server -> the slot its node reports under
  std::map<int, int> node_share;        ///< server -> the workers its node runs
  std::set<uint32_t> leaving;           ///< slots of nodes a rescale stopped: exits expected
  std::optional<uint64_t> ack_when_left;  ///< an assignment acknowledged once they have exited
  uint64_t rdzv_epoch = 0;              ///< the generation its rendezvous started at
  int rdzv_server = -1;                 ///< the server hosting it when no store is kept outside
  static inline const char* name = "job";
};

/// Spawn with `spawn(job_behavior, spec, env)`. On each assignment it settles progress to
/// now, pays the overhead, moves its completion time and acknowledges (after the stopped
/// workers' checkpoint is written); when its completion timer fires at that time it reports
/// `finished` and quits (one timer: fired early, it re-arms for the completion time). A crash
/// rolls it back to its latest checkpoint and stalls it until an assignment without the dead
/// servers; a worker crash is reported to the scheduler at once.
/// A checkpoint fault falls on its next checkpoint: a slow one is written (and acknowledged)
/// later, a failed one leaves the checkpoint before as the one it restarts from.
/// Live mode (env.workers.follow_workers): instead of a timer, real workers. On an
/// assignment it waits until the workers of the previous one have exited (the scheduler's
/// removal stops them), launches the new ones through the server actors, and acknowledges;
/// progress is what rank 0 reports; it is done when every worker exits 0. A worker that
/// fails on its own (or is given up for lost with its machine) goes the way of a simulated
/// worker crash: `wfail` to the scheduler, which reassigns the job from its checkpoint.
job_actor::behavior_type job_behavior(job_actor::stateful_pointer<job_state> self, job_spec spec,
                                      job_env env);
/// The same, with the environment shared by every job the caller spawns (the scheduler's):
/// `spawn(job_behavior_shared, std::move(spec), env)`; the spec is taken, not copied.
job_actor::behavior_type job_behavior_shared(job_actor::stateful_pointer<job_state> self, job_spec&& spec,
                                             std::shared_ptr<const job_env> env);

} // namespace aryl
