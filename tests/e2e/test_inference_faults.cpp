// Inference servers lost and back (a fault plan's server_crash or disconnect on i0..): lent ones
// cost their jobs' work as training servers do; the inference-load actor stops counting on a
// lost one, asks for a lent server back if it must, and lends the server again once it is back.
#include <doctest/doctest.h>

#include <sstream>

#include "runtime/inputs/fault_plan.hpp"
#include "tests/e2e/run_helpers.hpp"

using namespace aryl;

namespace {

const std::string tmp = "infer-faults-";  // temporary files of these tests

std::vector<double> times_of(const std::string& log, const std::string& needle) {
  std::vector<double> out;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);)
    if (line.find(needle) != std::string::npos) out.push_back(std::stod(line));
  return out;
}

/// small.csv on 2 x 8 V100 and `inference` x 8 T4 whose demand follows `demand` (servers
/// needed, no headroom), looked at every 30 s.
config run_with(const std::string& name, int inference, const std::string& demand, const std::string& plan) {
  config c;
  c.trace_file = "tests/e2e/data/small.csv";
  c.training.servers = 2;
  c.inference.servers = inference;
  c.inference_trace = test::write_temp_file(tmp + name + "-demand.csv", "t_s,servers_needed\n" + demand);
  c.inference_interval_s = 30;
  c.inference_headroom = 0;
  c.check_invariants = true;
  c.faults_file = test::write_temp_file(tmp + name + ".yaml", "faults:\n" + plan);
  c.out_dir = test::temp_dir("infer-faults-out-" + name);
  // Extras on every free GPU, and queued jobs on free lent GPUs first: lent servers get jobs to lose.
  c.scheduler = myopic_scaling(c.scheduler);
  c.scheduler.free_gpus_first = true;
  return c;
}

} // namespace

TEST_CASE("a lent inference server that crashes costs its jobs' work as a training server does, and is lent again once back") {
  auto c = run_with("lent", 1, "0,0\n", "  - {at: 40, server_crash: i0, down_for: 100}\n");
  auto out = test::run(c);
  REQUIRE_MESSAGE(out.ok, out.error);
  auto log = test::slurp(c.out_dir + "/events.log");
  auto lost = times_of(log, "scheduler lost server=i0 jobs=");
  REQUIRE(lost.size() == 1);
  CHECK(lost[0] > 40);
  CHECK(lost[0] <= 40 + c.missed_heartbeats * c.heartbeat_s);
  CHECK(times_of(log, "scheduler lost server=i0 jobs=0").empty());  // something ran there
  CHECK(times_of(log, "server i0 was lost").size() >= 1);
  CHECK(out.summary.lost_gpu_hours > 0);
  CHECK(times_of(log, "inference gone server_id=2 serving=0 loaned=0").size() == 1);
  auto back = times_of(log, "scheduler back server=i0");
  REQUIRE(back.size() == 1);
  CHECK(back[0] == doctest::Approx(140));
  CHECK(times_of(log, "inference rejoin server_id=2 serving=1").size() == 1);
  // Demand is still 0: the next look at it lends i0 again.
  auto loans = times_of(log, "inference loan servers=1");
  REQUIRE(loans.size() == 2);
  CHECK(loans[1] >= 140);
  CHECK(loans[1] <= 140 + c.inference_interval_s);
  CHECK(out.summary.jobs_completed == 8);
}

TEST_CASE("a lost serving inference server makes the inference-load actor take a lent one back") {
  // Demand 1 of 2: i0 serves, i1 is lent. i0 dies for good at 100, noticed by 130: i1 is
  // asked back at once, not at the next demand look.
  auto c = run_with("serving", 2, "0,1\n", "  - {at: 100, server_crash: i0}\n");
  auto out = test::run(c);
  REQUIRE_MESSAGE(out.ok, out.error);
  auto log = test::slurp(c.out_dir + "/events.log");
  auto lost = times_of(log, "scheduler lost server=i0 jobs=0");
  REQUIRE(lost.size() == 1);
  auto reclaims = times_of(log, "inference reclaim servers=1 need=1 serving=0");
  REQUIRE(reclaims.size() == 1);
  CHECK(reclaims[0] == doctest::Approx(lost[0]));
  CHECK(times_of(log, "scheduler return servers=1").size() == 1);
  CHECK(out.summary.jobs_completed == 8);
}

