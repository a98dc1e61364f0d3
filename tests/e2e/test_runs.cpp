// Whole runs: the embedded default completes, runs are reproducible from the seed, and the
// invariant checker stays silent under loaning and elasticity.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "tests/e2e/run_helpers.hpp"

using namespace aryl;

namespace {
config small_default(const std::string& name) {
  config c;
  c.synthetic_jobs = 300;
  c.check_invariants = true;
  c.out_dir = test::temp_dir(name);
  return c;
}
} // namespace

TEST_CASE("the default synthetic run under aryl completes every job with no invariant violated") {
  auto c = small_default("default");
  auto out = test::run(c);
  REQUIRE_MESSAGE(out.ok, out.error);
  CHECK(out.summary.jobs_completed == out.summary.jobs_submitted);
  CHECK(out.summary.jobs_completed == 300);
  MESSAGE("mean JCT " << out.summary.mean_jct_s << " queue " << out.summary.mean_queue_s << " loaned h "
                      << out.summary.loaned_server_hours << " scale-outs " << out.summary.scale_outs
                      << " preemptions " << out.summary.preemptions);
}

TEST_CASE("summary.json's preemptions are the sum of jobs.csv's preemptions column, failed jobs' included") {
  // A contended cluster under srtf (it preempts for shorter jobs) whose workers and servers
  // crash: jobs are stopped, and some fail after their restarts.
  auto c = small_default("preemptions");
  c.policy = "srtf";
  c.training.servers = 4;
  c.random_faults.server_crash_per_day = 4;
  c.random_faults.worker_crash_per_day = 200;
  c.random_faults.mean_down_s = 1800;
  auto out = test::run(c);
  REQUIRE_MESSAGE(out.ok, out.error);
  uint64_t column = 0;
  std::istringstream rows(test::slurp(c.out_dir + "/jobs.csv"));
  std::string row;
  std::getline(rows, row);
  REQUIRE(row.find(",preemptions,") != std::string::npos);
  while (std::getline(rows, row)) {
    std::istringstream fields(row);
    std::string f;
    for (int i = 0; i < 12; ++i) std::getline(fields, f, ',');  // job names here hold no comma
    column += std::stoull(f);
  }
  CHECK(column > 0);
  CHECK(out.summary.jobs_failed > 0);
  CHECK(out.summary.preemptions == column);
}

TEST_CASE("the same seed gives byte-identical events.log and jobs.csv") {
  auto a = small_default("seed-a");
  auto b = small_default("seed-b");
  REQUIRE(test::run(a).ok);
  REQUIRE(test::run(b).ok);
  auto ea = test::slurp(a.out_dir + "/events.log");
  CHECK(ea.size() > 1000);
  CHECK(ea == test::slurp(b.out_dir + "/events.log"));
  CHECK(test::slurp(a.out_dir + "/jobs.csv") == test::slurp(b.out_dir + "/jobs.csv"));
}

TEST_CASE("a different seed gives a different run") {
  auto a = small_default("seed-c");
  auto b = small_default("seed-d");
  b.seed = 2;
  REQUIRE(test::run(a).ok);
  REQUIRE(test::run(b).ok);
  CHECK(test::slurp(a.out_dir + "/events.log") != test::slurp(b.out_dir + "/events.log"));
}

TEST_CASE("every policy completes the default workload with no invariant violated") {
  for (auto* policy : {"fifo", "sjf", "srtf", "las", "baseline", "loan-only", "elastic-only", "aryl"}) {
    auto c = small_default(std::string("policy-") + policy);
    c.policy = policy;
    auto out = test::run(c);
    CHECK_MESSAGE(out.ok, policy << ": " << out.error);
    CHECK(out.summary.jobs_completed == 300);
  }
}

TEST_CASE("a job that waits for servers that are never lent stops the run with a state dump, not a hang") {
  // 32-GPU elastic job (min 16) on 8 training GPUs; the inference cluster always needs all
  // of its servers, so nothing is ever lent and the job can never start.
  auto trace = test::temp_dir("stall") + ".csv";
  std::ofstream(trace) << "job_id,submit_s,gpus,duration_s,gpu_type,elastic\nbig,0,32,100,,1\n";
  auto demand = test::temp_dir("stall-demand") + ".csv";
  std::ofstream(demand) << "t_s,servers_needed\n0,4\n";
  config c;
  c.trace_file = trace;
  c.training.servers = 1;
  c.inference.servers = 4;
  c.inference_trace = demand;
  c.inference_headroom = 0;
  c.stall_limit_s = 86400;
  c.out_dir = test::temp_dir("stall-out");
  auto out = test::run(c);
  CHECK_FALSE(out.ok);
  CHECK(out.error.find("stalled") != std::string::npos);
  CHECK(out.error.find("queued job-0 gpus=32") != std::string::npos);
}

