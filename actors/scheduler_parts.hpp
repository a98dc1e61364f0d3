#pragma once
/// What the scheduler actor's source files share: scheduler_behavior.cpp (its behaviours),
/// scheduler.cpp (decisions sent out, ending jobs, the journal), scheduler_round.cpp (pacing
/// and rounds), scheduler_loans.cpp (loans and reclaims), scheduler_jobs.cpp (taking jobs in),
/// scheduler_queue.cpp (holds, dependencies, arrays), scheduler_status.cpp,
/// scheduler_tenants.cpp, scheduler_drain.cpp (operators' holds, joining machines),
/// scheduler_faults.cpp (faults and recovery) and scheduler_attempts.cpp (time limits,
/// attempts and how they ended). Internal to the actor: nothing else includes it.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "actors/admit_refusal.hpp"
#include "actors/scheduler.hpp"
#include "actors/server_mode_names.hpp"

namespace aryl::sched {

using self_ptr = scheduler_actor::stateful_pointer<scheduler_state>;

// scheduler.cpp
std::string describe(const scheduler_state& st, const allocation& a);
void describe_into(std::string& out, const scheduler_state& st, const allocation& a);
std::string job_name(uint32_t id);
/// Appends `x` in decimal, as fmt's "{}" writes it.
void append_number(std::string& out, int64_t x);
void log(self_ptr self, sim_time now, std::string event, std::string detail, std::string why);
/// Sends a decision out. The job acknowledges it if `ack` (a reclaim's own decision) or if a
/// reclaim in flight waits on the job.
void dispatch(self_ptr self, const decision& d, bool ack = false);
/// Tells the job its new assignment and (unless `servers_told`: a round's batch told them
/// already) the servers its new workers.
void dispatch_assignment(self_ptr self, const decision& d, bool servers_told, bool ack);
void end_job(self_ptr self, uint32_t job, job_outcome outcome, const std::string& why);
/// A job's completion (its actor's finished): it ends done, unless it has ended already.
void on_finished(self_ptr self, uint32_t job);
/// The run is told to stop: every active job ends as cancelled, then the outputs close.
void on_drain(self_ptr self);
/// The server's mode in the journal (loaned, reclaiming, serving).
void journal_server(self_ptr self, int sid, server_mode mode);
/// "t0:4 t1:2": where a job's workers are, by server name.
std::string alloc_text(const scheduler_state& st, const allocation& a);
/// `aryl serve --state`: the job's row as the ledger has it now (`ended`: its final record).
saved_job journal_row(self_ptr self, uint32_t job, sim_time now, const job_record* ended = nullptr);
void journal_job(self_ptr self, uint32_t job, sim_time now, const job_record* ended = nullptr);
/// The ended jobs by outcome, for /metrics.
void count_outcome(scheduler_state& st, job_outcome outcome);
/// A text dump of the state (deadlock reports).
std::string dump_state(const scheduler_state& st, sim_time now);

// scheduler_round.cpp: pacing and rounds.
/// Asks for a round at this instant that re-plans at least `what` (with
/// scheduler.scale_rounds=every, every round re-plans every size).
void mark_dirty(self_ptr self, round_cause why, replan what = replan::sizes);
/// Runs the round asked for: plans it, and sends its decisions out.
void on_round(self_ptr self);
/// The scale period's timer: a full round may be due.
void on_scale_due(self_ptr self);
/// The cluster's usage now, to the recorder.
void send_snapshot(self_ptr self, sim_time now);

// scheduler_loans.cpp: loans and reclaims.
/// Whether a reclaim in flight waits for the job's acknowledgement.
bool awaited(const scheduler_state& st, uint32_t job);
/// Hands back every reclaim whose jobs have all acknowledged, in request order.
void complete_reclaims(self_ptr self, sim_time now);
/// Servers the inference-load actor lends, placed on from the next round.
void on_loan(self_ptr self, const std::vector<int>& ids);
/// The inference-load actor asks `count` loaned servers back by `deadline_us`.
void on_reclaim(self_ptr self, int count, int64_t deadline_us);
/// A job acknowledged an assignment: the reclaims it completes hand their servers back.
void on_ack(self_ptr self, const job_ack& a);

// scheduler_jobs.cpp: taking jobs in.
/// A trace's job (submit), refused once the run is stopping.
void on_submit(self_ptr self, job_spec& spec);
/// A restarted scheduler's journal (restore): its jobs taken, then their dependencies settled.
int on_restore(self_ptr self, std::vector<saved_job>& rows);
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
/// An array task's place in its array (appended: tasks join in task order). A restarted
/// scheduler puts every task back, ended ones too, before it takes any job: the array still
/// names them (status, cancel) and a dependency on the array waits for all of them.
void join_array(scheduler_state& st, const job_spec& spec);
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
/// A keyed submit (job_spec::key) just admitted as `id` (a job's index, an array's id): a
/// repeat is answered `id`, once the first is journaled.
void note_key(self_ptr self, const job_spec& spec, uint32_t id);
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
/// A worker of the job died (live mode: after its exits): it recovers as recover_job says.
void on_wfail(self_ptr self, uint32_t job);
/// The fault plan kills a worker of the job: its actor hears of it.
void on_wcrash(self_ptr self, uint32_t job);
/// The fault plan slows or fails the job's next checkpoint: its actor hears of it.
void on_ckfault(self_ptr self, uint32_t job, const checkpoint_fault& f);

// Taking jobs in, shared by scheduler_jobs.cpp and scheduler_queue.cpp.
/// A client's admit of the jobs `indices` answered once the journal request `written`
/// succeeds: `id` (a job's index, an array's id), and their dependencies settled. Refused,
/// none of them runs and the client hears not_journaled.
template <class Handle>
caf::result<int64_t> answer_when_journaled(self_ptr self, Handle written, uint32_t id, std::vector<uint32_t> indices) {
  auto answer = self->make_response_promise<int64_t>();
  // Repeats of a keyed submit that came meanwhile hear what the first hears.
  auto repeats = [self, id] {
    auto& waits = self->state.jobs.key_waits;
    auto it = waits.find(id);
    if (it == waits.end()) return std::vector<caf::typed_response_promise<int64_t>>{};
    auto out = std::move(it->second);
    waits.erase(it);
    return out;
  };
  std::move(written).then(
      [=](uint32_t) mutable {
        answer.deliver(static_cast<int64_t>(id));
        for (auto& r : repeats()) r.deliver(repeat_answer(id));
        for (auto i : indices) settle_never(self, i);
      },
      [=](caf::error&) mutable {
        for (auto i : indices)
          if (i < self->state.jobs.actors.size() && self->state.jobs.actors[i])
            end_job(self, i, job_outcome::cancelled, "its submit could not be journaled");
        answer.deliver(answer_of(admit_refusal::not_journaled));
        for (auto& r : repeats()) r.deliver(answer_of(admit_refusal::not_journaled));
        // Not taken: the key is free for a submit that can be.
        std::erase_if(self->state.jobs.keyed, [&](auto& k) { return k.second == id; });
      });
  return answer;
}

} // namespace aryl::sched
