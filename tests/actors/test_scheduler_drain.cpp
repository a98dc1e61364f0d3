// Scheduler actor: an operator's cordon, drain and resume of a training server, holds kept
// across a restart, and machines joining a running cluster (actors/scheduler_drain.cpp).
#include <doctest/doctest.h>

#include <optional>

#include "actors/scheduler.hpp"
#include "actors/server.hpp"
#include "tests/actors/sim_fixture.hpp"

using namespace aryl;
using namespace aryl::test;

namespace {

/// Stand-in journal: the server rows the scheduler writes, in order.
journal_actor::behavior_type recording_journal(journal_actor::pointer,
                                               std::shared_ptr<std::vector<std::pair<std::string, std::string>>> rows) {
  return {
      [=](jjob_atom, const saved_job&) {},
      [=](jadmit_atom, const saved_job& j, uint32_t) -> uint32_t { return j.spec.index; },
      [=](jprogress_atom, uint32_t, double) {},
      [=](jserver_atom, const std::string& server, const std::string& mode) { rows->emplace_back(server, mode); },
      [=](jmeasures_atom, const run_measures&) {},
      [=](jtenants_atom, const std::vector<saved_tenant>&) {},
      [=](jflush_atom) {},
      [=](jretry_atom) {},
      [=](jjoined_atom, const saved_machine&) {},
      [=](jaudit_atom, const std::string&) {},
      [=](jadmits_atom, const std::vector<saved_job>& rows, uint32_t) -> uint32_t { return rows.front().spec.index; },
  };
}

struct drain_fixture : sim_fixture {
  std::shared_ptr<recorded> rec = std::make_shared<recorded>();
  recorder_actor recorder = sys->spawn(recording_recorder, rec);
  std::shared_ptr<std::vector<std::pair<std::string, std::string>>> journaled =
      std::make_shared<std::vector<std::pair<std::string, std::string>>>();

  /// Training servers t0..t{n-1} of 8 V100 each.
  scheduler_actor spawn_scheduler(int servers, std::vector<node_hold> holds = {}) {
    scheduler_setup s;
    s.policy = *find_policy("fifo");
    s.planner.placement = placement_mode::consolidated;
    s.type_names = {"V100"};
    s.params.type_speed = {1.0};
    s.params.restart_overhead_s = 0;
    s.holds = std::move(holds);
    s.journal = sys->spawn(recording_journal, journaled);
    std::vector<server_actor> handles;
    for (int i = 0; i < servers; ++i) {
      server_entry e;
      e.id = i;
      e.name = "t" + std::to_string(i);
      e.gpus = e.free = 8;
      handles.push_back(sys->spawn(server_behavior, e.name, 8, static_cast<int>(e.mode), recorder, nullptr));
      s.servers.push_back(e);
    }
    return sys->spawn(scheduler_behavior, s, handles, recorder, tb, throughput_model{});
  }
  void submit(const scheduler_actor& s, uint32_t index, int gpus, double duration) {
    job_spec j;
    j.index = index;
    j.name = "j" + std::to_string(index);
    j.gpus = j.min_workers = j.max_workers = gpus;
    j.duration_s = duration;
    caf::anon_send(s, submit_atom::value, j);
  }
  /// Asks the scheduler and delivers every message due; the answer, if one came.
  template <class Answer, class... Ts>
  std::optional<Answer> ask(const scheduler_actor& s, Ts... xs) {
    auto answer = std::make_shared<std::optional<Answer>>();
    // (An argument and a behavior returned: CAF 0.17 spawns a function of the actor alone
    // through a null tuple, which UBSan reports.)
    sys->spawn(
        [=](caf::event_based_actor* self, int) -> caf::behavior {
          self->request(s, caf::infinite, xs...).then([=](const Answer& a) { *answer = a; });
          return {};
        },
        0);
    drain();
    return *answer;
  }
  node_answer order(const scheduler_actor& s, const std::string& server, const std::string& action,
                    const std::string& reason = "", bool now = false) {
    auto a = ask<node_answer>(s, node_atom::value, node_order{server, action, reason, now});
    REQUIRE(a);
    return *a;
  }
  cluster_status status(const scheduler_actor& s) {
    auto st = ask<cluster_status>(s, status_atom::value);
    REQUIRE(st);
    return *st;
  }
  /// Two 8-GPU jobs submitted to t0 and t1 while t1 is held (`state`, for `reason`): job-0
  /// starts on t0, job-1 waits. The status then.
  cluster_status two_jobs_with_t1_held(const scheduler_actor& s, hold_state state, const std::string& reason) {
    submit(s, 0, 8, 100);
    submit(s, 1, 8, 100);
    drain();
    step();
    REQUIRE(events_of("start").size() == 1);
    CHECK(events_of("start")[0].detail == "job-0 workers=8 V100 [t0:8]");
    auto st = status(s);
    CHECK(server(st, "t1").node_state == state);
    CHECK(server(st, "t1").node_reason == reason);
    return st;
  }
  std::vector<event_record> events_of(const std::string& kind) const {
    std::vector<event_record> out;
    for (auto& e : rec->events)
      if (e.event == kind) out.push_back(e);
    return out;
  }
  static const server_report& server(const cluster_status& st, const std::string& name) {
    for (auto& s : st.servers)
      if (s.name == name) return s;
    FAIL("no server " << name);
    return st.servers.front();
  }
  static const active_job& job(const cluster_status& st, uint32_t id) {
    for (auto& j : st.jobs)
      if (j.job == id) return j;
    FAIL("no active job " << id);
    return st.jobs.front();
  }
};

} // namespace

