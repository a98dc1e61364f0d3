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

/// Live mode, server -> job: the exit code of a worker given up for lost (its machine was lost,
/// or its agent came back without it): its real exit will never be reported.
constexpr int worker_lost_code = -1;
constexpr int worker_lost_signal = 9;

} // namespace aryl
