#pragma once
/// Everything -> recorder protocol: the decision log, finished jobs, cluster snapshots.
/// The recorder only observes; nothing waits on it.
#include <caf/all.hpp>

#include "actors/atoms.hpp"

#include <cstdint>
#include <string>

#include "actors/run_records.hpp"

namespace aryl {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, event_record& x) {
  return f(caf::meta::type_name("event_record"), x.t_us, x.actor, x.event, x.detail, x.why);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, attempt_record& x) {
  return f(caf::meta::type_name("attempt_record"), x.start_us, x.end_us, x.outcome, x.exits, x.why);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, job_record& x) {
  return f(caf::meta::type_name("job_record"), x.index, x.name, x.gpus, x.elastic, x.submit_us,
           x.first_start_us, x.end_us, x.queued_s, x.gpu_seconds, x.preemptions, x.scale_ins,
           x.scale_outs, x.duration_s, x.last_workers, x.on_loaned_s, x.slowdown, x.below_speed_s,
           x.below_speed_gpu_s, x.outcome, x.needed_gpu_s, x.training_gpu_s, x.loaned_gpu_s,
           x.training_speed_gpu_s, x.loaned_speed_gpu_s, x.training_needed_gpu_s, x.loaned_needed_gpu_s,
           x.estimated, x.tenant, x.predicted, x.attempts);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, cluster_snapshot& x) {
  return f(caf::meta::type_name("cluster_snapshot"), x.t_us, x.training_busy_gpus, x.training_gpus,
           x.loaned_busy_gpus, x.loaned_servers, x.serving_servers, x.reclaiming_servers,
           x.serving_gpus, x.inference_gpus, x.queued_jobs, x.running_jobs);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, round_kind& x) {
  return f(caf::meta::type_name("round_kind"), x.scope, x.cause);
}

/// event: one decision-log line. jobrec: a job finished. ended: a job's last log line, then
/// its record. snapshot: cluster state after a change. roundlog: a round's log lines, in
/// order, then the snapshot after it, the round's scope and, for a full round, its cause
/// (a round's messages to the recorder, as one).
/// violation: an invariant broke (the run stops). slo: servers returned late.
/// serving(t_us, gpus): inference GPUs busy serving demand from t on. need(servers): the
/// inference servers demand needs now, headroom included (live mode's metrics show it). failed(message,
/// exit code): an actor threw; the run stops with that message and code. lag(us): a job's
/// completion timer fired this late (wall clock only; simulated time is exact).
/// expect: one more job, submitted while the run goes on (live mode): the run waits for it
/// too. close: the run was told to stop and every submitted job has been recorded (the
/// active ones as cancelled): close the outputs with what is there. lostwork(gpu_s,
/// recovery_s, < 0 for none): a fault's cost. rdone(latency_s, late_s): a reclaim returned its servers.
/// qdone(latency_s, late_s): a quota reclaim's victims all checkpointed.
/// measures_to(journal): `aryl serve --state`: after each change of the run's measures
/// (lostwork, rdone, slo), the recorder sends them all to this journal actor, so that a
/// restarted scheduler's summary counts what was measured before.
using recorder_actor = caf::typed_actor<caf::reacts_to<event_atom, event_record>,
                                        caf::reacts_to<roundlog_atom, std::vector<event_record>, cluster_snapshot, round_kind>,
                                        caf::reacts_to<ended_atom, event_record, job_record>,
                                        caf::reacts_to<jobrec_atom, job_record>,
                                        caf::reacts_to<snapshot_atom, cluster_snapshot>,
                                        caf::reacts_to<violation_atom, std::string>,
                                        caf::reacts_to<slo_atom, int>,
                                        caf::reacts_to<serving_atom, int64_t, int>,
                                        caf::reacts_to<need_atom, int>,
                                        caf::reacts_to<failed_atom, std::string, int>,
                                        caf::reacts_to<lag_atom, int64_t>,
                                        caf::reacts_to<expect_atom>,
                                        caf::reacts_to<close_atom>,
                                        caf::reacts_to<lostwork_atom, double, double>,
                                        caf::reacts_to<rdone_atom, double, double>,
                                        caf::reacts_to<qdone_atom, double, double>,
                                        caf::reacts_to<measures_to_atom, caf::actor>>;

} // namespace aryl
