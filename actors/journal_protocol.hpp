#pragma once
/// Scheduler and job actors -> journal actor (`aryl serve --state`): each state change the
/// restarted scheduler needs, as it happens. Nothing waits on the journal but the answer to a
/// client's submit (jadmit).
#include <caf/all.hpp>

#include "actors/atoms.hpp"

#include <cstdint>
#include <string>

#include "actors/recorder_protocol.hpp"
#include "actors/state_records.hpp"

namespace aryl {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, saved_machine& x) {
  return f(caf::meta::type_name("saved_machine"), x.name, x.gpu_type, x.gpus);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, saved_tenant& x) {
  return f(caf::meta::type_name("saved_tenant"), x.name, x.usage_gpu_s, x.at_us);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_measures& x) {
  return f(caf::meta::type_name("run_measures"), x.lost_gpu_s, x.recoveries_s, x.reclaim_latency_s,
           x.reclaim_max_late_s, x.slo_misses);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, adopted_worker& x) {
  return f(caf::meta::type_name("adopted_worker"), x.server, x.rank, x.gpu);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, saved_job& x) {
  return f(caf::meta::type_name("saved_job"), x.spec, x.status, x.generation, x.workers, x.alloc, x.retries,
           x.work_done, x.record, x.adopt);
}

/// jjob(row): a job's row after a change (submitted, assigned, ended). jprogress(job,
/// work_done): rank 0's report, written coalesced every few seconds. jserver(name, mode): an
/// inference server lent, reclaiming or serving again. jflush: its own timer. jadmit(row, next): a job a client submitted and the next free
/// index, committed durably in one transaction; replies the job's index once they are, so
/// that the scheduler answers the client only then. jmeasures(m): the run's measures so far,
/// from the recorder. jtenants(t): every tenant's decayed usage, at a round's end. jretry: its
/// own timer, while writes fail. jjoined(m): a machine that joined the running cluster.
/// jaudit(line): a line of the audit log. jadmits(rows, next): an array's tasks, as jadmit
/// (one transaction); replies the first task's index.
using journal_actor = caf::typed_actor<caf::reacts_to<jjob_atom, saved_job>,
                                       caf::replies_to<jadmit_atom, saved_job, uint32_t>::with<uint32_t>,
                                       caf::reacts_to<jprogress_atom, uint32_t, double>,
                                       caf::reacts_to<jserver_atom, std::string, std::string>,
                                       caf::reacts_to<jmeasures_atom, run_measures>,
                                       caf::reacts_to<jtenants_atom, std::vector<saved_tenant>>,
                                       caf::reacts_to<jflush_atom>, caf::reacts_to<jretry_atom>,
                                       caf::reacts_to<jjoined_atom, saved_machine>,
                                       caf::reacts_to<jaudit_atom, std::string>,
                                       caf::replies_to<jadmits_atom, std::vector<saved_job>, uint32_t>::with<uint32_t>>;

} // namespace aryl
