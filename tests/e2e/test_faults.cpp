// Faults in simulated time: fault plans, loss detection by heartbeats, restarts from the last
// checkpoint, bounded retries, checkpoint time in reclaims, and determinism under random faults.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "runtime/input_error.hpp"
#include "tests/e2e/run_helpers.hpp"

using namespace aryl;

namespace {

std::string write_file(const std::string& name, const std::string& text) {
  auto path = test::temp_dir("faults-" + name);
  std::ofstream(path) << text;
  return path;
}

/// The lines of events.log that contain `needle`.
std::vector<std::string> lines_with(const std::string& log, const std::string& needle) {
  std::vector<std::string> out;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);)
    if (line.find(needle) != std::string::npos) out.push_back(line);
  return out;
}

config small_run(const std::string& name) {
  config c;
  c.trace_file = "tests/e2e/data/small.csv";
  c.training.servers = 2;
  c.inference.servers = 1;
  c.check_invariants = true;
  c.out_dir = test::temp_dir("faults-out-" + name);
  return c;
}

} // namespace

TEST_CASE("a crashed server is noticed after its missed heartbeats; its jobs restart elsewhere and all complete once") {
  auto c = small_run("server");
  c.faults_file = write_file("server.yaml", "faults:\n  - {at: 35, server_crash: t1, down_for: 100}\n");
  auto out = test::run(c);
  REQUIRE_MESSAGE(out.ok, out.error);
  CHECK(out.summary.jobs_completed == 8);
  CHECK(out.summary.jobs_failed == 0);
  auto log = test::slurp(c.out_dir + "/events.log");
  REQUIRE(lines_with(log, "faults fault server_crash t1").size() == 1);
  auto lost = lines_with(log, "scheduler lost server=t1");
  REQUIRE(lost.size() == 1);
  // Noticed within (crash, crash + missed x heartbeat]: modelled, not assumed.
  double noticed = std::stod(lost[0]);
  CHECK(noticed > 35);
  CHECK(noticed <= 35 + c.missed_heartbeats * c.heartbeat_s);
  CHECK(lines_with(log, "server t1 was lost").size() >= 1);
  auto back = lines_with(log, "scheduler back server=t1");
  REQUIRE(back.size() == 1);
  CHECK(std::stod(back[0]) == doctest::Approx(135));
  CHECK(out.summary.recoveries >= 1);
  CHECK(out.summary.lost_gpu_hours > 0);
}

TEST_CASE("a worker crash loses exactly the work since the last periodic checkpoint") {
  // One 1-GPU job of 100 s, checkpoints every 30 s, a worker dies at 50 s: the job queues again
  // at once, restarts at 50 s paying the restart overhead (60 s) and redoes 20 s of work from
  // its checkpoint at 30 s: it ends at 50 + 60 + 70 = 180 s.
  auto c = small_run("worker");
  c.trace_file = write_file("one.csv", "job_id,submit_s,gpus,duration_s\nonly,0,1,100\n");
  c.elastic_fraction = 0;
  c.checkpoint_interval_s = 30;
  c.faults_file = write_file("worker.yaml", "faults:\n  - {at: 50, worker_crash: 0}\n");
  auto out = test::run(c);
  REQUIRE_MESSAGE(out.ok, out.error);
  CHECK(out.summary.jobs_completed == 1);
  CHECK(out.summary.mean_jct_s == doctest::Approx(180).epsilon(1e-6));
  CHECK(out.summary.lost_gpu_hours == doctest::Approx(20.0 / 3600).epsilon(1e-6));
  CHECK(out.summary.recoveries == 1);
  CHECK(out.summary.recovery_p50_s == doctest::Approx(0));  // restarted at once (overhead is not downtime)
}

TEST_CASE("a job whose workers keep dying ends as failed after faults.max_retries restarts, named in jobs.csv") {
  auto c = small_run("retries");
  c.trace_file = write_file("retry.csv", "job_id,submit_s,gpus,duration_s\nfragile,0,1,1000\nsteady,0,1,100\n");
  c.elastic_fraction = 0;
  c.max_retries = 2;
  c.faults_file = write_file("retries.yaml",
                             "faults:\n  - {at: 100, worker_crash: 0}\n  - {at: 200, worker_crash: 0}\n"
                             "  - {at: 300, worker_crash: 0}\n  - {at: 400, worker_crash: 0}\n");
  auto out = test::run(c);
  REQUIRE_MESSAGE(out.ok, out.error);
  CHECK(out.summary.jobs_submitted == 2);
  CHECK(out.summary.jobs_completed == 1);
  CHECK(out.summary.jobs_failed == 1);
  auto jobs = test::slurp(c.out_dir + "/jobs.csv");
  CHECK(jobs.find("0,fragile,") != std::string::npos);
  CHECK(lines_with(jobs, "fragile")[0].ends_with(",failed"));
  CHECK(lines_with(jobs, "steady")[0].ends_with(",done"));
  CHECK(lines_with(test::slurp(c.out_dir + "/events.log"), "2 restarts after faults exhausted").size() == 1);
}

