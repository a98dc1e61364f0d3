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
/// scheduler, self-sent: lost(server): its heartbeats stopped; back(server): it registers again.
using lost_atom = caf::atom_constant<caf::atom("lost")>;
using back_atom = caf::atom_constant<caf::atom("back")>;
/// job -> scheduler: wfail(job): a worker process of the job died (its agent reports the exit
/// at once); the job has rolled back to its last checkpoint.
using wfail_atom = caf::atom_constant<caf::atom("wfail")>;
/// job, self-sent: ckpt(generation, work): the stop's checkpoint is written; acknowledge.
using ckpt_atom = caf::atom_constant<caf::atom("ckpt")>;

} // namespace aryl
