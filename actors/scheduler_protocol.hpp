#pragma once
/// Messages the scheduler actor takes: submissions from the trace feeder, acknowledgements
/// and completions from job actors, loans and reclaims from the inference-load actor.
#include <caf/all.hpp>

#include <string>
#include <vector>

#include "actors/cluster_status.hpp"
#include "actors/job_protocol.hpp"
#include "runtime/job_spec.hpp"

namespace aryl {

using submit_atom = caf::atom_constant<caf::atom("submit")>;
using round_atom = caf::atom_constant<caf::atom("round")>;
using dump_atom = caf::atom_constant<caf::atom("dump")>;
using status_atom = caf::atom_constant<caf::atom("status")>;

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, active_job& x) {
  return f(caf::meta::type_name("active_job"), x.job, x.name, x.running, x.workers);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, server_report& x) {
  return f(caf::meta::type_name("server_report"), x.name, x.gpu_type, x.gpus, x.free, x.inference, x.mode);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, cluster_status& x) {
  return f(caf::meta::type_name("cluster_status"), x.t_us, x.jobs, x.servers, x.jobs_finished, x.reclaim_latency_s,
           x.reclaim_slo_misses);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, sim_time& x) {
  return f(caf::meta::type_name("sim_time"), x.us);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, job_spec& x) {
  return f(caf::meta::type_name("job_spec"), x.index, x.name, x.submit, x.gpus, x.duration_s,
           x.gpu_type, x.elastic, x.min_workers, x.max_workers, x.predict_factor, x.user);
}

/// submit(job): a job arrives. ack/finished: from job actors. round: run one scheduling
/// round now (self-sent, once per instant). loan(ids), reclaim(count, deadline_us): from the
/// inference-load actor. dump: a text dump of the scheduler's state (for deadlock reports).
/// status: the active jobs and the servers now (live mode's `aryl status`).
using scheduler_actor = caf::typed_actor<
    caf::reacts_to<submit_atom, job_spec>,
    caf::reacts_to<ack_atom, job_ack>,
    caf::reacts_to<finished_atom, uint32_t, uint64_t>,
    caf::reacts_to<round_atom>,
    caf::reacts_to<caf::atom_constant<caf::atom("loan")>, std::vector<int>>,
    caf::reacts_to<caf::atom_constant<caf::atom("reclaim")>, int, int64_t>,
    caf::replies_to<dump_atom>::with<std::string>,
    caf::replies_to<status_atom>::with<cluster_status>>;

} // namespace aryl
