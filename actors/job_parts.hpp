#pragma once
/// What the job actor's source files share: job.cpp (the behavior, and a job's run in
/// simulated time), job_checkpoints.cpp (checkpoints, checkpoint faults and the work a
/// roll-back loses) and job_workers.cpp (live mode: its real workers or torchrun nodes).
/// Internal to the actor: nothing else includes it.
#include <cstdint>
#include <memory>
#include <set>
#include <utility>

#include "actors/job.hpp"

namespace aryl::job_detail {

/// What every handler of one job's actor works with. The environment is shared, not copied:
/// every handler holds it, and a job starts for each of thousands of trace rows. The state
/// owns it (job_state::env); the handlers, copied as the behaviour is made, hold a plain
/// pointer, so making one copies no reference count.
struct job_ctx {
  job_actor::stateful_pointer<job_state> self;
  const job_env* env;

  job_state& st() const { return self->state; }
  scheduler_actor scheduler() const { return caf::actor_cast<scheduler_actor>(env->scheduler); }
  sim_time now() const { return env->tb.now(self); }
  /// Tells the scheduler the assignment of `generation` is in effect, at the work done now.
  void ack(uint64_t generation) const {
    self->send(scheduler(), ack_atom::value, job_ack{st().spec.index, generation, st().progress.work_done});
  }
};

// job_checkpoints.cpp
/// A stop's checkpoint time: fixed + per worker, within +-jitter, the same for the same job,
/// generation and seed.
double checkpoint_time(const checkpoint_settings& c, uint32_t job, uint64_t generation, int workers);
/// Where an armed checkpoint fault stands at `now`: waiting for its checkpoint (the job's
/// next, from when it was armed), spoiling the periodic checkpoint it fell on (which is the
/// latest, and failed or not written yet), or past (that checkpoint no longer matters).
enum class fault_stage { none, waiting, spoiling, past };
fault_stage stage_at(const job_ctx& c, sim_time now);
/// The work saved by the latest good checkpoint at `now` (the stop's at the start of this
/// run, or a periodic one), and whether a checkpoint fault spoiled the latest periodic one.
/// The run ends here (a crash or a reassignment): a fault whose checkpoint came is spent.
std::pair<double, bool> last_good(const job_ctx& c, sim_time now);
/// Reports a violation if a roll-back from `done` to `saved` lost more than one checkpoint
/// interval of work (two when the checkpoint in between was `spoiled`).
void check_loss(const job_ctx& c, double done, double saved, bool spoiled, const char* how);
/// What stopping the current workers for assignment `a` costs (simulated time): the stop's
/// checkpoint, written now, slow or failing if a checkpoint fault falls on it.
struct stop_cost {
  double stop_s = 0;          ///< until the stopped workers' checkpoint is written
  double late_s = 0;          ///< added to the new workers' start
  bool rolled_back = false;   ///< the checkpoint failed: back to the one before
};
stop_cost stop_for(const job_ctx& c, const job_assignment& a, sim_time now, double before);
/// ckfault(f): arms `f` for the job's next checkpoint, unless one is armed already.
void on_checkpoint_fault(const job_ctx& c, const checkpoint_fault& f);
/// crash(server, or -1 for one worker process): rolls back to the latest good checkpoint and
/// stalls until an assignment without the dead servers.
void on_crash(const job_ctx& c, int server);

// job_workers.cpp (live mode)
/// assign(a): launches `a`'s workers (or torchrun nodes) once the previous ones have exited.
void assign_workers(const job_ctx& c, const job_assignment& a);
/// wprogress(rank, work_done): rank 0's progress.
void on_worker_progress(const job_ctx& c, uint32_t rank, double work_done);
/// adopt(a): after a scheduler restart, the workers of `a` run already: they are its launch.
void adopt_workers(const job_ctx& c, const job_assignment& a);
/// wexit(e): a worker (or node) of the current launch exited.
void on_worker_exit(const job_ctx& c, const worker_exit& e);

} // namespace aryl::job_detail
