// A scheduler crash in simulated time (a fault plan's scheduler_crash): while it is away the
// cluster runs on, nothing is decided, and what was sent to it waits until it is back.
#include <doctest/doctest.h>

#include "runtime/inputs/fault_plan.hpp"
#include "solvers/input_error.hpp"
#include "tests/e2e/run_helpers.hpp"

using namespace aryl;

namespace {

const std::string tmp = "sched-crash-";  // temporary files of these tests

/// Two inelastic 1-GPU jobs on one 1-GPU server: a (0..100 s), then b, which waits for a.
config queue_of_two(const std::string& name, const std::string& plan) {
  config c;
  c.trace_file =
      test::write_temp_file(tmp + "two-" + name + ".csv", "job_id,submit_s,gpus,duration_s\na,0,1,100\nb,10,1,100\n");
  c.training.servers = 1;
  c.training.gpus_per_server = 1;
  c.inference.servers = 0;
  c.elastic_fraction = 0;
  c.check_invariants = true;
  c.out_dir = test::temp_dir("sched-crash-out-" + name);
  if (!plan.empty()) c.faults_file = test::write_temp_file(tmp + name + ".yaml", "faults:\n" + plan);
  return c;
}

double start_of(const std::string& log, const std::string& job) {
  auto starts = test::lines_with(log, "scheduler start " + job + " ");
  REQUIRE(starts.size() == 1);
  return std::stod(starts[0]);
}

} // namespace

TEST_CASE("while the scheduler is away a job still finishes on time, but the job waiting for its GPU starts only when it is back") {
  auto calm_cfg = queue_of_two("calm", "");
  auto calm = test::run(calm_cfg);
  REQUIRE_MESSAGE(calm.ok, calm.error);
  CHECK(start_of(test::slurp(calm_cfg.out_dir + "/events.log"), "job-1") == doctest::Approx(100));

  auto c = queue_of_two("away", "  - {at: 50, scheduler_crash: true, down_for: 200}\n");
  auto out = test::run(c);
  REQUIRE_MESSAGE(out.ok, out.error);
  auto log = test::slurp(c.out_dir + "/events.log");
  REQUIRE(test::lines_with(log, "scheduler away for=200").size() == 1);
  auto awake = test::lines_with(log, "scheduler awake");
  REQUIRE(awake.size() == 1);
  CHECK(std::stod(awake[0]) == doctest::Approx(250));
  CHECK(start_of(log, "job-1") == doctest::Approx(250));
  CHECK(out.summary.jobs_completed == 2);
  // a ran 0..100 regardless; b queued 10..250 instead of 10..100.
  CHECK(out.summary.mean_queue_s == doctest::Approx(calm.summary.mean_queue_s + 150.0 / 2));
  CHECK(out.summary.lost_gpu_hours == 0);
}

TEST_CASE("a job submitted while the scheduler is away counts its wait from its submission, not from its return") {
  // Two jobs on two GPUs, so nothing queues but for the outage: b comes at 60, while the
  // scheduler is away (50..250), and starts at 250.
  auto c = queue_of_two("late", "  - {at: 50, scheduler_crash: true, down_for: 200}\n");
  c.training.gpus_per_server = 2;
  c.trace_file = test::write_temp_file(tmp + "late.csv", "job_id,submit_s,gpus,duration_s\na,0,1,100\nb,60,1,100\n");
  auto out = test::run(c);
  REQUIRE_MESSAGE(out.ok, out.error);
  CHECK(start_of(test::slurp(c.out_dir + "/events.log"), "job-1") == doctest::Approx(250));
  auto jobs = test::lines_with(test::slurp(c.out_dir + "/jobs.csv"), "1,b,");
  REQUIRE(jobs.size() == 1);
  CHECK(jobs[0].find("1,b,1,0,60.000000,250.000000,") == 0);
  CHECK(out.summary.mean_queue_s == doctest::Approx(190.0 / 2));
}

TEST_CASE("a crash of the scheduler while it is away is ignored, and the run is the same for the same plan") {
  auto c = queue_of_two("twice", "  - {at: 50, scheduler_crash: true, down_for: 200}\n"
                                 "  - {at: 60, scheduler_crash: true, down_for: 1000}\n");
  auto out = test::run(c);
  REQUIRE_MESSAGE(out.ok, out.error);
  auto log = test::slurp(c.out_dir + "/events.log");
  CHECK(test::lines_with(log, "scheduler away").size() == 1);
  CHECK(start_of(log, "job-1") == doctest::Approx(250));
  auto again = c;
  again.out_dir = test::temp_dir("sched-crash-out-twice-again");
  REQUIRE(test::run(again).ok);
  CHECK(test::slurp(again.out_dir + "/events.log") == log);
}

