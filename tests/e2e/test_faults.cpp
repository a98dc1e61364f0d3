// Faults in simulated time: fault plans, loss detection by heartbeats, restarts from the last
// checkpoint, bounded retries, checkpoint time in reclaims, and determinism under random faults.
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>

#include "solvers/input_error.hpp"
#include "tests/e2e/run_helpers.hpp"

using namespace aryl;

namespace {

const std::string tmp = "faults-";  // temporary files of these tests

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

TEST_CASE("a crashed server is noticed after its missed heartbeats, its jobs restart elsewhere, and all complete once") {
  auto c = small_run("server");
  c.faults_file =
      test::write_temp_file(tmp + "server.yaml", "faults:\n  - {at: 35, server_crash: t1, down_for: 100}\n");
  auto out = test::run(c);
  REQUIRE_MESSAGE(out.ok, out.error);
  CHECK(out.summary.jobs_completed == 8);
  CHECK(out.summary.jobs_failed == 0);
  auto log = test::slurp(c.out_dir + "/events.log");
  REQUIRE(test::lines_with(log, "faults fault server_crash t1").size() == 1);
  auto lost = test::lines_with(log, "scheduler lost server=t1");
  REQUIRE(lost.size() == 1);
  // Noticed within (crash, crash + missed x heartbeat]: modelled, not assumed.
  double noticed = std::stod(lost[0]);
  CHECK(noticed > 35);
  CHECK(noticed <= 35 + c.missed_heartbeats * c.heartbeat_s);
  CHECK(test::lines_with(log, "server t1 was lost").size() >= 1);
  auto back = test::lines_with(log, "scheduler back server=t1");
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
  c.trace_file = test::write_temp_file(tmp + "one.csv", "job_id,submit_s,gpus,duration_s\nonly,0,1,100\n");
  c.elastic_fraction = 0;
  c.checkpoint_interval_s = 30;
  c.faults_file = test::write_temp_file(tmp + "worker.yaml", "faults:\n  - {at: 50, worker_crash: 0}\n");
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
  c.trace_file =
      test::write_temp_file(tmp + "retry.csv", "job_id,submit_s,gpus,duration_s\nfragile,0,1,1000\nsteady,0,1,100\n");
  c.elastic_fraction = 0;
  c.max_retries = 2;
  c.faults_file = test::write_temp_file(tmp + "retries.yaml",
                                        "faults:\n  - {at: 100, worker_crash: 0}\n  - {at: 200, worker_crash: 0}\n"
                                        "  - {at: 300, worker_crash: 0}\n  - {at: 400, worker_crash: 0}\n");
  auto out = test::run(c);
  REQUIRE_MESSAGE(out.ok, out.error);
  CHECK(out.summary.jobs_submitted == 2);
  CHECK(out.summary.jobs_completed == 1);
  CHECK(out.summary.jobs_failed == 1);
  auto jobs = test::slurp(c.out_dir + "/jobs.csv");
  CHECK(jobs.find("0,fragile,") != std::string::npos);
  CHECK(test::lines_with(jobs, "fragile")[0].find(",failed,") != std::string::npos);
  CHECK(test::lines_with(jobs, "steady")[0].find(",done,") != std::string::npos);
  CHECK(test::lines_with(test::slurp(c.out_dir + "/events.log"), "2 restarts after faults exhausted").size() == 1);
}

TEST_CASE("a reclaim waits for the stopped jobs' checkpoints, and a late one counts as an SLO miss with its lateness") {
  auto c = small_run("reclaim");
  c.scheduler.free_gpus_first = true;  // jobs on the lent server for the reclaim to stop
  c.inference_trace = test::write_temp_file(tmp + "demand.csv", "t_s,servers_needed\n0,0\n100,1\n");
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

TEST_CASE("a reclaim that the run's last job completes by ending is measured in summary.json") {
  // One elastic job on t0 and the lent i0 (16 workers, done at 1725 s at that size). Demand
  // takes i0 back at 1710 s: the job scales in to t0's 8 (ledger: job 0 on t0:8, i0
  // reclaiming) and its ack waits 30 s for the checkpoint, but its work ends at 1729.69 s.
  // Its end completes the reclaim, and that is also the run's end: the latency (19.69 s)
  // must reach the summary before the outputs close.
  auto c = small_run("reclaim-at-end");
  c.trace_file = test::write_temp_file(tmp + "spill.csv", "job_id,submit_s,gpus,duration_s,elastic,min_workers,"
                                                         "max_workers\nx,0,8,2200,1,4,16\n");
  c.training.servers = 1;
  c.inference.gpu_type = c.training.gpu_type;
  c.inference_trace = test::write_temp_file(tmp + "late-demand.csv", "t_s,servers_needed\n0,0\n1700,1\n100000,1\n");
  c.inference_interval_s = 30;
  c.inference_grace_s = 0;
  c.checkpoint_s = 30;
  c.checkpoint_per_gpu_s = 0;
  c.checkpoint_jitter = 0;
  c.scale_overhead_s = 0;
  c.scheduler = myopic_scaling(c.scheduler);
  auto out = test::run(c);
  REQUIRE_MESSAGE(out.ok, out.error);
  auto log = test::slurp(c.out_dir + "/events.log");
  REQUIRE(test::lines_with(log, "scheduler rescale job-0 workers=8 [t0:8] | scale in by 8").size() == 1);
  auto finish = test::lines_with(log, "scheduler finish job-0");
  auto back = test::lines_with(log, "scheduler return servers=1");
  REQUIRE(finish.size() == 1);
  REQUIRE(back.size() == 1);
  CHECK(std::stod(back[0]) == std::stod(finish[0]));
  CHECK(out.summary.reclaim_latency_p50_s == doctest::Approx(std::stod(finish[0]) - 1710).epsilon(1e-9));
  CHECK(out.summary.reclaim_latency_p50_s > 0);
  CHECK(out.summary.reclaim_latency_p99_s == out.summary.reclaim_latency_p50_s);
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
  CHECK(test::lines_with(log_a, "faults fault").size() > 5);
  CHECK(log_a == test::slurp(b_cfg.out_dir + "/events.log"));
  CHECK(a.summary.jobs_completed + a.summary.jobs_failed == a.summary.jobs_submitted);
}

TEST_CASE("a bad fault plan is refused naming the file, the line and the problem") {
  auto c = small_run("bad");
  c.faults_file = test::write_temp_file(tmp + "bad-server.yaml", "faults:\n  - {at: 5, server_crash: t9}\n");
  CHECK_THROWS_WITH_AS(test::run(c), doctest::Contains("bad-server.yaml:2"), input_error);
  CHECK_THROWS_WITH_AS(test::run(c), doctest::Contains("'t9' is not a server of the config (t0..t1, i0)"), input_error);
  c.faults_file = test::write_temp_file(tmp + "no-time.yaml", "faults:\n  - {worker_crash: 3}\n");
  CHECK_THROWS_WITH_AS(test::run(c), doctest::Contains("needs `at`"), input_error);
  c.faults_file = test::write_temp_file(tmp + "two.yaml", "faults:\n  - {at: 1, worker_crash: 3, surge: 2}\n");
  CHECK_THROWS_WITH_AS(test::run(c), doctest::Contains("exactly one of"), input_error);
  c.faults_file = test::write_temp_file(tmp + "typo.yaml", "faults:\n  - {at: 1, server_crsh: t0}\n");
  CHECK_THROWS_WITH_AS(test::run(c), doctest::Contains("unknown key 'server_crsh'"), input_error);
  c.faults_file = std::filesystem::temp_directory_path().string();
  CHECK_THROWS_WITH_AS(test::run(c), doctest::Contains("is a directory, not a fault plan"), input_error);
}

TEST_CASE("a server back before its loss is noticed restarts the jobs whose workers died there, and the run ends") {
  // Down for 5 s, noticed only after 20-30 s: its agent registers again first, without the
  // workers the scheduler placed there. (This once left those jobs stalled for ever.)
  auto c = small_run("reboot");
  c.faults_file = test::write_temp_file(tmp + "reboot.yaml", "faults:\n  - {at: 35, server_crash: t1, down_for: 5}\n");
  auto out = test::run(c);
  REQUIRE_MESSAGE(out.ok, out.error);
  CHECK(out.summary.jobs_completed == 8);
  auto log = test::slurp(c.out_dir + "/events.log");
  REQUIRE(test::lines_with(log, "scheduler rebooted server=t1").size() == 1);
  CHECK(std::stod(test::lines_with(log, "scheduler rebooted server=t1")[0]) == doctest::Approx(40));
  CHECK(test::lines_with(log, "server t1 restarted").size() >= 1);
  CHECK(test::lines_with(log, "scheduler lost").empty());
}

namespace {

/// One 1-GPU job of 100 s, inelastic, checkpointing every 30 s, on 2 training servers (it
/// starts on t0 at 0; restarting costs 60 s).
config one_job_run(const std::string& name, const std::string& plan) {
  auto c = small_run(name);
  c.trace_file = test::write_temp_file(tmp + "one-" + name + ".csv", "job_id,submit_s,gpus,duration_s\nonly,0,1,100\n");
  c.elastic_fraction = 0;
  c.checkpoint_interval_s = 30;
  c.faults_file = test::write_temp_file(tmp + name + ".yaml", "faults:\n" + plan);
  return c;
}

/// events.log without the fault actor's own lines.
std::string decisions(const std::string& log) {
  std::string out;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);)
    if (line.find(" faults fault ") == std::string::npos) out += line + "\n";
  return out;
}

} // namespace

