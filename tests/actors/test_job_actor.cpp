// Job actor protocol on the deterministic scheduler: acknowledgements, exact completion
// times, stale timers, progress kept across preemption.
#include <doctest/doctest.h>

#include "actors/job.hpp"
#include "tests/actors/sim_fixture.hpp"

using namespace aryl;
using namespace aryl::test;

namespace {

struct job_fixture : sim_fixture {
  std::shared_ptr<std::vector<seen>> log = std::make_shared<std::vector<seen>>();
  std::shared_ptr<recorded> rec = std::make_shared<recorded>();
  scheduler_actor scheduler = sys->spawn(recording_scheduler, log, tb);
  recorder_actor recorder = sys->spawn(recording_recorder, rec);

  job_actor spawn_job(int gpus, double duration_s) {
    job_spec s;
    s.index = 7;
    s.name = "j7";
    s.gpus = gpus;
    s.duration_s = duration_s;
    return sys->spawn(job_behavior, s, job_env{tb, throughput_model{}, scheduler.address(), recorder, true});
  }
  /// Checkpoints every `interval_s` of run time; a stop's takes `stop_s`.
  job_actor spawn_checkpointing_job(int gpus, double duration_s, double interval_s, double stop_s) {
    job_spec s;
    s.index = 7;
    s.name = "j7";
    s.gpus = gpus;
    s.duration_s = duration_s;
    job_env env{tb, throughput_model{}, scheduler.address(), recorder, true};
    env.checkpoints = checkpoint_settings{interval_s, stop_s, 0, 0, 1};
    return sys->spawn(job_behavior, s, env);
  }
  /// Moves simulated time to `t` (a helper timer).
  void advance_to(double t) {
    // (An argument, because CAF 0.17 binds a null reference for an empty one: UBSan says so.)
    auto poke = sys->spawn([](caf::event_based_actor*, int) -> caf::behavior { return {[=](int) {}}; }, 0);
    caf::delayed_anon_send(poke, tb.span(sim_time::from_seconds(t) - now()), 0);
    while (now() < sim_time::from_seconds(t) && step()) {}
    sched->advance_time(caf::timespan{0});  // the other timers due now
    caf::anon_send_exit(poke, caf::exit_reason::user_shutdown);
    drain();
  }
  void assign(const job_actor& j, uint64_t gen, int workers, double overhead_s = 0) {
    caf::anon_send(j, assign_atom::value, job_assignment{gen, workers, 1.0, overhead_s, {0}, {workers}});
    drain();
  }
  std::vector<seen> of_kind(const std::string& what) const {
    std::vector<seen> out;
    for (auto& s : *log)
      if (s.what == what) out.push_back(s);
    return out;
  }
};

} // namespace

TEST_CASE_FIXTURE(job_fixture, "a job acknowledges each assignment with its generation") {
  auto j = spawn_job(4, 100);
  assign(j, 1, 4);
  assign(j, 2, 2);
  auto acks = of_kind("ack");
  REQUIRE(acks.size() == 2);
  CHECK(acks[0].generation == 1);
  CHECK(acks[1].generation == 2);
}

TEST_CASE_FIXTURE(job_fixture, "a job acknowledges only the assignments the scheduler waits on") {
  auto j = spawn_job(4, 100);
  job_assignment quiet{1, 4, 1.0, 0, {0}, {4}};
  quiet.ack = false;
  caf::anon_send(j, assign_atom::value, quiet);
  drain();
  assign(j, 2, 0);  // a stop a reclaim waits for
  quiet.generation = 3;
  caf::anon_send(j, assign_atom::value, quiet);
  drain();
  auto acks = of_kind("ack");
  REQUIRE(acks.size() == 1);
  CHECK(acks[0].generation == 2);
}

TEST_CASE_FIXTURE(job_fixture, "a job at its requested workers finishes exactly its duration after it starts") {
  auto j = spawn_job(4, 100);
  assign(j, 1, 4);
  while (step()) {}
  auto fin = of_kind("finished");
  REQUIRE(fin.size() == 1);
  CHECK(fin[0].at == sim_time::from_seconds(100));
  CHECK(fin[0].generation == 1);
}

TEST_CASE_FIXTURE(job_fixture, "a reassignment makes the earlier completion timer stale") {
  // Both assignments at t=0 at the same rate: the timers of generations 1 and 2 both fall
  // at t=100; the first is stale and must not finish the job.
  auto j = spawn_job(4, 100);
  assign(j, 1, 4);
  caf::anon_send(j, assign_atom::value, job_assignment{2, 4, 1.0, 0, {0}, {4}});  // same rate, new generation
  drain();
  // Only the timer of generation 2 may complete the job, exactly once.
  while (step()) {}
  auto fin = of_kind("finished");
  REQUIRE(fin.size() == 1);
  CHECK(fin[0].generation == 2);
  CHECK(fin[0].at == sim_time::from_seconds(100));
}