TEST_CASE_FIXTURE(drain_fixture, "placement skips a cordoned server, a job waiting for it says drained, and resume makes it usable") {
  auto s = spawn_scheduler(2);
  auto a = order(s, "t1", "cordon", "disk swap");
  CHECK(a.ok);
  CHECK(a.text == "t1: cordoned: no new work; 0 jobs run on there");
  // Ledger: t0 job-0 (8); t1 cordoned, empty; job-1 queued.
  auto st = two_jobs_with_t1_held(s, hold_state::cordoned, "disk swap");
  CHECK(server(st, "t1").free == 0);
  CHECK(server(st, "t0").node_state == hold_state::up);
  CHECK(job(st, 1).reason.rfind("drained: needs 8 GPUs", 0) == 0);
  CHECK(journaled->back() == std::pair<std::string, std::string>{"t1", "cordon:disk swap"});

  CHECK(order(s, "t1", "resume").text == "t1: resumed: new work may be placed there again");
  step();
  // Ledger: t0 job-0 (8), t1 job-1 (8).
  REQUIRE(events_of("start").size() == 2);
  CHECK(events_of("start")[1].detail == "job-1 workers=8 V100 [t1:8]");
  CHECK(server(status(s), "t1").node_state == hold_state::up);
  CHECK(journaled->back() == std::pair<std::string, std::string>{"t1", "up"});
  CHECK(rec->violations.empty());
}

TEST_CASE_FIXTURE(drain_fixture, "a drain lets the server's jobs finish, then the server is drained") {
  auto s = spawn_scheduler(2);
  submit(s, 0, 8, 100);
  submit(s, 1, 8, 200);
  drain();
  step();
  // Ledger: t0 job-0 (8, ends at 100), t1 job-1 (8, ends at 200).
  REQUIRE(events_of("start").size() == 2);
  auto a = order(s, "t1", "drain", "kernel update");
  CHECK(a.text == "t1: draining: no new work; 1 job runs on there until it ends");
  CHECK(server(status(s), "t1").node_state == hold_state::draining);
  submit(s, 2, 8, 50);
  drain();
  while (step()) {}
  // job-2 waited for t0 (at 100), not t1 (free at 200); nothing was stopped.
  REQUIRE(events_of("start").size() == 3);
  CHECK(events_of("start")[2].detail == "job-2 workers=8 V100 [t0:8]");
  CHECK(events_of("start")[2].t_us == 100'000'000);
  CHECK(events_of("preempt").empty());
  REQUIRE(events_of("drained").size() == 1);
  CHECK(events_of("drained")[0].t_us == 200'000'000);
  CHECK(events_of("drained")[0].detail == "server=t1");
  CHECK(server(status(s), "t1").node_state == hold_state::drained);
  CHECK(rec->violations.empty());
}

