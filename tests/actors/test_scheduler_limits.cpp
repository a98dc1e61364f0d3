// Time limits, retries and outcomes in the scheduler actor, in simulated time: a limit ends a
// job as timeout at the instant it is up, a failing job is retried exactly its max_retries
// times, and each attempt is on the job's record.
#include <doctest/doctest.h>

#include "actors/scheduler.hpp"
#include "actors/server.hpp"
#include "tests/actors/sim_fixture.hpp"

using namespace aryl;
using namespace aryl::test;

namespace {

struct limits_fixture : sim_fixture {
  std::shared_ptr<recorded> rec = std::make_shared<recorded>();
  recorder_actor recorder = sys->spawn(recording_recorder, rec);

  /// One training server t0 of 8 GPUs, no restart overhead; faults.max_retries 3.
  scheduler_actor spawn_scheduler(const char* policy = "fifo") {
    scheduler_setup s;
    s.policy = *find_policy(policy);
    s.planner.placement = placement_mode::consolidated;
    s.type_names = {"V100"};
    s.params.type_speed = {1.0};
    s.params.restart_overhead_s = 0;
    server_entry e;
    e.name = "t0";
    e.gpus = e.free = 8;
    s.servers.push_back(e);
    std::vector<server_actor> handles{sys->spawn(server_behavior, e.name, 8, static_cast<int>(e.mode), recorder, nullptr)};
    return sys->spawn(scheduler_behavior, s, handles, recorder, tb, throughput_model{});
  }
  job_spec job(uint32_t index, double duration_s) {
    job_spec j;
    j.index = index;
    j.name = "j" + std::to_string(index);
    j.gpus = j.min_workers = j.max_workers = 4;
    j.duration_s = duration_s;
    return j;
  }
  int count(const std::string& event) const {
    int n = 0;
    for (auto& e : rec->events) n += e.event == event;
    return n;
  }
  /// What a live job actor reports when its rank 0 exits `code`: its exits, then the failure.
  void worker_exits(const scheduler_actor& s, uint32_t job, int code) {
    caf::anon_send(s, exits_atom::value, job, std::vector<worker_exit>{{0, code, 0}});
    caf::anon_send(s, wfail_atom::value, job);
    drain();
  }
};

} // namespace

TEST_CASE_FIXTURE(limits_fixture, "a job past its time limit ends timeout at the limit, its work unfinished") {
  auto s = spawn_scheduler();
  auto j = job(0, 100);
  j.time_limit_s = 30;
  caf::anon_send(s, submit_atom::value, j);
  drain();
  step();  // the round at 0 starts it on t0 (4 of 8 GPUs)
  REQUIRE(count("start") == 1);
  while (step()) {}
  REQUIRE(rec->jobs.size() == 1);
  auto& r = rec->jobs[0];
  CHECK(r.outcome == job_outcome::timeout);
  CHECK(r.end_us == 30'000'000);  // at the limit, not at its work's end (100 s)
  REQUIRE(r.attempts.size() == 1);
  CHECK(r.attempts[0].start_us == 0);
  CHECK(r.attempts[0].outcome == job_outcome::timeout);
  CHECK(count("timeout") == 1);
  CHECK(count("finish") == 0);
}

TEST_CASE_FIXTURE(limits_fixture, "a retry after a failure starts with the whole time limit") {
  auto s = spawn_scheduler();
  auto a = job(0, 100);
  a.time_limit_s = 30;
  caf::anon_send(s, submit_atom::value, a);
  drain();
  step();  // job-0 runs from 0
  // At 10 s a worker fails: job-0 queues again and restarts in the round at 10 s; its second
  // attempt's limit counts from there: it ends at 40 s, not at 30.
  sched->clock().advance_time(std::chrono::seconds(10));
  drain();
  REQUIRE(now().us == 10'000'000);
  worker_exits(s, 0, 1);
  while (step()) {}
  REQUIRE(rec->jobs.size() == 1);
  CHECK(rec->jobs[0].outcome == job_outcome::timeout);
  CHECK(rec->jobs[0].attempts.size() == 2);
  CHECK(rec->jobs[0].end_us == rec->jobs[0].attempts[1].start_us + 30'000'000);
}

TEST_CASE_FIXTURE(limits_fixture, "a job whose worker exits 3 is retried exactly max_retries times, then ends failed with code 3") {
  auto s = spawn_scheduler();
  auto j = job(0, 1000);
  j.max_retries = 2;  // the config's is 3: the job's own wins
  caf::anon_send(s, submit_atom::value, j);
  drain();
  step();
  for (int attempt = 1; attempt <= 3; ++attempt) {
    REQUIRE(count("start") == attempt);  // attempt n runs on t0
    REQUIRE(rec->jobs.empty());
    worker_exits(s, 0, 3);               // its rank 0 exits 3: queued again, or (the 3rd) failed
    step();                              // the round restarts it
  }
  CHECK(count("start") == 3);            // 1 run + exactly 2 retries
  REQUIRE(rec->jobs.size() == 1);
  auto& r = rec->jobs[0];
  CHECK(r.outcome == job_outcome::failed);
  REQUIRE(r.attempts.size() == 3);
  for (auto& a : r.attempts) {
    CHECK(a.outcome == job_outcome::failed);
    CHECK(a.exits == "0:3");
    CHECK(a.why.find("rank 0 exited with code 3") == 0);
  }
  CHECK(r.attempts.back().why.find("2 restarts after faults exhausted") != std::string::npos);
  CHECK(count("fail") == 1);
}

TEST_CASE_FIXTURE(limits_fixture, "a job whose machine is lost after its retries ends node_lost") {
  auto s = spawn_scheduler();
  auto j = job(0, 1000);
  j.max_retries = 0;
  caf::anon_send(s, submit_atom::value, j);
  drain();
  step();
  caf::anon_send(s, lost_atom::value, 0);  // as the live gateway reports a silent agent
  drain();
  REQUIRE(rec->jobs.size() == 1);
  CHECK(rec->jobs[0].outcome == job_outcome::node_lost);
  CHECK(rec->jobs[0].attempts.back().why.find("server t0 was lost") == 0);
}

TEST_CASE_FIXTURE(limits_fixture, "a time limit counts the time holding workers, not the wait after a preemption") {
  auto s = spawn_scheduler("srtf");
  auto low = job(0, 100);
  low.gpus = low.min_workers = low.max_workers = 8;
  low.time_limit_s = 30;
  caf::anon_send(s, submit_atom::value, low);
  drain();
  step();  // job-0 holds all 8 GPUs of t0 from 0
  sched->clock().advance_time(std::chrono::seconds(10));
  drain();
  // At 10 s a shorter job takes t0 for 20 s (srtf): job-0 waits from 10 to 30, then runs again.
  auto shorter = job(1, 20);
  shorter.gpus = shorter.min_workers = shorter.max_workers = 8;
  caf::anon_send(s, submit_atom::value, shorter);
  drain();
  while (step()) {}
  REQUIRE(rec->jobs.size() == 2);
  auto& r = rec->jobs[1].index == 0 ? rec->jobs[1] : rec->jobs[0];
  CHECK(count("preempt") == 1);
  CHECK(r.outcome == job_outcome::timeout);
  CHECK(r.end_us == 50'000'000);  // 10 s before the preemption, 20 s after its restart at 30 s
  CHECK(r.attempts.size() == 1);  // a preemption is no new attempt
}
