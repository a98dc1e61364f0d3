// Inputs that once crashed, hung, stalled or gave a wrong answer with exit 0: each is now a
// one-line error naming the key, field or file (exit 2), or a correct run.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "tests/runtime/cli_support.hpp"

using namespace aryl::test;

namespace {

/// A run on a one-off trace, without an inference cluster unless `extra` adds one; its
/// outputs go to /tmp/aryl-cli-out-NAME (tests run in parallel).
result run_trace(const std::string& name, const std::string& csv, const std::string& extra = "") {
  auto path = write_temp(name, csv);
  return run("simulate --trace " + path + " --set cluster.inference.servers=0 " + extra +
             " --quiet --out /tmp/aryl-cli-out-" + name);
}

} // namespace

TEST_CASE("a YAML alias that refers to its own mapping is an error naming the file, not a crash") {
  auto path = write_temp("alias.yaml", "cluster: &x\n  training: *x\n");
  check_one_line_error(run("simulate --config " + path + quiet), path + ":2:");
}

TEST_CASE("a YAML complex key is an error naming the file and line") {
  auto path = write_temp("complex.yaml", "? [a, b]\n: 1\n");
  check_one_line_error(run("simulate --config " + path + quiet), path + ":1: a key is not a plain name");
}

TEST_CASE("a directory given as the config file is an error naming it") {
  check_one_line_error(run("simulate --config /tmp" + quiet), "/tmp: is a directory");
}

TEST_CASE("a directory given as the trace is an error naming it") {
  check_one_line_error(run("simulate --trace /tmp" + quiet), "/tmp: cannot open");
}

TEST_CASE("a GPU type without a speed is an error naming the key") {
  check_one_line_error(run("simulate --set cluster.training.gpu_type=H100" + quiet),
                       "cluster.training.gpu_type 'H100' has no gpu_speed.H100 entry");
}

TEST_CASE("nan and inf are refused as config values") {
  check_one_line_error(run("simulate --set model.eff_exponent=nan" + quiet), "model.eff_exponent: 'nan' is not a finite");
  check_one_line_error(run("simulate --set jobs.scale_overhead_s=inf" + quiet), "jobs.scale_overhead_s: 'inf' is not a finite");
  check_one_line_error(run("simulate --mode wallclock --speedup inf" + quiet), "run.speedup: 'inf' is not a finite");
}

TEST_CASE("numbers beyond what the clock or the int types hold are refused, not wrapped") {
  check_one_line_error(run("simulate --servers 4294967297" + quiet), "4294967297 is outside [0, 100000]");
  check_one_line_error(run("simulate --set inference.interval_s=9223372036854775807" + quiet),
                       "inference.interval_s: 9223372036854775807 is outside [1, 31536000]");
  check_one_line_error(run("simulate --set inference.interval_s=9223372036854775808" + quiet),
                       "inference.interval_s: '9223372036854775808' is out of range");
  check_one_line_error(run("simulate --set inference.headroom=1e300" + quiet), "inference.headroom: 1e+300 is outside");
  check_one_line_error(run("simulate --set gpu_speed.V100=1e-300" + quiet), "gpu_speed.V100: 1e-300 is outside");
}

TEST_CASE("a job that would outlast the simulation horizon is refused, naming the job") {
  // 1e9 s at 1e-3 speed: 1e12 s, past the horizon (without the check: JCT 0 from an overflow).
  check_one_line_error(run_trace("horizon.csv", "job_id,submit_s,gpus,duration_s\nslow,0,1,1000000000\n",
                                 "--set gpu_speed.V100=0.001"),
                       "job 0 (slow) would run");
}

TEST_CASE("an inelastic job asking for the inference GPU type is refused up front, not stalled") {
  auto path = write_temp("t4.csv", "job_id,submit_s,gpus,duration_s,gpu_type,elastic\na,0,2,100,T4,0\n");
  check_one_line_error(run("simulate --trace " + path + quiet), "job 0 (a) needs 2 GPUs of type T4; the cluster it may use has 0");
}

