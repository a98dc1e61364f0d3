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