TEST_CASE_FIXTURE(drain_fixture, "drain --now stops the server's jobs, which checkpoint and run elsewhere, each stop a preemption") {
  auto s = spawn_scheduler(2);
  submit(s, 0, 8, 1000);
  drain();
  step();
  // Ledger: t0 job-0 (8); t1 empty.
  REQUIRE(events_of("start").size() == 1);
  CHECK(events_of("start")[0].detail == "job-0 workers=8 V100 [t0:8]");
  auto a = order(s, "t0", "drain", "fan failure", true);
  CHECK(a.text == "t0: drained now: 1 job stopped (checkpointing) and queued again");
  REQUIRE(events_of("preempt").size() == 1);
  CHECK(events_of("preempt")[0].why == "drain: its server t0 is drained now: fan failure");
  step();
  // Ledger: t0 drained, empty; t1 job-0 (8).
  REQUIRE(events_of("start").size() == 2);
  CHECK(events_of("start")[1].detail == "job-0 workers=8 V100 [t1:8]");
  CHECK(server(status(s), "t0").node_state == hold_state::drained);
  while (step()) {}
  REQUIRE(rec->jobs.size() == 1);
  CHECK(rec->jobs[0].outcome == job_outcome::done);
  CHECK(rec->jobs[0].preemptions == 1);
  CHECK(rec->violations.empty());
}

TEST_CASE_FIXTURE(drain_fixture, "a hold the journal kept holds the restarted scheduler's server") {
  auto s = spawn_scheduler(2, {{"t1", "drain", "maintenance"}});
  // Ledger: t0 job-0 (8); t1 drained; job-1 queued.
  two_jobs_with_t1_held(s, hold_state::drained, "maintenance");
  REQUIRE(events_of("drain").size() == 1);
  CHECK(events_of("drain")[0].why == "held before the scheduler restarted: maintenance");
}

TEST_CASE_FIXTURE(drain_fixture, "orders a server cannot take are refused naming it") {
  auto s = spawn_scheduler(1);
  auto unknown = order(s, "t9", "drain");
  CHECK_FALSE(unknown.ok);
  CHECK(unknown.text == "no server 't9' (this cluster has: t0)");
  auto now_cordon = order(s, "t0", "cordon", "", true);
  CHECK_FALSE(now_cordon.ok);
  CHECK(now_cordon.text == "t0: --now is for drain only");
  CHECK(order(s, "t0", "resume").text == "t0: not cordoned or drained; nothing to resume");
}

TEST_CASE_FIXTURE(drain_fixture, "a machine that joins a running cluster is placed from the next round") {
  auto s = spawn_scheduler(1);
  submit(s, 0, 8, 100);
  submit(s, 1, 8, 100);
  drain();
  step();
  // Ledger: t0 job-0 (8); job-1 queued (the cluster has 8 GPUs).
  REQUIRE(events_of("start").size() == 1);
  auto actor = sys->spawn(server_behavior, std::string("late"), 8, static_cast<int>(server_mode::training), recorder,
                          nullptr);
  auto bad = ask<join_answer>(s, join_atom::value, node_join{"odd", "A100", 8}, actor);
  REQUIRE(bad);
  CHECK(bad->id == -1);
  CHECK(bad->error == "server 'odd': GPU type A100 is none of this run's (V100); a machine joining a running cluster "
                      "has one of them");
  auto joined = ask<join_answer>(s, join_atom::value, node_join{"late", "V100", 8}, actor);
  REQUIRE(joined);
  CHECK(joined->id == 1);
  step();
  // Ledger: t0 job-0 (8), late job-1 (8).
  REQUIRE(events_of("start").size() == 2);
  CHECK(events_of("start")[1].detail == "job-1 workers=8 V100 [late:8]");
  CHECK(events_of("join").size() == 1);
  CHECK(server(status(s), "late").gpus == 8);
  // A joined server is held and resumed as any other.
  CHECK(order(s, "late", "cordon").ok);
  CHECK(server(status(s), "late").node_state == hold_state::cordoned);
  while (step()) {}
  CHECK(rec->jobs.size() == 2);
  CHECK(rec->violations.empty());
}