TEST_CASE("exact reclaim on an inference cluster too large for it is refused up front") {
  check_one_line_error(run("simulate --set scheduler.reclaim=exact --set cluster.inference.servers=32" + quiet),
                       "scheduler.reclaim=exact takes at most 20 inference servers");
}

TEST_CASE("a job longer than the stall limit runs to completion") {
  // 53 days, as the longest Philly jobs.
  auto r = run_trace("long.csv", "job_id,submit_s,gpus,duration_s\nlong,0,1,4579200\n");
  CHECK_MESSAGE(r.code == 0, r.output);
  CHECK(read_file("/tmp/aryl-cli-out-long.csv/jobs.csv").find(",long,") != std::string::npos);
}

TEST_CASE("a 40-day gap between submissions is not a stall") {
  auto r = run_trace("gap.csv", "job_id,submit_s,gpus,duration_s\na,0,1,100\nb,3456000,1,100\n");
  CHECK_MESSAGE(r.code == 0, r.output);
}

TEST_CASE("a max_workers far beyond the cluster runs, capped by the free GPUs") {
  auto r = run_trace("maxw.csv", "job_id,submit_s,gpus,duration_s,elastic,min_workers,max_workers\na,0,2,100,1,1,1000000\n",
                     "--servers 2 --set scheduler.min_extra_efficiency=0");
  CHECK_MESSAGE(r.code == 0, r.output);
  // Alone on 2 x 8 GPUs (spanning both allowed) it scales out to all 16.
  CHECK(read_file("/tmp/aryl-cli-out-maxw.csv/events.log").find("job-0 workers=16") != std::string::npos);
}

TEST_CASE("a JSON number beyond double is an input error, not an internal one") {
  auto path = write_temp("big.json", R"({"capacity": 4, "classes": [{"id": "a", "items": [{"weight": 1, "value": 1e400}]}]})");
  auto r = run("solve mckp --in " + path);
  CHECK(r.code == 2);
  CHECK_MESSAGE(r.output.find("input is not valid JSON") != std::string::npos, r.output);
}

TEST_CASE("a knapsack too large for the DP is refused, not allocated") {
  auto path = write_temp("huge.json", R"({"capacity": 10000000, "classes": [
      {"id": "a", "items": [{"weight": 9000000, "value": 1}]}, {"id": "b", "items": [{"weight": 9000000, "value": 1}]},
      {"id": "c", "items": [{"weight": 9000000, "value": 1}]}]})");
  auto r = run("solve mckp --in " + path);
  CHECK(r.code == 2);
  CHECK_MESSAGE(r.output.find("DP cells") != std::string::npos, r.output);
}

TEST_CASE("a failed run leaves only its partial outputs, marked, and no summary") {
  namespace fs = std::filesystem;
  auto out = std::string("/tmp/aryl-cli-failed");
  fs::remove_all(out);
  REQUIRE(run("simulate --set synthetic.jobs=20 --quiet --out " + out).code == 0);
  REQUIRE(fs::exists(out + "/summary.json"));
  // An elastic job that needs loaned servers while inference demand never falls: stalled.
  auto trace = write_temp("needs-loan.csv", "job_id,submit_s,gpus,duration_s,elastic,min_workers,max_workers\n"
                                            "a,0,12,100,1,12,12\n");
  auto demand = write_temp("full-demand.csv", "t_s,servers_needed\n0,16\n");
  auto r = run("simulate --servers 1 --trace " + trace + " --set inference.trace=" + demand +
               " --set run.stall_limit_s=86400 --quiet --out " + out);
  CHECK(r.code == 3);
  CHECK_MESSAGE(r.output.find("stalled") != std::string::npos, r.output);
  CHECK_MESSAGE(r.output.find(out + "/*.partial") != std::string::npos, r.output);
  CHECK_FALSE(fs::exists(out + "/summary.json"));
  CHECK_FALSE(fs::exists(out + "/events.log"));
  CHECK(fs::exists(out + "/events.log.partial"));
}