TEST_CASE("a reclaim waits for the stopped jobs' checkpoints, and a late one counts as an SLO miss with its lateness") {
  auto c = small_run("reclaim");
  c.inference_trace = write_file("demand.csv", "t_s,servers_needed\n0,0\n100,1\n");
  c.inference_interval_s = 30;
  c.inference_grace_s = 0;  // any checkpoint time is late
  c.checkpoint_s = 30;
  c.checkpoint_per_gpu_s = 0;
  c.checkpoint_jitter = 0;
  auto out = test::run(c);
  REQUIRE_MESSAGE(out.ok, out.error);
  CHECK(out.summary.jobs_completed == 8);
  CHECK(out.summary.reclaim_slo_misses >= 1);
  CHECK(out.summary.reclaim_latency_p50_s == doctest::Approx(30));
  CHECK(out.summary.reclaim_max_late_s == doctest::Approx(30));
  c.checkpoint_s = 0;
  c.out_dir += "-instant";
  auto instant = test::run(c);
  REQUIRE_MESSAGE(instant.ok, instant.error);
  CHECK(instant.summary.reclaim_slo_misses == 0);
  CHECK(instant.summary.reclaim_max_late_s == 0);
}

TEST_CASE("random faults are the same for the same seed: byte-identical decision logs, every job accounted for") {
  auto c = small_run("random-a");
  c.trace_file.clear();  // the synthetic workload
  c.synthetic_jobs = 200;
  c.training.servers = 4;
  c.inference.servers = 2;
  c.random_faults.server_crash_per_day = 4;
  c.random_faults.worker_crash_per_day = 200;
  c.random_faults.surge_per_day = 4;
  c.random_faults.mean_down_s = 1800;
  auto a = test::run(c);
  REQUIRE_MESSAGE(a.ok, a.error);
  auto b_cfg = c;
  b_cfg.out_dir = test::temp_dir("faults-out-random-b");
  auto b = test::run(b_cfg);
  REQUIRE_MESSAGE(b.ok, b.error);
  auto log_a = test::slurp(c.out_dir + "/events.log");
  CHECK(lines_with(log_a, "faults fault").size() > 5);
  CHECK(log_a == test::slurp(b_cfg.out_dir + "/events.log"));
  CHECK(a.summary.jobs_completed + a.summary.jobs_failed == a.summary.jobs_submitted);
}

TEST_CASE("a bad fault plan is refused naming the file, the line and the problem") {
  auto c = small_run("bad");
  c.faults_file = write_file("bad-server.yaml", "faults:\n  - {at: 5, server_crash: t9}\n");
  CHECK_THROWS_WITH_AS(test::run(c), doctest::Contains("bad-server.yaml:2"), input_error);
  CHECK_THROWS_WITH_AS(test::run(c), doctest::Contains("'t9' is not a training server"), input_error);
  c.faults_file = write_file("no-time.yaml", "faults:\n  - {worker_crash: 3}\n");
  CHECK_THROWS_WITH_AS(test::run(c), doctest::Contains("needs `at`"), input_error);
  c.faults_file = write_file("two.yaml", "faults:\n  - {at: 1, worker_crash: 3, surge: 2}\n");
  CHECK_THROWS_WITH_AS(test::run(c), doctest::Contains("exactly one of"), input_error);
  c.faults_file = write_file("typo.yaml", "faults:\n  - {at: 1, server_crsh: t0}\n");
  CHECK_THROWS_WITH_AS(test::run(c), doctest::Contains("unknown key 'server_crsh'"), input_error);
  c.faults_file = std::filesystem::temp_directory_path().string();
  CHECK_THROWS_WITH_AS(test::run(c), doctest::Contains("is a directory, not a fault plan"), input_error);
}

TEST_CASE("a server back before its loss is noticed restarts the jobs whose workers died there, and the run ends") {
  // Down for 5 s, noticed only after 20-30 s: its agent registers again first, without the
  // workers the scheduler placed there. (This once left those jobs stalled for ever.)
  auto c = small_run("reboot");
  c.faults_file = write_file("reboot.yaml", "faults:\n  - {at: 35, server_crash: t1, down_for: 5}\n");
  auto out = test::run(c);
  REQUIRE_MESSAGE(out.ok, out.error);
  CHECK(out.summary.jobs_completed == 8);
  auto log = test::slurp(c.out_dir + "/events.log");
  REQUIRE(lines_with(log, "scheduler rebooted server=t1").size() == 1);
  CHECK(std::stod(lines_with(log, "scheduler rebooted server=t1")[0]) == doctest::Approx(40));
  CHECK(lines_with(log, "server t1 restarted").size() >= 1);
  CHECK(lines_with(log, "scheduler lost").empty());
}