TEST_CASE("an inference server lost while it is being returned settles its share of the reclaim, and lending goes on") {
  // i0 is lent at 0 and asked back at 120; its jobs take 60 s to checkpoint, and it dies at 130,
  // while being returned. Without it counted as settled, the inference-load actor would wait
  // for it for ever and never lend again; demand falls to 0 at 300, and i0 is back at 400
  // while a long job (z) still runs.
  auto c = run_with("returning", 1, "0,0\n100,1\n300,0\n", "  - {at: 130, server_crash: i0, down_for: 270}\n");
  c.trace_file =
      test::write_temp_file(tmp + "returning.csv", test::slurp("tests/e2e/data/small.csv") + "z,50,1,3000\n");
  c.checkpoint_s = 60;
  c.checkpoint_per_gpu_s = 0;
  c.checkpoint_jitter = 0;
  auto out = test::run(c);
  REQUIRE_MESSAGE(out.ok, out.error);
  auto log = test::slurp(c.out_dir + "/events.log");
  auto reclaims = times_of(log, "inference reclaim servers=1");
  REQUIRE(reclaims.size() >= 1);
  CHECK(reclaims[0] == doctest::Approx(120));
  REQUIRE(times_of(log, "scheduler lost server=i0").size() == 1);
  CHECK(times_of(log, "scheduler return servers=0").size() == 1);
  // The demand repeats after its span (0 again from 400 on): lent again when back.
  auto loans = times_of(log, "inference loan servers=1");
  REQUIRE(loans.size() >= 2);
  CHECK(loans[1] == doctest::Approx(400));
  CHECK(out.summary.jobs_completed == 9);
}

TEST_CASE("random server faults strike inference servers only when asked, and leave the training servers' faults where they were") {
  random_fault_rates r;
  r.server_crash_per_day = 4;
  r.disconnect_per_day = 4;
  r.link_per_day = 4;
  std::vector<std::string> training{"t0", "t1", "t2"};
  auto all = training;
  all.insert(all.end(), {"i0", "i1"});
  auto before = random_fault_plan(r, 9, 5 * 86400.0, training, 100, 2);
  auto after = random_fault_plan(r, 9, 5 * 86400.0, all, 100, 2);
  std::vector<fault_event> on_training;
  for (auto& e : after)
    if (e.server[0] == 't') on_training.push_back(e);
  REQUIRE(on_training.size() == before.size());
  REQUIRE(after.size() > before.size());
  for (size_t i = 0; i < before.size(); ++i) {
    CHECK(on_training[i].at == before[i].at);
    CHECK(on_training[i].server == before[i].server);
    CHECK(on_training[i].what == before[i].what);
  }

  // A run with them: the same for the same seed, inference servers lost and back, every job
  // accounted for.
  config c;
  c.synthetic_jobs = 200;
  c.training.servers = 4;
  c.inference.servers = 4;
  c.check_invariants = true;
  c.random_faults.server_crash_per_day = 6;
  c.random_faults.disconnect_per_day = 6;
  c.random_faults.link_per_day = 6;
  c.random_faults.inference_servers = true;
  c.out_dir = test::temp_dir("infer-faults-out-random-a");
  auto a = test::run(c);
  REQUIRE_MESSAGE(a.ok, a.error);
  auto again = c;
  again.out_dir = test::temp_dir("infer-faults-out-random-b");
  REQUIRE(test::run(again).ok);
  auto log = test::slurp(c.out_dir + "/events.log");
  CHECK(times_of(log, "inference gone").size() > 2);
  CHECK(times_of(log, "inference rejoin").size() > 2);
  CHECK(log == test::slurp(again.out_dir + "/events.log"));
  CHECK(a.summary.jobs_completed + a.summary.jobs_failed == a.summary.jobs_submitted);
}
