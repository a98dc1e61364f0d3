#pragma once
/// Scheduler <-> job actor protocol. The scheduler decides; the job actor owns its progress
/// and its completion timer, and acknowledges the assignments the scheduler waits on.
#include <caf/all.hpp>

#include "actors/atoms.hpp"
#include "actors/fault_protocol.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace aryl {

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
  /// Workers on each of `servers` (same order).
  std::vector<int> server_workers;
  /// Seconds the assignment and its answers spend on slow links to the job's servers (a
  /// simulated link fault): new workers start, and the acknowledgement comes, that much later.
  double link_delay_s = 0;
  /// Whether the scheduler waits for this assignment's acknowledgement: a reclaim waits for
  /// the jobs on the servers it takes back. Others are not acknowledged.
  bool ack = true;
};

/// Servers the assignment's workers span: with `workers`, what the throughput model needs.
inline int servers_spanned(const job_assignment& a) {
  int n = 0;
  for (int w : a.server_workers) n += w > 0 ? 1 : 0;
  return n;
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, job_assignment& x) {
  return f(caf::meta::type_name("job_assignment"), x.generation, x.workers, x.type_speed, x.overhead_s,
           x.servers, x.server_workers, x.link_delay_s, x.ack);
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

/// Live mode: how one worker process ended, as its agent reported it.
struct worker_exit {
  uint32_t rank = 0;
  int code = 0;    ///< its exit status; 0 when a signal killed it
  int signal = 0;  ///< the signal that killed it; 0: none
  /// Why it could not start, as the agent says (a command that is not executable); else empty.
  std::string reason{};
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_exit& x) {
  return f(caf::meta::type_name("worker_exit"), x.rank, x.code, x.signal, x.reason);
}

/// assign, tick (its own completion timer), crash(server or -1), ckpt (its own: a stop's
/// checkpoint is written), ckfault (its next checkpoint is slow or fails); live mode: wprogress(rank, work_done) and
/// wexit(exit) from the workers of its current launch; adopt(assignment):
/// after a scheduler restart, the workers of `assignment` still run: they are its launch.
using job_actor = caf::typed_actor<caf::reacts_to<assign_atom, job_assignment>,
                                   caf::reacts_to<tick_atom>,
                                   caf::reacts_to<crash_atom, int>,
                                   caf::reacts_to<ckpt_atom, uint64_t, double>,
                                   caf::reacts_to<ckfault_atom, checkpoint_fault>,
                                   caf::reacts_to<wprogress_atom, uint32_t, double>,
                                   caf::reacts_to<wexit_atom, worker_exit>,
                                   caf::reacts_to<adopt_atom, job_assignment>>;

} // namespace aryl
