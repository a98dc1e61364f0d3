// One code path, two clocks: the same scenario run on the wall clock (compressed time) makes
// the same sequence of allocations per job as in simulated time.
#include <doctest/doctest.h>

#include <map>
#include <sstream>

#include "tests/e2e/run_helpers.hpp"

using namespace aryl;

namespace {

/// job -> its decisions in order ("start workers=8 V100 [t0:8]", ...), times left out.
std::map<std::string, std::vector<std::string>> allocations_per_job(const std::string& events) {
  std::map<std::string, std::vector<std::string>> out;
  std::istringstream in(events);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string t, actor, event, job;
    f >> t >> actor >> event >> job;
    if (event != "start" && event != "preempt" && event != "rescale" && event != "finish") continue;
    std::string rest;
    std::getline(f, rest);
    out[job].push_back(event + rest.substr(0, rest.find(" |")));
  }
  return out;
}

config live_scenario(const std::string& mode, const std::string& policy) {
  config c;
  c.trace_file = "tests/e2e/data/live.csv";
  c.training.servers = 2;
  c.inference.servers = 0;
  c.policy = policy;
  c.mode = mode;
  // 20 virtual seconds per real second: decisions are at least 2 virtual seconds (100 ms)
  // apart, far more than scheduling latency on a loaded machine; the scenario takes ~10 s.
  c.speedup = 20;
  c.restart_overhead_s = 0;
  c.out_dir = test::temp_dir("live-" + mode + "-" + policy);
  return c;
}

void check_same_allocations(const std::string& policy) {
  auto sim_cfg = live_scenario("simulated", policy);
  auto live_cfg = live_scenario("wallclock", policy);
  auto sim = test::run(sim_cfg);
  REQUIRE_MESSAGE(sim.ok, sim.error);
  auto live = test::run(live_cfg);
  REQUIRE_MESSAGE(live.ok, live.error);
  CHECK(live.summary.jobs_completed == 7);
  auto a = allocations_per_job(test::slurp(sim_cfg.out_dir + "/events.log"));
  auto b = allocations_per_job(test::slurp(live_cfg.out_dir + "/events.log"));
  CHECK(a.size() == 7);
  for (auto& [job, seq] : a) CHECK_MESSAGE(seq == b[job], job);
  // Wall-clock JCTs drift by scheduling latency only.
  CHECK(live.summary.mean_jct_s == doctest::Approx(sim.summary.mean_jct_s).epsilon(0.05));
  CHECK(live.summary.scale_ins + live.summary.scale_outs == sim.summary.scale_ins + sim.summary.scale_outs);
  MESSAGE(policy << ": rescales (scale-ins + scale-outs) " << live.summary.scale_ins + live.summary.scale_outs
                 << " on the wall clock, " << sim.summary.scale_ins + sim.summary.scale_outs << " simulated; preemptions "
                 << live.summary.preemptions << " / " << sim.summary.preemptions);
}

} // namespace

TEST_CASE("fifo on the wall clock makes the same allocations per job as in simulated time") {
  check_same_allocations("fifo");
}

TEST_CASE("srtf with preemptions on the wall clock makes the same allocations per job as in simulated time") {
  check_same_allocations("srtf");
}

TEST_CASE("aryl with elastic scaling and preemption for queued jobs on the wall clock makes the same allocations per job as in simulated time") {
  check_same_allocations("aryl");
}