TEST_CASE("a disconnect shorter than the grace changes no job") {
  // t1 is noticed lost 20-30 s after its agent goes silent; this one is back after 15 s.
  auto c = small_run("short-disconnect");
  auto calm = test::run(c);
  REQUIRE_MESSAGE(calm.ok, calm.error);
  auto calm_log = test::slurp(c.out_dir + "/events.log");
  auto calm_jobs = test::slurp(c.out_dir + "/jobs.csv");
  c.out_dir = test::temp_dir("faults-out-short-disconnect-faulty");
  c.faults_file =
      test::write_temp_file(tmp + "short-disconnect.yaml", "faults:\n  - {at: 35, disconnect: t1, for: 15}\n");
  auto out = test::run(c);
  REQUIRE_MESSAGE(out.ok, out.error);
  auto log = test::slurp(c.out_dir + "/events.log");
  CHECK(test::lines_with(log, "faults fault disconnect t1 for=15").size() == 1);
  CHECK(decisions(log) == calm_log);
  CHECK(test::slurp(c.out_dir + "/jobs.csv") == calm_jobs);
  CHECK(out.summary.lost_gpu_hours == 0);
}

TEST_CASE("a disconnect longer than the grace is noticed like a crash: its job restarts elsewhere from its checkpoint") {
  // t0 falls silent at 50 (its last heartbeat) and is lost at 80: the job's worker there runs
  // on, but the job restarts on t1 from its checkpoint at 60 (the work of 60..80 is lost) after
  // the restart overhead: 80 + 60 + 40 = 180.
  auto c = one_job_run("long-disconnect", "  - {at: 50, disconnect: t0, for: 100}\n");
  auto out = test::run(c);
  REQUIRE_MESSAGE(out.ok, out.error);
  auto log = test::slurp(c.out_dir + "/events.log");
  auto lost = test::lines_with(log, "scheduler lost server=t0 jobs=1");
  REQUIRE(lost.size() == 1);
  CHECK(std::stod(lost[0]) == doctest::Approx(80));
  REQUIRE(test::lines_with(log, "scheduler start job-0 workers=1 V100 [t1:1]").size() == 1);
  CHECK(out.summary.jobs_completed == 1);
  CHECK(out.summary.mean_jct_s == doctest::Approx(180).epsilon(1e-6));
  CHECK(out.summary.lost_gpu_hours == doctest::Approx(20.0 / 3600).epsilon(1e-6));
}