TEST_CASE_FIXTURE(job_fixture, "a preempted job keeps its progress and pays the restart overhead") {
  auto j = spawn_job(1, 100);
  assign(j, 1, 1);
  // A helper timer brings us to t=40 to preempt there.
  // (An argument, because CAF 0.17 binds a null reference for an empty one: UBSan says so.)
  auto poke = sys->spawn([](caf::event_based_actor*, int) -> caf::behavior { return {[=](int) {}}; }, 0);
  caf::delayed_anon_send(poke, std::chrono::seconds(40), 0);
  step();  // now t=40
  REQUIRE(now() == sim_time::from_seconds(40));
  assign(j, 2, 0);  // preempt: 40 units done, 60 left
  caf::delayed_anon_send(poke, std::chrono::seconds(60), 0);
  step();  // t=100
  assign(j, 3, 1, 60);  // restart with 60 s overhead: ends at 100 + 60 + 60
  while (step()) {}
  auto acks = of_kind("ack");
  REQUIRE(acks.size() == 3);
  CHECK(acks[1].work_done == doctest::Approx(40));
  auto fin = of_kind("finished");
  REQUIRE(fin.size() == 1);
  CHECK(fin[0].at == sim_time::from_seconds(220));
  CHECK(rec->violations.empty());
}

TEST_CASE_FIXTURE(job_fixture, "an assignment that would finish past the horizon ends the run with an input error") {
  // 1e9 s of work at 1 of 1000 requested workers: about 1e12 s, past the 4e9 s horizon.
  auto j = spawn_job(1000, 1e9);
  assign(j, 1, 1);
  REQUIRE(rec->failures.size() == 1);
  CHECK(rec->failures[0].second == 2);
  CHECK(rec->failures[0].first.find("job 7 (j7) would finish after the simulation horizon") != std::string::npos);
  CHECK(of_kind("ack").empty());  // the actor stopped instead of acknowledging
}

TEST_CASE_FIXTURE(job_fixture, "a slow stop checkpoint delays the acknowledgement by its extra time, once") {
  // Each stop's checkpoint takes 10 s; the next one takes 50 s more.
  auto j = spawn_checkpointing_job(4, 1000, 0, 10);
  assign(j, 1, 4);
  caf::anon_send(j, ckfault_atom::value, checkpoint_fault::slow(50));
  advance_to(40);
  assign(j, 2, 0);  // preempted at 40: acknowledged once its checkpoint is written, at 100
  advance_to(100);
  assign(j, 3, 4);
  advance_to(150);
  assign(j, 4, 0);  // the fault is spent: 10 s
  advance_to(200);
  auto acks = of_kind("ack");
  REQUIRE(acks.size() == 4);
  CHECK(acks[1].generation == 2);
  CHECK(acks[1].at == sim_time::from_seconds(100));
  CHECK(acks[3].at == sim_time::from_seconds(160));
  CHECK(rec->violations.empty());
}

TEST_CASE_FIXTURE(job_fixture, "a failed stop checkpoint is acknowledged on time and the job resumes from the checkpoint before") {
  // 1 worker, 100 s of work, periodic checkpoints every 30 s, a stop's takes 10 s. The stop at
  // 50 fails: acknowledged at 60 with the work of the checkpoint at 30; restarted at 60 it
  // redoes 20 s and ends at 60 + 70 = 130.
  auto j = spawn_checkpointing_job(1, 100, 30, 10);
  assign(j, 1, 1);
  advance_to(40);
  caf::anon_send(j, ckfault_atom::value, checkpoint_fault::failed());
  advance_to(50);
  assign(j, 2, 0);
  advance_to(60);
  assign(j, 3, 1);
  while (step()) {}
  auto acks = of_kind("ack");
  REQUIRE(acks.size() == 3);
  CHECK(acks[1].at == sim_time::from_seconds(60));
  CHECK(acks[1].work_done == doctest::Approx(30));
  auto fin = of_kind("finished");
  REQUIRE(fin.size() == 1);
  CHECK(fin[0].at == sim_time::from_seconds(130));
  REQUIRE(rec->events.size() == 1);
  CHECK(rec->events[0].event == "ckptfail");
  CHECK(rec->violations.empty());
}

TEST_CASE_FIXTURE(job_fixture, "an assignment over a slow link starts its workers and is acknowledged that much later") {
  // 100 s of work; the assignment and the answers spend 5 s on the link: acknowledged at 5,
  // done at 105. A stop over it (checkpoint 10 s) is acknowledged at 50 + 5 + 10.
  auto j = spawn_checkpointing_job(1, 100, 0, 10);
  job_assignment a{1, 1, 1.0, 0, {0}, {1}};
  a.link_delay_s = 5;
  caf::anon_send(j, assign_atom::value, a);
  drain();
  advance_to(50);
  a = job_assignment{2, 0, 1.0, 0, {}, {}};
  a.link_delay_s = 5;
  caf::anon_send(j, assign_atom::value, a);
  drain();
  advance_to(65);
  auto acks = of_kind("ack");
  REQUIRE(acks.size() == 2);
  CHECK(acks[0].at == sim_time::from_seconds(5));
  CHECK(acks[1].at == sim_time::from_seconds(65));
  CHECK(acks[1].work_done == doctest::Approx(45));  // 50 s since the start, 5 of them on the link
  CHECK(rec->violations.empty());
}