TEST_CASE("a write error is reported naming the file, and the outputs are not committed") {
  namespace fs = std::filesystem;
  auto out = std::string("/tmp/aryl-cli-full");
  fs::remove_all(out);
  // Files may not grow past 8 KiB; the signal that would kill the writer is ignored, so the
  // write fails with EFBIG as it would on a full disk.
  auto r = run("simulate --set synthetic.jobs=200 --quiet --out " + out, "trap '' XFSZ; ulimit -f 8; ");
  CHECK(r.code == 2);
  CHECK_MESSAGE(r.output.find("write failed") != std::string::npos, r.output);
  CHECK_FALSE(fs::exists(out + "/summary.json"));
}

TEST_CASE("wall-clock mode warns when the machine cannot keep up with the speedup") {
  auto trace = std::string(ARYL_SOURCE_DIR) + "/tests/e2e/data/small.csv";
  // At 1e6x one real microsecond is a simulated second: timers cannot fire within 1 ms.
  auto fast = run("simulate --trace " + trace + " --mode wallclock --speedup 1000000 --set run.max_lag_s=0.001" + quiet);
  CHECK_MESSAGE(fast.code == 0, fast.output);
  CHECK_MESSAGE(fast.output.find("warning: the wall clock fell behind") != std::string::npos, fast.output);
  // At 100x a timer would have to be 0.6 real seconds late to pass the default 60 s.
  auto slow = run("simulate --trace " + trace + " --mode wallclock --speedup 100 --set cluster.inference.servers=0" + quiet);
  CHECK_MESSAGE(slow.code == 0, slow.output);
  CHECK_MESSAGE(slow.output.find("warning") == std::string::npos, slow.output);
}

TEST_CASE("a job with a class under a policy that does not preempt for classes is refused naming the policy") {
  const std::string csv = "job_id,submit_s,gpus,duration_s,priority\na,0,1,100,0\nurgent,10,1,100,2\n";
  for (const char* policy : {"srtf", "las", "fifo", "baseline"}) {
    CAPTURE(policy);
    check_one_line_error(run_trace("class.csv", csv, std::string("--policy ") + policy),
                         std::string("job 1 (urgent) has priority 2, but policy ") + policy +
                             " does not preempt lower classes for a job's class (policies that do: ");
  }
  // aryl does: the same trace runs.
  auto r = run_trace("class-aryl.csv", csv, "--policy aryl");
  CHECK_MESSAGE(r.code == 0, r.output);
}

TEST_CASE("at the request floor an elastic job whose request exceeds the cluster runs at the most the cluster holds, and one whose minimum exceeds it is refused") {
  // b (4 GPUs) arrives while wide runs: at a floor of 8 it waits for wide's end; at wide's
  // minimum of 4 it would take 4 of wide's workers.
  const std::string csv = "job_id,submit_s,gpus,duration_s,elastic,min_workers,max_workers\n"
                          "wide,0,16,100,1,4,16\nb,10,4,10,0,,\n";
  auto r = run_trace("floor.csv", csv, "--servers 1 --gpus-per-server 8 --set scheduler.elastic_floor=request");
  REQUIRE_MESSAGE(r.code == 0, r.output);
  auto log = read_file("/tmp/aryl-cli-out-floor.csv/events.log");
  CHECK(log.find("start job-0 workers=8 ") != std::string::npos);
  REQUIRE(log.find("start job-1") != std::string::npos);
  CHECK(log.find("finish job-0") < log.find("start job-1"));
  auto at_min = run_trace("floor-min.csv", csv, "--servers 1 --gpus-per-server 8 --set scheduler.elastic_floor=min");
  REQUIRE_MESSAGE(at_min.code == 0, at_min.output);
  auto min_log = read_file("/tmp/aryl-cli-out-floor-min.csv/events.log");
  CHECK(min_log.find("start job-1") < min_log.find("finish job-0"));
  check_one_line_error(run_trace("floor-over.csv", "job_id,submit_s,gpus,duration_s,elastic,min_workers,max_workers\n"
                                                  "wide,0,16,100,1,12,16\n",
                                 "--servers 1 --gpus-per-server 8 --set scheduler.elastic_floor=request"),
                       "job 0 (wide) needs 12 GPUs; the cluster it may use has 8");
}