TEST_CASE("a disconnected agent's surviving workers are stopped when it reconnects after its jobs moved") {
  auto c = one_job_run("reconnect", "  - {at: 50, disconnect: t0, for: 100}\n");
  auto out = test::run(c);
  REQUIRE_MESSAGE(out.ok, out.error);
  auto log = test::slurp(c.out_dir + "/events.log");
  auto stopped = test::lines_with(log, "scheduler reconcile server=t0 stopped=job-0");
  REQUIRE(stopped.size() == 1);
  CHECK(std::stod(stopped[0]) == doctest::Approx(150));
  // Stopped before the server is back in use.
  auto back = test::lines_with(log, "scheduler back server=t0");
  REQUIRE(back.size() == 1);
  CHECK(log.find(stopped[0]) < log.find(back[0]));
}

TEST_CASE("heartbeats delayed past the grace make a spurious loss, the job moves, and its workers are stopped when one arrives") {
  // t0's heartbeat sent at 60 arrives at 85, after the grace ran out at 80.
  auto c = one_job_run("slow-link", "  - {at: 55, link: t0, for: 600, delay_s: 25}\n");
  auto out = test::run(c);
  REQUIRE_MESSAGE(out.ok, out.error);
  auto log = test::slurp(c.out_dir + "/events.log");
  REQUIRE(test::lines_with(log, "scheduler lost server=t0").size() == 1);
  CHECK(std::stod(test::lines_with(log, "scheduler lost server=t0")[0]) == doctest::Approx(80));
  auto stopped = test::lines_with(log, "scheduler reconcile server=t0 stopped=job-0");
  REQUIRE(stopped.size() == 1);
  CHECK(std::stod(stopped[0]) == doctest::Approx(85));
  CHECK(out.summary.jobs_completed == 1);
}

