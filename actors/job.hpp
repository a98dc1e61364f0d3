#pragma once
/// The job actor: one per submitted job. It owns the job's true progress and completion
/// timer; the scheduler only ever sees what it acknowledges.
#include "actors/actor_env.hpp"
#include "runtime/job_spec.hpp"
#include "solvers/job_progress.hpp"

namespace aryl {

struct job_state {
  job_spec spec;
  job_progress progress;
  uint64_t generation = 0;
  int workers = 0;
  sim_time due;  ///< when the current completion timer is due
  static inline const char* name = "job";
};

/// Spawn with `spawn(job_behavior, spec, env)`. On each assignment it settles progress to
/// now, pays the overhead, re-arms its completion timer and acknowledges; when the timer of
/// the current generation fires it reports `finished` and quits.
job_actor::behavior_type job_behavior(job_actor::stateful_pointer<job_state> self, job_spec spec,
                                      job_env env);

} // namespace aryl
