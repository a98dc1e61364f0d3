// The scheduler actor's behaviours: `present`, which takes every message, and `away` (a fault
// plan's scheduler_crash), which leaves what must wait in the mailbox. Each message is handled
// by a named function of its concern's file (see scheduler_parts.hpp).
#include <fmt/format.h>

#include "actors/end_run_on_exception.hpp"
#include "actors/scheduler_parts.hpp"

namespace aryl {
namespace sched {
namespace {

scheduler_actor::behavior_type away(self_ptr self);

/// The scheduler crashed: what it is sent waits in its mailbox, as it would wait for a
/// restarted scheduler, until it is back.
void go_away(self_ptr self, int64_t down_us) {
  auto& st = self->state;
  log(self, st.jenv->tb.now(self), "away", fmt::format("for={:.0f}", sim_time::from_us(down_us).seconds()),
      "the scheduler crashed; it decides nothing until it is back");
  self->become(caf::keep_behavior, away(self));
  self->delayed_send(self, st.jenv->tb.span(sim_time::from_us(down_us)), awake_atom::value);
}

/// Back: the messages held meanwhile are offered again, in the order they came.
void come_back(self_ptr self) {
  self->unbecome();
  log(self, self->state.jenv->tb.now(self), "awake", "", "the scheduler is back");
  mark_dirty(self, round_cause::cluster);
}

scheduler_actor::behavior_type present(self_ptr self) {
  // CAF tries the handlers in order until one matches: the most frequent messages (rounds,
  // ends, the trace's submits) come first. No two handlers take the same message, so the
  // order changes nothing else.
  return {
      // Pacing (scheduler_round.cpp), and jobs' ends (scheduler.cpp).
      [=](round_atom) { on_round(self); },
      [=](scale_due_atom) { on_scale_due(self); },
      [=](finished_atom, uint32_t job, uint64_t) { on_finished(self, job); },
      // Jobs in, and clients' orders about them (scheduler_jobs.cpp, scheduler_queue.cpp).
      [=](submit_atom, std::vector<job_spec>& specs) {
        for (auto& spec : specs) on_submit(self, spec);
      },
      [=](submit_atom, job_spec& spec) { on_submit(self, spec); },
      [=](admit_atom, job_spec& spec) -> caf::result<int64_t> {
        if (self->state.drained) return answer_of(admit_refusal::stopping);
        return admit_job(self, spec);
      },
      [=](cancel_atom, uint32_t job) { return cancel_job(self, job); },
      [=](jobctl_atom, const job_order& o) { return on_job_order(self, o); },
      [=](vet_atom, const job_spec& spec) { return vet_spec(self->state, spec); },
      [=](restore_atom, std::vector<saved_job>& rows) { return on_restore(self, rows); },
      // Jobs' other reports (scheduler.cpp, scheduler_attempts.cpp).
      [=](exits_atom, uint32_t job, const std::vector<worker_exit>& exits) { on_exits(self, job, exits); },
      [=](limit_atom, uint32_t job) { on_time_limit(self, job); },
      [=](drain_atom) { on_drain(self); },
      // Loans (scheduler_loans.cpp).
      [=](loan_atom, const std::vector<int>& ids) { on_loan(self, ids); },
      [=](reclaim_atom, int count, int64_t deadline_us) { on_reclaim(self, count, deadline_us); },
      [=](ack_atom, const job_ack& a) { on_ack(self, a); },
      [=](infer_atom, const caf::actor_addr& inference) { self->state.loans.inference = inference; },
      // Faults (scheduler_faults.cpp).
      [=](crash_atom, int server, int64_t down_us) { on_crash(self, server, down_us); },
      [=](linkfault_atom, const link_fault& f) { on_linkfault(self, f); },
      [=](lost_atom, int server) { on_lost(self, server); },
      [=](back_atom, int server) { on_back(self, server); },
      [=](wfail_atom, uint32_t job) { on_wfail(self, job); },
      [=](wcrash_atom, uint32_t job) { on_wcrash(self, job); },
      [=](ckfault_atom, uint32_t job, const checkpoint_fault& f) { on_ckfault(self, job, f); },
      [=](away_atom, int64_t down_us) { go_away(self, down_us); },
      [](awake_atom) {},  // only the away behaviour waits for it
      // Operators and machines (scheduler_drain.cpp), and status (scheduler_status.cpp).
      [=](node_atom, const node_order& o) { return on_node_order(self, o); },
      [=](join_atom, const node_join& m, server_actor& actor) { return on_join(self, m, std::move(actor)); },
      [=](dump_atom) { return dump_state(self->state, self->state.jenv->tb.now(self)); },
      [=](status_atom) { return status_of(self->state, self->state.jenv->tb.now(self)); },
  };
}

/// What waits returns caf::skip: it stays in the mailbox, in order, until the behaviour
/// changes back. The world's faults still strike (a machine dies whether the scheduler is up
/// or not), a job's actor still hears of its own, and the inference actor's address is kept.
scheduler_actor::behavior_type away(self_ptr self) {
  return {
      [](submit_atom, const job_spec&) -> caf::result<void> { return caf::skip; },
      [](submit_atom, const std::vector<job_spec>&) -> caf::result<void> { return caf::skip; },
      [](admit_atom, const job_spec&) -> caf::result<int64_t> { return caf::skip; },
      [](cancel_atom, uint32_t) -> caf::result<std::string> { return caf::skip; },
      [](jobctl_atom, const job_order&) -> caf::result<node_answer> { return caf::skip; },
      [](vet_atom, const job_spec&) -> caf::result<std::string> { return caf::skip; },
      [](restore_atom, const std::vector<saved_job>&) -> caf::result<int> { return caf::skip; },
      [](finished_atom, uint32_t, uint64_t) -> caf::result<void> { return caf::skip; },
      [](exits_atom, uint32_t, const std::vector<worker_exit>&) -> caf::result<void> { return caf::skip; },
      [](limit_atom, uint32_t) -> caf::result<void> { return caf::skip; },
      [](drain_atom) -> caf::result<void> { return caf::skip; },
      [](round_atom) -> caf::result<void> { return caf::skip; },
      [](scale_due_atom) -> caf::result<void> { return caf::skip; },
      [](loan_atom, const std::vector<int>&) -> caf::result<void> { return caf::skip; },
      [](reclaim_atom, int, int64_t) -> caf::result<void> { return caf::skip; },
      [](ack_atom, const job_ack&) -> caf::result<void> { return caf::skip; },
      [=](infer_atom, const caf::actor_addr& inference) { self->state.loans.inference = inference; },
      [=](crash_atom, int server, int64_t down_us) { on_crash(self, server, down_us); },
      [=](linkfault_atom, const link_fault& f) { on_linkfault(self, f); },
      [](lost_atom, int) -> caf::result<void> { return caf::skip; },
      [](back_atom, int) -> caf::result<void> { return caf::skip; },
      [](wfail_atom, uint32_t) -> caf::result<void> { return caf::skip; },
      [=](wcrash_atom, uint32_t job) { on_wcrash(self, job); },
      [=](ckfault_atom, uint32_t job, const checkpoint_fault& f) { on_ckfault(self, job, f); },
      [](away_atom, int64_t) {},  // a second crash while away is ignored
      [=](awake_atom) { come_back(self); },
      [](node_atom, const node_order&) -> caf::result<node_answer> { return caf::skip; },
      [](join_atom, const node_join&, const server_actor&) -> caf::result<join_answer> { return caf::skip; },
      [](dump_atom) -> caf::result<std::string> { return caf::skip; },
      [](status_atom) -> caf::result<cluster_status> { return caf::skip; },
  };
}

/// The state the run starts with, from its setup.
void take_setup(self_ptr self, scheduler_setup setup, std::vector<server_actor> servers, recorder_actor recorder,
                timebase tb, throughput_model model) {
  auto& st = self->state;
  st.ledger.params = setup.params;
  st.ledger.servers = setup.servers;
  if (!setup.tenants.empty()) st.ledger.tenants = setup.tenants;
  st.setup = std::move(setup);
  st.servers = std::move(servers);
  st.jobs.next_index = st.setup.first_free_index;
  // The jobs known before the start (a trace's) take these indices: growing the per-job
  // vectors one submit at a time would copy them, and fault in their pages, again and again.
  size_t known = st.setup.first_free_index;
  st.ledger.jobs.reserve(known);
  st.jobs.actors.reserve(known);
  st.jobs.names.reserve(known);
  st.jobs.durations.reserve(known);
  st.jobs.unpredicted.reserve(known);
  st.jobs.retries.reserve(known);
  st.jobs.attempts.reserve(known);
  st.faults.truth.assign(st.ledger.servers.size(), {});
  st.holds.by_server.assign(st.ledger.servers.size(), {});
  auto directory = st.setup.directory ? st.setup.directory : std::make_shared<server_directory>(st.servers);
  st.jenv = std::make_shared<const job_env>(job_env{tb, std::move(model), self->address(), recorder,
                                                    st.setup.check_invariants, st.setup.workers,
                                                    std::move(directory), st.setup.checkpoints,
                                                    st.setup.journal});
}

} // namespace
} // namespace sched

scheduler_actor::behavior_type scheduler_behavior(scheduler_actor::stateful_pointer<scheduler_state> self,
                                                  scheduler_setup setup, std::vector<server_actor> servers,
                                                  recorder_actor recorder, timebase tb, throughput_model model) {
  end_run_on_exception(self, recorder);
  sched::take_setup(self, std::move(setup), std::move(servers), recorder, std::move(tb), std::move(model));
  sched::restore_holds(self);
  return sched::present(self);
}

} // namespace aryl