TEST_CASE("a failed checkpoint makes a later crash lose the work since the previous checkpoint") {
  // The checkpoint due at 60 fails; a worker dies at 70: back to 30, not 60. The job restarts
  // at once and pays the overhead: 70 + 60 + 70 = 200 (with the checkpoint: 170).
  auto c = one_job_run("ckpt-fail", "  - {at: 40, checkpoint: 0, fail: true}\n  - {at: 70, worker_crash: 0}\n");
  auto out = test::run(c);
  REQUIRE_MESSAGE(out.ok, out.error);
  CHECK(out.summary.mean_jct_s == doctest::Approx(200).epsilon(1e-6));
  CHECK(out.summary.lost_gpu_hours == doctest::Approx(40.0 / 3600).epsilon(1e-6));
}

TEST_CASE("a slow periodic checkpoint protects the work only once it is written") {
  // The checkpoint begun at 60 takes 20 s more: a crash at 70 goes back to 30, one at 85 to 60.
  auto during = one_job_run("ckpt-slow-during", "  - {at: 40, checkpoint: 0, slow_s: 20}\n  - {at: 70, worker_crash: 0}\n");
  auto a = test::run(during);
  REQUIRE_MESSAGE(a.ok, a.error);
  CHECK(a.summary.lost_gpu_hours == doctest::Approx(40.0 / 3600).epsilon(1e-6));
  auto after = one_job_run("ckpt-slow-after", "  - {at: 40, checkpoint: 0, slow_s: 20}\n  - {at: 85, worker_crash: 0}\n");
  auto b = test::run(after);
  REQUIRE_MESSAGE(b.ok, b.error);
  CHECK(b.summary.lost_gpu_hours == doctest::Approx(25.0 / 3600).epsilon(1e-6));
}

TEST_CASE("a slow stop checkpoint delays the reclaim waiting for it by its extra time") {
  // As the reclaim test above: every stop's checkpoint takes 30 s; the job on the reclaimed
  // server is told to stop at 120 and its checkpoint now takes 50 s more. At the minimum floor
  // the reclaim scales jobs in, each stop one checkpoint.
  auto c = small_run("reclaim-slow");
  c.scheduler.floor = elastic_floor::min;
  c.inference_trace = test::write_temp_file(tmp + "demand-slow.csv", "t_s,servers_needed\n0,0\n100,1\n");
  c.inference_interval_s = 30;
  c.inference_grace_s = 0;
  c.checkpoint_s = 30;
  c.checkpoint_per_gpu_s = 0;
  c.checkpoint_jitter = 0;
  auto calm = test::run(c);
  REQUIRE_MESSAGE(calm.ok, calm.error);
  std::string plan = "faults:\n";
  for (int job = 0; job < 8; ++job) plan += "  - {at: 119, checkpoint: " + std::to_string(job) + ", slow_s: 50}\n";
  c.faults_file = test::write_temp_file(tmp + "reclaim-slow.yaml", plan);
  c.out_dir += "-slow";
  auto out = test::run(c);
  REQUIRE_MESSAGE(out.ok, out.error);
  CHECK(out.summary.reclaim_latency_p50_s == doctest::Approx(calm.summary.reclaim_latency_p50_s + 50));
  CHECK(out.summary.reclaim_max_late_s == doctest::Approx(calm.summary.reclaim_max_late_s + 50));
}

