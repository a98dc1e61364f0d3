#pragma once
/// Scheduler <-> job actor protocol. The scheduler decides; the job actor owns its progress
/// and its completion timer, and acknowledges every assignment.
#include <caf/all.hpp>

#include <cstdint>
#include <vector>

namespace aryl {

using assign_atom = caf::atom_constant<caf::atom("assign")>;
using ack_atom = caf::atom_constant<caf::atom("ack")>;
using finished_atom = caf::atom_constant<caf::atom("finished")>;
using tick_atom = caf::atom_constant<caf::atom("tick")>;

/// A job's whole allocation after a decision. workers == 0 means stop (preempt): the job
/// checkpoints and waits. Every assignment carries a new generation; a completion timer
/// armed under an older generation is stale and ignored.
struct job_assignment {
  uint64_t generation = 0;
  int workers = 0;
  double type_speed = 1.0;
  /// Seconds without progress before running at the new rate (restart or rescale cost).
  double overhead_s = 0;
  std::vector<int> servers;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, job_assignment& x) {
  return f(caf::meta::type_name("job_assignment"), x.generation, x.workers, x.type_speed, x.overhead_s,
           x.servers);
}

/// Job -> scheduler: the assignment of `generation` is in effect; `work_done` at that time.
struct job_ack {
  uint32_t job = 0;
  uint64_t generation = 0;
  double work_done = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, job_ack& x) {
  return f(caf::meta::type_name("job_ack"), x.job, x.generation, x.work_done);
}

using job_actor = caf::typed_actor<caf::reacts_to<assign_atom, job_assignment>,
                                   caf::reacts_to<tick_atom, uint64_t>>;

} // namespace aryl
