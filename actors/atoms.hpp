#pragma once
/// Every actor message's tag (atom), grouped by protocol, in one place: a tag serves several
/// protocols (tick, crash), and each is declared once. The messages' payloads and the actors'
/// interfaces are in each protocol's header, actors/<protocol>_protocol.hpp.
#include <caf/all.hpp>

namespace aryl {

// Scheduler <-> job actor (job_protocol.hpp).
using assign_atom = caf::atom_constant<caf::atom("assign")>;
using ack_atom = caf::atom_constant<caf::atom("ack")>;
using finished_atom = caf::atom_constant<caf::atom("finished")>;
using tick_atom = caf::atom_constant<caf::atom("tick")>;
/// Live mode, server -> job: what its real workers report (through the node agent).
using wprogress_atom = caf::atom_constant<caf::atom("wprogress")>;
using wexit_atom = caf::atom_constant<caf::atom("wexit")>;
/// Live mode, job -> scheduler: how the workers that ended its launch exited.
using exits_atom = caf::atom_constant<caf::atom("exits")>;
/// After a scheduler restart (`aryl serve --state`): workers still running, taken over.
using adopt_atom = caf::atom_constant<caf::atom("adopt")>;

// Faults (fault_protocol.hpp).
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

// Inference-load actor <-> scheduler (inference_protocol.hpp).
using loan_atom = caf::atom_constant<caf::atom("loan")>;
using reclaim_atom = caf::atom_constant<caf::atom("reclaim")>;
using returned_atom = caf::atom_constant<caf::atom("returned")>;
using demand_atom = caf::atom_constant<caf::atom("demand")>;
using push_atom = caf::atom_constant<caf::atom("push")>;
using gone_atom = caf::atom_constant<caf::atom("gone")>;
using rejoin_atom = caf::atom_constant<caf::atom("rejoin")>;
/// inference -> scheduler, once at the start: infer(address): where to report inference
/// servers lost and back.
using infer_atom = caf::atom_constant<caf::atom("infer")>;

// Scheduler and job actors -> journal actor (journal_protocol.hpp).
using jjob_atom = caf::atom_constant<caf::atom("jjob")>;
using jprogress_atom = caf::atom_constant<caf::atom("jprogress")>;
using jserver_atom = caf::atom_constant<caf::atom("jserver")>;
using jflush_atom = caf::atom_constant<caf::atom("jflush")>;
using jadmit_atom = caf::atom_constant<caf::atom("jadmit")>;
using jmeasures_atom = caf::atom_constant<caf::atom("jmeasures")>;
using jtenants_atom = caf::atom_constant<caf::atom("jtenants")>;
using jretry_atom = caf::atom_constant<caf::atom("jretry")>;
using jjoined_atom = caf::atom_constant<caf::atom("jjoined")>;
using jaudit_atom = caf::atom_constant<caf::atom("jaudit")>;
using jadmits_atom = caf::atom_constant<caf::atom("jadmits")>;

// Everything -> recorder (recorder_protocol.hpp).
using event_atom = caf::atom_constant<caf::atom("event")>;
using roundlog_atom = caf::atom_constant<caf::atom("roundlog")>;
using ended_atom = caf::atom_constant<caf::atom("ended")>;
using jobrec_atom = caf::atom_constant<caf::atom("jobrec")>;
using snapshot_atom = caf::atom_constant<caf::atom("snapshot")>;
using violation_atom = caf::atom_constant<caf::atom("violation")>;
using slo_atom = caf::atom_constant<caf::atom("slo")>;
using serving_atom = caf::atom_constant<caf::atom("serving")>;
using need_atom = caf::atom_constant<caf::atom("need")>;
using failed_atom = caf::atom_constant<caf::atom("failed")>;
using lag_atom = caf::atom_constant<caf::atom("lag")>;
using expect_atom = caf::atom_constant<caf::atom("expect")>;
using close_atom = caf::atom_constant<caf::atom("close")>;
using lostwork_atom = caf::atom_constant<caf::atom("lostwork")>;
using rdone_atom = caf::atom_constant<caf::atom("rdone")>;
using qdone_atom = caf::atom_constant<caf::atom("qdone")>;
using measures_to_atom = caf::atom_constant<caf::atom("measureto")>;

// The scheduler actor's own messages (scheduler_protocol.hpp).
using submit_atom = caf::atom_constant<caf::atom("submit")>;
using round_atom = caf::atom_constant<caf::atom("round")>;
/// The scale period's timer: the next round may re-plan elastic sizes.
using scale_due_atom = caf::atom_constant<caf::atom("scaledue")>;
using dump_atom = caf::atom_constant<caf::atom("dump")>;
using status_atom = caf::atom_constant<caf::atom("status")>;
using admit_atom = caf::atom_constant<caf::atom("admit")>;
using cancel_atom = caf::atom_constant<caf::atom("cancel")>;
using drain_atom = caf::atom_constant<caf::atom("drain")>;
using restore_atom = caf::atom_constant<caf::atom("restore")>;
/// An operator's cordon, drain or resume of a server (not drain_atom: that stops the run).
using node_atom = caf::atom_constant<caf::atom("nodeorder")>;
using join_atom = caf::atom_constant<caf::atom("nodejoin")>;
/// A client's hold, release, update or task cancel (actors/job_orders.hpp).
using jobctl_atom = caf::atom_constant<caf::atom("jobctl")>;
/// A client's submit checked before it is admitted: its dependencies and array.
using vet_atom = caf::atom_constant<caf::atom("vet")>;
/// Self-sent: check a job's time limit.
using limit_atom = caf::atom_constant<caf::atom("timelimit")>;

// Scheduler -> server actor (server_protocol.hpp).
using place_atom = caf::atom_constant<caf::atom("place")>;
using remove_atom = caf::atom_constant<caf::atom("remove")>;
using changes_atom = caf::atom_constant<caf::atom("changes")>;
using mode_atom = caf::atom_constant<caf::atom("mode")>;
using launch_atom = caf::atom_constant<caf::atom("launch")>;
using park_atom = caf::atom_constant<caf::atom("park")>;

} // namespace aryl