TEST_CASE("a bad disconnect, link or checkpoint fault is refused naming the file, the line and the key") {
  auto c = small_run("bad-new");
  auto refused = [&](const std::string& entry, const std::string& message) {
    c.faults_file = test::write_temp_file(tmp + "bad-new.yaml", "faults:\n  - {at: 1, surge: 1}\n  - " + entry + "\n");
    CHECK_THROWS_WITH_AS(test::run(c), doctest::Contains("bad-new.yaml:3"), input_error);
    CHECK_THROWS_WITH_AS(test::run(c), doctest::Contains(message.c_str()), input_error);
  };
  refused("{at: 1, disconnect: t0}", "disconnect needs `for`");
  refused("{at: 1, disconnect: t5, for: 9}", "disconnect: 't5' is not a server of the config");
  refused("{at: 1, link: t0, for: 9}", "link needs `delay_s` or `loss` above 0");
  refused("{at: 1, link: t0, for: 9, loss: 1.5}", "loss must be a number in [0, 1]");
  refused("{at: 1, checkpoint: 2}", "checkpoint needs one of `slow_s` (seconds) or `fail: true`");
  refused("{at: 1, checkpoint: 2, slow_s: 5, fail: true}", "checkpoint needs one of");
  refused("{at: 1, checkpoint: 2, fail: false}", "fail: must be true");
  refused("{at: 1, worker_crash: 2, for: 9}", "'for' does not go with worker_crash");
}

TEST_CASE("random disconnects, link faults and checkpoint faults are the same for the same seed, every job accounted for") {
  auto c = small_run("random-new-a");
  c.trace_file.clear();
  c.synthetic_jobs = 200;
  c.training.servers = 4;
  c.inference.servers = 2;
  c.random_faults.disconnect_per_day = 20;
  c.random_faults.mean_disconnect_s = 120;
  c.random_faults.link_per_day = 20;
  c.random_faults.checkpoint_fail_per_day = 100;
  c.random_faults.checkpoint_slow_per_day = 100;
  auto a = test::run(c);
  REQUIRE_MESSAGE(a.ok, a.error);
  auto b_cfg = c;
  b_cfg.out_dir = test::temp_dir("faults-out-random-new-b");
  auto b = test::run(b_cfg);
  REQUIRE_MESSAGE(b.ok, b.error);
  auto log_a = test::slurp(c.out_dir + "/events.log");
  CHECK(test::lines_with(log_a, "faults fault disconnect").size() > 2);
  CHECK(test::lines_with(log_a, "faults fault link").size() > 2);
  CHECK(test::lines_with(log_a, "faults fault checkpoint").size() > 2);
  CHECK(test::lines_with(log_a, "scheduler reconcile").size() >= 1);
  CHECK(log_a == test::slurp(b_cfg.out_dir + "/events.log"));
  CHECK(a.summary.jobs_completed + a.summary.jobs_failed == a.summary.jobs_submitted);
}

TEST_CASE("the new random fault kinds leave the faults of the other kinds where they were") {
  random_fault_rates old_kinds;
  old_kinds.server_crash_per_day = 4;
  old_kinds.worker_crash_per_day = 50;
  old_kinds.surge_per_day = 4;
  auto all_kinds = old_kinds;
  all_kinds.disconnect_per_day = 5;
  all_kinds.link_per_day = 5;
  all_kinds.checkpoint_fail_per_day = 20;
  all_kinds.checkpoint_slow_per_day = 20;
  std::vector<std::string> servers{"t0", "t1", "t2"};
  auto before = random_fault_plan(old_kinds, 9, 5 * 86400.0, servers, 100, 2);
  auto after = random_fault_plan(all_kinds, 9, 5 * 86400.0, servers, 100, 2);
  std::vector<fault_event> kept;
  for (auto& e : after)
    if (e.what == fault_event::kind::server_crash || e.what == fault_event::kind::worker_crash ||
        e.what == fault_event::kind::surge)
      kept.push_back(e);
  REQUIRE(kept.size() == before.size());
  REQUIRE(after.size() > before.size());
  for (size_t i = 0; i < kept.size(); ++i) {
    CHECK(kept[i].at == before[i].at);
    CHECK(kept[i].server == before[i].server);
    CHECK(kept[i].job == before[i].job);
    CHECK(kept[i].servers == before[i].servers);
  }
}