TEST_CASE("a server that crashes while the scheduler is away is found lost when it is back, or rebooted if it returned meanwhile") {
  // small.csv on 2 x 8 GPUs: t1 runs jobs from the start. Its loss is due 20-30 s after the
  // crash at 35, while the scheduler is away (30..130).
  config c;
  c.trace_file = "tests/e2e/data/small.csv";
  c.training.servers = 2;
  c.inference.servers = 1;
  c.check_invariants = true;
  c.out_dir = test::temp_dir("sched-crash-out-lost");
  c.faults_file = test::write_temp_file(tmp + "lost.yaml",
                                        "faults:\n  - {at: 30, scheduler_crash: true, down_for: 100}\n"
                                        "  - {at: 35, server_crash: t1, down_for: 300}\n");
  auto out = test::run(c);
  REQUIRE_MESSAGE(out.ok, out.error);
  auto log = test::slurp(c.out_dir + "/events.log");
  auto lost = test::lines_with(log, "scheduler lost server=t1");
  REQUIRE(lost.size() == 1);
  CHECK(std::stod(lost[0]) == doctest::Approx(130));
  CHECK(test::lines_with(log, "scheduler back server=t1").size() == 1);
  CHECK(out.summary.jobs_completed == 8);
  CHECK(out.summary.recoveries >= 1);

  // Back at 95, before the scheduler (130): its agent registers again without the workers.
  c.out_dir = test::temp_dir("sched-crash-out-rebooted");
  c.faults_file = test::write_temp_file(tmp + "rebooted.yaml",
                                        "faults:\n  - {at: 30, scheduler_crash: true, down_for: 100}\n"
                                        "  - {at: 35, server_crash: t1, down_for: 60}\n");
  auto rebooted = test::run(c);
  REQUIRE_MESSAGE(rebooted.ok, rebooted.error);
  log = test::slurp(c.out_dir + "/events.log");
  CHECK(test::lines_with(log, "scheduler lost server=t1").empty());
  auto line = test::lines_with(log, "scheduler rebooted server=t1");
  REQUIRE(line.size() == 1);
  CHECK(std::stod(line[0]) == doctest::Approx(130));
  CHECK(rebooted.summary.jobs_completed == 8);
  CHECK(rebooted.summary.recoveries >= 1);
}

TEST_CASE("a reclaim asked while the scheduler is away is answered when it is back, and counted late by that much") {
  config c;
  c.trace_file = "tests/e2e/data/small.csv";
  c.training.servers = 2;
  c.inference.servers = 1;
  c.check_invariants = true;
  c.inference_trace = test::write_temp_file(tmp + "demand.csv", "t_s,servers_needed\n0,0\n100,1\n");
  c.inference_interval_s = 30;
  c.inference_grace_s = 0;
  c.checkpoint_s = 0;
  c.checkpoint_per_gpu_s = 0;
  c.checkpoint_jitter = 0;
  c.out_dir = test::temp_dir("sched-crash-out-reclaim-calm");
  auto calm = test::run(c);
  REQUIRE_MESSAGE(calm.ok, calm.error);
  REQUIRE(calm.summary.reclaim_slo_misses == 0);
  c.out_dir = test::temp_dir("sched-crash-out-reclaim");
  c.faults_file =
      test::write_temp_file(tmp + "reclaim.yaml", "faults:\n  - {at: 90, scheduler_crash: true, down_for: 100}\n");
  auto out = test::run(c);
  REQUIRE_MESSAGE(out.ok, out.error);
  // Demand rises at 100 and is seen at the inference tick of 120; the scheduler is back at 190.
  CHECK(out.summary.reclaim_slo_misses == 1);
  CHECK(out.summary.reclaim_max_late_s == doctest::Approx(70));
  CHECK(out.summary.jobs_completed == 8);
}

TEST_CASE("a bad scheduler_crash is refused naming the file, the line and the problem") {
  auto c = queue_of_two("bad", "");
  auto refused = [&](const std::string& entry, const std::string& message) {
    c.faults_file = test::write_temp_file(tmp + "bad.yaml", "faults:\n  - {at: 1, surge: 1}\n  - " + entry + "\n");
    CHECK_THROWS_WITH_AS(test::run(c), doctest::Contains("bad.yaml:3"), input_error);
    CHECK_THROWS_WITH_AS(test::run(c), doctest::Contains(message.c_str()), input_error);
  };
  refused("{at: 1, scheduler_crash: true}", "scheduler_crash needs `down_for`");
  refused("{at: 1, scheduler_crash: t0, down_for: 5}", "scheduler_crash: must be true");
  refused("{at: 1, scheduler_crash: true, for: 5}", "'for' does not go with scheduler_crash");
}

TEST_CASE("random scheduler crashes are the same for the same seed, leave the other kinds' faults in place, and every job is accounted for") {
  random_fault_rates others;
  others.server_crash_per_day = 4;
  others.worker_crash_per_day = 50;
  others.link_per_day = 5;
  auto with = others;
  with.scheduler_crash_per_day = 6;
  std::vector<std::string> servers{"t0", "t1", "t2"};
  auto before = random_fault_plan(others, 9, 5 * 86400.0, servers, 100, 2);
  auto after = random_fault_plan(with, 9, 5 * 86400.0, servers, 100, 2);
  std::vector<fault_event> kept;
  for (auto& e : after)
    if (e.what != fault_event::kind::scheduler_crash) kept.push_back(e);
  REQUIRE(kept.size() == before.size());
  REQUIRE(after.size() > before.size());
  for (size_t i = 0; i < kept.size(); ++i) {
    CHECK(kept[i].at == before[i].at);
    CHECK(kept[i].what == before[i].what);
  }

  config c;
  c.synthetic_jobs = 200;
  c.training.servers = 4;
  c.inference.servers = 2;
  c.check_invariants = true;
  c.random_faults.scheduler_crash_per_day = 24;
  c.random_faults.mean_scheduler_down_s = 600;
  c.random_faults.server_crash_per_day = 2;
  c.out_dir = test::temp_dir("sched-crash-out-random-a");
  auto a = test::run(c);
  REQUIRE_MESSAGE(a.ok, a.error);
  auto b_cfg = c;
  b_cfg.out_dir = test::temp_dir("sched-crash-out-random-b");
  auto b = test::run(b_cfg);
  REQUIRE_MESSAGE(b.ok, b.error);
  auto log = test::slurp(c.out_dir + "/events.log");
  CHECK(test::lines_with(log, "scheduler away").size() > 2);
  CHECK(test::lines_with(log, "scheduler away").size() == test::lines_with(log, "scheduler awake").size());
  CHECK(log == test::slurp(b_cfg.out_dir + "/events.log"));
  CHECK(a.summary.jobs_completed + a.summary.jobs_failed == a.summary.jobs_submitted);
}
