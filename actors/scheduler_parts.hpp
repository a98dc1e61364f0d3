#pragma once
/// What the scheduler actor's source files share: scheduler.cpp (rounds, ending jobs,
/// reclaims, the journal, the behavior), scheduler_jobs.cpp (taking jobs in),
/// scheduler_status.cpp, scheduler_tenants.cpp, scheduler_faults.cpp (faults and recovery) and
/// scheduler_attempts.cpp (time limits, attempts and how they ended).
/// Internal to the actor: nothing else includes it.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "actors/scheduler.hpp"

namespace aryl::sched {

using self_ptr = scheduler_actor::stateful_pointer<scheduler_state>;

// scheduler.cpp
std::string describe(const scheduler_state& st, const allocation& a);
std::string job_name(uint32_t id);
void log(self_ptr self, sim_time now, std::string event, std::string detail, std::string why);
/// Asks for a round at this instant that re-plans at least `what` (with
/// scheduler.scale_rounds=every, every round re-plans every size).
void mark_dirty(self_ptr self, round_cause why, replan what = replan::sizes);
/// Sends a decision out. The job acknowledges it if `ack` (a reclaim's own decision) or if a
/// reclaim in flight waits on the job.
void dispatch(self_ptr self, const decision& d, bool ack = false);
void end_job(self_ptr self, uint32_t job, job_outcome outcome, const std::string& why);
void complete_reclaims(self_ptr self, sim_time now);
void journal_server(self_ptr self, int sid, const char* mode);
/// "t0:4 t1:2": where a job's workers are, by server name.
std::string alloc_text(const scheduler_state& st, const allocation& a);
/// `aryl serve --state`: the job's row as the ledger has it now (`ended`: its final record).
saved_job journal_row(self_ptr self, uint32_t job, sim_time now, const job_record* ended = nullptr);
void journal_job(self_ptr self, uint32_t job, sim_time now, const job_record* ended = nullptr);
/// The ended jobs by outcome, for /metrics.
void count_outcome(scheduler_state& st, job_outcome outcome);

// scheduler_jobs.cpp: taking jobs in.
/// Takes a submitted job into the queue and spawns its actor (see the definition).
void accept_job(self_ptr self, job_spec& spec, sim_time now, const saved_job* restored = nullptr);
/// A client's job (admit in scheduler_protocol.hpp), while the run is not stopping.
caf::result<int64_t> admit_job(self_ptr self, job_spec& spec);
/// One job of a restarted scheduler's journal (see restore in scheduler_protocol.hpp).
void restore_job(self_ptr self, saved_job& row);

/// The most GPUs of one type an elastic job needing `gpu_type` (empty: any) may hold.
long floor_cap(scheduler_state& st, const std::string& gpu_type);

// scheduler_queue.cpp: holds, dependencies and array tasks' limits.
/// Whether the scheduler keeps every job's spec (st.specs): journaling, or live mode (a
/// client's update makes a job's actor again from it).
bool keeps_specs(const scheduler_state& st);
/// Why `job` may not wait for the jobs of `after` ("3:ok,4:any"): unknown, itself, a cycle, or
/// one that can never be met now; "" if it may.
std::string vet_after(const scheduler_state& st, uint32_t job, const std::string& after);
/// Why a client's submit is refused for its dependencies or array ("" if it is not).
std::string vet_spec(const scheduler_state& st, const job_spec& spec);
/// A job just taken (accept_job): its hold, dependencies and array place, parking it if any
/// keeps it; nothing for a job without them. `restored`: as accept_job's.
void take_rules(self_ptr self, const job_spec& spec, const saved_job* restored);
/// A dependency of `job` that ended before it was taken and can never be met ends it now.
void settle_never(self_ptr self, uint32_t job);
/// `job` ended so: the dependencies on it are settled (met, or never: those jobs end), and its
/// array's place goes to its next task.
void after_end(self_ptr self, uint32_t job, job_outcome outcome);
/// A parked job's reason for status: held, dependency (...), array limit (...).
std::string parked_reason(const scheduler_state& st, uint32_t job);
/// A client's cancel of a job, or of every active task of an array by its id; "" or why not.
std::string cancel_job(self_ptr self, uint32_t job);
/// A client's array (spec.array set, vetted): admitted as its tasks, numbered from the next
/// index in task order and journaled at once; answers the array's id (its first task's) as
/// admit does, -4 for an array that does not parse.
caf::result<int64_t> admit_array(self_ptr self, const job_spec& spec);
/// A client's hold, release, update or task cancel (see job_order).
node_answer on_job_order(self_ptr self, const job_order& o);

// scheduler_attempts.cpp: time limits, and each attempt's end.
/// A job got workers: its attempt has started, and its time limit (if any) is watched.
void attempt_running(self_ptr self, uint32_t job, sim_time now);
/// The time-limit check of `job` is due: it ends as timeout if it held workers that long.
void on_time_limit(self_ptr self, uint32_t job);
/// Live mode: how the workers of the job's current attempt ended (before wfail or finished).
void on_exits(self_ptr self, uint32_t job, const std::vector<worker_exit>& exits);
/// The job's retries after failures: its own, else faults.max_retries.
int retries_allowed(const scheduler_state& st, uint32_t job);
/// A failure that the job is retried after ends its current attempt; the next one starts with
/// its whole time limit.
void end_attempt(self_ptr self, uint32_t job, sim_time now, job_outcome how, const std::string& why);
/// The job's attempts for its record: those that ended, then (`how`: the job ended) its last.
std::vector<attempt_record> attempts_of(const scheduler_state& st, uint32_t job, sim_time now,
                                        std::optional<job_outcome> how, const std::string& why);

// scheduler_status.cpp
/// The active jobs and the servers now, for live mode's `aryl status` and /metrics.
cluster_status status_of(const scheduler_state& st, sim_time now);

// scheduler_tenants.cpp: tenants and quota reclaims.
/// The index of the tenant named `name` in the ledger, added with no quota if first seen.
int tenant_of(scheduler_state& st, const std::string& name);
/// Starts waiting for the checkpoints of the round's quota-reclaim victims; whether `job`
/// is one (its assignment then asks for an acknowledgement).
void track_quota_reclaims(self_ptr self, const std::vector<decision>& decisions, sim_time now);
bool quota_victim(const scheduler_state& st, uint32_t job);
/// Each governed tenant's quota and GPUs now, for `status` and /metrics.
std::vector<tenant_report> tenant_reports(const scheduler_state& st);
/// A job acknowledged generation `generation` (or ended: generation max): quota reclaims it
/// completes are measured.
void quota_acked(self_ptr self, uint32_t job, uint64_t generation, sim_time now);

// scheduler_drain.cpp: the inventory an operator changes (cordon, drain, resume) and
// machines joining mid-run.
/// Carries out an operator's order (see node_order); the answer says what was done or why not.
node_answer on_node_order(self_ptr self, const node_order& order);
/// Adds a machine that joined after the start to the cluster (placed from the next round).
join_answer on_join(self_ptr self, const node_join& machine, server_actor actor);
/// At the start: the holds a restarted scheduler's journal kept (scheduler_setup::holds).
void restore_holds(self_ptr self);
/// A server whose agent is back: held again if an operator held it.
void reapply_hold(self_ptr self, int server);
/// After a round: each draining server its last job has left is logged drained, once.
void note_drained(self_ptr self, sim_time now);
/// Fills each server's node_state and node_reason in a status report.
void describe_holds(const scheduler_state& st, cluster_status& out);

// scheduler_faults.cpp: the fault actor's and the gateway's messages, and recovery.
/// A job whose workers died restarts from its checkpoint (see the definition).
void recover_job(self_ptr self, uint32_t job, int lost_server, sim_time now, const std::string& why);
void on_crash(self_ptr self, int server, int64_t down_us);
void on_linkfault(self_ptr self, const link_fault& f);
void on_lost(self_ptr self, int server);
void on_back(self_ptr self, int server);

} // namespace aryl::sched