TEST_CASE("with a scale period, elastic jobs grow or move only at scale rounds that far apart, and every job completes") {
  auto c = small_default("scale-period");
  c.scheduler.scale_period_s = 600;
  auto out = test::run(c);
  REQUIRE_MESSAGE(out.ok, out.error);
  CHECK(out.summary.jobs_completed == 300);
  // Instants where a round grew, moved or rebalanced a running job (scale-ins also happen
  // between scale rounds, for queued jobs, and for reclaims).
  std::istringstream log(test::slurp(c.out_dir + "/events.log"));
  std::vector<double> instants;
  int starts_between = 0;
  for (std::string line; std::getline(log, line);) {
    std::istringstream fields(line);
    double t = 0;
    std::string who, what;
    fields >> t >> who >> what;
    if (who != "scheduler") continue;
    bool by_round = what == "rescale" && line.find("| scale in") == std::string::npos;
    if (by_round && (instants.empty() || instants.back() != t)) instants.push_back(t);
    if (what == "start" && line.find("sizes wait for the scale round") != std::string::npos) ++starts_between;
  }
  REQUIRE(instants.size() > 10);
  for (size_t i = 1; i < instants.size(); ++i) CHECK(instants[i] - instants[i - 1] >= 600 - 1e-6);
  CHECK(starts_between > 0);  // rounds between scale rounds did start jobs
}

TEST_CASE("with scale rounds on capacity events, rounds where no size could change only start jobs, and every job completes") {
  // Counts the starts made by rounds that do not re-plan sizes.
  auto local_starts = [](const config& c) {
    std::istringstream log(test::slurp(c.out_dir + "/events.log"));
    int n = 0;
    for (std::string line; std::getline(log, line);)
      n += line.find(" scheduler start ") != std::string::npos &&
           line.find("sizes wait for the scale round") != std::string::npos;
    return n;
  };
  auto capacity = small_default("scale-rounds-capacity");
  capacity.scheduler.rounds = scale_rounds::capacity;
  auto every = small_default("scale-rounds-every");
  every.scheduler.rounds = scale_rounds::every;
  auto a = test::run(capacity), b = test::run(every);
  REQUIRE_MESSAGE(a.ok, a.error);
  REQUIRE_MESSAGE(b.ok, b.error);
  CHECK(a.summary.jobs_completed == 300);
  CHECK(b.summary.jobs_completed == 300);
  CHECK(local_starts(capacity) > 0);
  CHECK(local_starts(every) == 0);
  MESSAGE("mean JCT capacity " << a.summary.mean_jct_s << " every " << b.summary.mean_jct_s << "; local starts "
                               << local_starts(capacity));
}

TEST_CASE("at the request floor an elastic job waits for its request, and at the minimum floor it starts at its minimum") {
  // One 8-GPU server: a rigid 4-GPU job runs for 1000 s, and an elastic 8-GPU job (minimum 4)
  // arrives at 10 s. Its minimum fits at once; its request only when the rigid job ends.
  config c;
  c.trace_file = test::write_temp_file("floor.csv", "job_id,submit_s,gpus,duration_s,elastic,min_workers,max_workers\n"
                                                    "rigid,0,4,1000,0,4,4\nwide,10,8,500,1,4,8\n");
  c.training.servers = 1;
  c.inference.servers = 0;
  c.check_invariants = true;
  c.scheduler.floor = elastic_floor::request;
  c.out_dir = test::temp_dir("floor-request");
  auto at_request = test::run(c);
  REQUIRE_MESSAGE(at_request.ok, at_request.error);
  auto starts = test::lines_with(test::slurp(c.out_dir + "/events.log"), "scheduler start job-1 ");
  REQUIRE(starts.size() == 1);
  CHECK(std::stod(starts[0]) >= 1000);
  CHECK(starts[0].find(" workers=8 ") != std::string::npos);

  c.scheduler.floor = elastic_floor::min;
  c.out_dir = test::temp_dir("floor-min");
  auto at_min = test::run(c);
  REQUIRE_MESSAGE(at_min.ok, at_min.error);
  starts = test::lines_with(test::slurp(c.out_dir + "/events.log"), "scheduler start job-1 ");
  REQUIRE(starts.size() == 1);
  CHECK(std::stod(starts[0]) == doctest::Approx(10));
  CHECK(starts[0].find(" workers=4 ") != std::string::npos);
}
