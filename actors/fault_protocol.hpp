#pragma once
/// Faults in simulated time: the fault actor's messages, and what a crash tells the actors it
/// reaches. A crash is physical (workers die at once); the scheduler learns of a lost server
/// only when its heartbeats stop arriving.
#include <caf/all.hpp>

#include <cstdint>

namespace aryl {

/// scheduler: crash(server id, down µs; < 0: for good): the server's machine dies now.
/// job: crash(server id, or -1 for one worker process): its workers there died now.
using crash_atom = caf::atom_constant<caf::atom("crash")>;
/// scheduler, fault actor -> scheduler: wcrash(job): one worker process of the job dies.
using wcrash_atom = caf::atom_constant<caf::atom("wcrash")>;
/// scheduler: lost(server): its heartbeats stopped (self-sent after a simulated crash; from the
/// live gateway when an agent stayed away for the detection grace); back(server): its agent
/// registers again (self-sent after a simulated down time; from the live gateway).
using lost_atom = caf::atom_constant<caf::atom("lost")>;
using back_atom = caf::atom_constant<caf::atom("back")>;
/// job -> scheduler: wfail(job): a worker process of the job died (its agent reports the exit
/// at once); the job has rolled back to its last checkpoint.
using wfail_atom = caf::atom_constant<caf::atom("wfail")>;
/// job, self-sent: ckpt(generation, work): the stop's checkpoint is written; acknowledge.
using ckpt_atom = caf::atom_constant<caf::atom("ckpt")>;
/// Live mode, gateway -> server: reconcile(jobs, ranks, launches): the workers (pairs jobs[i],
/// ranks[i]) its agent runs, as it reported them on registering again (with the launches kept
/// for it while away), when the gateway had taken the server's first `launches` launches.
using reconcile_atom = caf::atom_constant<caf::atom("reconcile")>;

/// scheduler, from the fault actor: linkfault(fault): an agent's link to the scheduler goes
/// bad (its machine and workers carry on); the scheduler notices only missed heartbeats.
using linkfault_atom = caf::atom_constant<caf::atom("linkfault")>;
/// scheduler, from the fault actor: ckfault(job, fault); job, from the scheduler:
/// ckfault(fault): the job's next checkpoint is slow or fails.
using ckfault_atom = caf::atom_constant<caf::atom("ckfault")>;

/// scheduler, from the fault actor: away(down µs): the scheduler crashes and is back after
/// that long. Meanwhile it decides nothing and every message to it waits, except the faults it
/// passes on to the actors they strike; self-sent awake() ends it.
using away_atom = caf::atom_constant<caf::atom("away")>;
using awake_atom = caf::atom_constant<caf::atom("awake")>;

/// A bad link between one training server's agent and the scheduler, for `for_us` of
/// simulated time: heartbeats and reports arrive `delay_s` late, and each heartbeat is lost
/// with probability `loss`. A disconnect loses everything and ends with the agent
/// registering again.
struct link_fault {
  int server = -1;
  int64_t for_us = 0;
  double delay_s = 0;
  double loss = 0;
  bool reconnects = false;

  static link_fault disconnect(int server, int64_t for_us) { return {server, for_us, 0, 1, true}; }
  static link_fault degraded(int server, int64_t for_us, double delay_s, double loss) {
    return {server, for_us, delay_s, loss, false};
  }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, link_fault& x) {
  return f(caf::meta::type_name("link_fault"), x.server, x.for_us, x.delay_s, x.loss, x.reconnects);
}

/// What goes wrong with a job's next checkpoint: it takes `slow_s` more seconds, or it fails
/// (the job runs on; its latest good checkpoint stays the one before).
struct checkpoint_fault {
  double slow_s = 0;
  bool fail = false;

  static checkpoint_fault slow(double s) { return {s, false}; }
  static checkpoint_fault failed() { return {0, true}; }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, checkpoint_fault& x) {
  return f(caf::meta::type_name("checkpoint_fault"), x.slow_s, x.fail);
}

/// Live mode, server -> job: the exit code of a worker given up for lost (its machine was lost,
/// or its agent came back without it): its real exit will never be reported.
constexpr int worker_lost_code = -1;
constexpr int worker_lost_signal = 9;

} // namespace aryl
