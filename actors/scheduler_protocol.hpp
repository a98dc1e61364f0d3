#pragma once
/// Messages the scheduler actor takes: submissions from the trace feeder, acknowledgements
/// and completions from job actors, loans and reclaims from the inference-load actor.
#include <caf/all.hpp>

#include "actors/atoms.hpp"

#include <string>
#include <vector>

#include "actors/cluster_status.hpp"
#include "actors/inference_protocol.hpp"
#include "actors/job_orders.hpp"
#include "actors/job_protocol.hpp"
#include "actors/journal_protocol.hpp"
#include "actors/node_orders.hpp"
#include "actors/server_protocol.hpp"
#include "solvers/job_spec.hpp"

namespace aryl {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, active_job& x) {
  return f(caf::meta::type_name("active_job"), x.job, x.name, x.running, x.workers, x.reason, x.gpus, x.min_workers,
           x.max_workers, x.gpu_type, x.run_s, x.servers, x.predicted, x.tenant, x.held, x.array_job, x.array_task);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, server_report& x) {
  return f(caf::meta::type_name("server_report"), x.name, x.gpu_type, x.gpus, x.free, x.inference, x.mode,
           x.node_state, x.node_reason);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_order& x) {
  return f(caf::meta::type_name("node_order"), x.server, x.action, x.reason, x.now);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_answer& x) {
  return f(caf::meta::type_name("node_answer"), x.ok, x.text);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, job_order& x) {
  return f(caf::meta::type_name("job_order"), x.job, x.task, x.action, x.by, x.set_priority, x.priority, x.time_limit_s,
           x.min_workers, x.max_workers, x.duration_s, x.set_after, x.after);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_join& x) {
  return f(caf::meta::type_name("node_join"), x.server, x.gpu_type, x.gpus);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, join_answer& x) {
  return f(caf::meta::type_name("join_answer"), x.id, x.error);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, latency_histogram& x) {
  return f(caf::meta::type_name("latency_histogram"), x.counts, x.sum_s, x.count);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, tenant_report& x) {
  return f(caf::meta::type_name("tenant_report"), x.name, x.quota, x.in_use, x.borrowed, x.lent, x.queued);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_counts& x) {
  return f(caf::meta::type_name("run_counts"), x.starts, x.preemptions, x.scale_ins, x.scale_outs, x.loans);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, end_histogram& x) {
  return f(caf::meta::type_name("end_histogram"), x.tenant, x.outcome, x.wait, x.jct, x.wait_sum_s, x.jct_sum_s,
           x.count);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, cluster_status& x) {
  return f(caf::meta::type_name("cluster_status"), x.t_us, x.jobs, x.servers, x.jobs_finished, x.jobs_failed,
           x.jobs_cancelled, x.reclaim_latency_s, x.reclaim_slo_misses, x.inference_needed, x.rounds, x.tenants, x.counts, x.ends);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, sim_time& x) {
  return f(caf::meta::type_name("sim_time"), x.us);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, job_spec& x) {
  return f(caf::meta::type_name("job_spec"), x.index, x.name, x.submit, x.gpus, x.duration_s,
           x.gpu_type, x.elastic, x.min_workers, x.max_workers, x.predict_factor, x.estimated, x.estimate_s, x.user, x.tenant,
           x.command, x.predicted, x.time_limit_s, x.max_retries, x.held, x.after, x.array, x.array_job,
           x.array_task, x.array_count, x.array_limit, x.key);
}

/// submit(job), submit(jobs): a job arrives, or every job the trace feeder has due at one
/// instant (one message, so that no round runs between them on the wall clock). ack/finished:
/// from job actors. round: run one scheduling round now (self-sent, once per instant).
/// loan(ids), reclaim(count, deadline_us): from the inference-load actor. dump: a text dump of
/// the scheduler's state (for deadlock reports).
/// status: the active jobs and the servers now (live mode's `aryl status`).
/// admit(job): a job submitted while the run goes on (live mode): replies the index it gets,
/// while journaling only once the journal has committed the job (-3 if it could not), or -1
/// once the run is stopping; an array's spec (job_spec::array) is admitted as its tasks, the
/// reply the first one's index (the array's id). cancel(job): ends a queued or running job as
/// cancelled (an array's id: each of its active tasks); replies "" or why it cannot.
/// jobctl(order): a client's hold, release, update or task cancel; replies what was done or
/// why not. vet(job): a submit's dependencies and array checked; replies "" or why refused.
/// drain: the run is told to stop: every active job ends as cancelled, then the recorder
/// closes the outputs. Faults (actors/fault_protocol.hpp): crash(server, down µs) and
/// wcrash(job) from the fault actor; lost and back when a server's heartbeats stop and when
/// its agent registers again (self-sent after a simulated crash; from the live gateway);
/// wfail(job) from a job whose worker died, after exits(job, how its workers ended) in live
/// mode; timelimit(job): self-sent when a job's time limit may be up; linkfault(fault) and ckfault(job, fault) from the
/// fault actor (a bad agent link, a job's next checkpoint slow or failed). restore(rows): the jobs of the journal of a
/// scheduler that went away (`aryl serve --state`), before anything else; replies how many
/// it took. An ended one is recorded as it ended; one whose workers all still run
/// (rows[i].adopt) is started on them, adopted; any other active one is queued again (its
/// workers were stopped) and restarts from its checkpoint. node(order): an operator's cordon,
/// drain or resume of a training server (actors/node_orders.hpp); replies what was done or
/// why not. join(machine, its server actor): a training machine whose agent registered after
/// the run started joins the cluster, placed from the next round; replies its id.
using scheduler_actor = caf::typed_actor<
    caf::reacts_to<submit_atom, job_spec>,
    caf::reacts_to<submit_atom, std::vector<job_spec>>,
    caf::reacts_to<ack_atom, job_ack>,
    caf::reacts_to<finished_atom, uint32_t, uint64_t>,
    caf::reacts_to<round_atom>,
    caf::reacts_to<scale_due_atom>,
    caf::reacts_to<caf::atom_constant<caf::atom("loan")>, std::vector<int>>,
    caf::reacts_to<caf::atom_constant<caf::atom("reclaim")>, int, int64_t>,
    caf::replies_to<dump_atom>::with<std::string>,
    caf::replies_to<status_atom>::with<cluster_status>,
    caf::replies_to<admit_atom, job_spec>::with<int64_t>,
    caf::replies_to<cancel_atom, uint32_t>::with<std::string>,
    caf::replies_to<jobctl_atom, job_order>::with<node_answer>,
    caf::replies_to<vet_atom, job_spec>::with<std::string>,
    caf::reacts_to<drain_atom>,
    caf::reacts_to<crash_atom, int, int64_t>,
    caf::reacts_to<wcrash_atom, uint32_t>,
    caf::reacts_to<lost_atom, int>,
    caf::reacts_to<back_atom, int>,
    caf::reacts_to<wfail_atom, uint32_t>,
    caf::reacts_to<exits_atom, uint32_t, std::vector<worker_exit>>,
    caf::reacts_to<limit_atom, uint32_t>,
    caf::reacts_to<linkfault_atom, link_fault>,
    caf::reacts_to<ckfault_atom, uint32_t, checkpoint_fault>,
    caf::reacts_to<away_atom, int64_t>,
    caf::reacts_to<infer_atom, caf::actor_addr>,
    caf::reacts_to<awake_atom>,
    caf::replies_to<restore_atom, std::vector<saved_job>>::with<int>,
    caf::replies_to<node_atom, node_order>::with<node_answer>,
    caf::replies_to<join_atom, node_join, server_actor>::with<join_answer>>;

} // namespace aryl
