// Work efficiency: GPU-seconds a job held over the GPU-seconds its work needs at its requested
// size on one server of its home type (gpus x duration_s / that type's speed). Each rule on a
// hand-made trace with no restart, scaling or checkpoint cost, so the expected ratio follows
// from the throughput model alone.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <sstream>

#include "tests/e2e/run_helpers.hpp"

using namespace aryl;

namespace {

using row = std::map<std::string, std::string>;

/// jobs.csv rows by job name, each as column -> text.
std::map<std::string, row> jobs_by_name(const std::string& path) {
  std::istringstream in(test::slurp(path));
  auto split = [](const std::string& l) {
    std::vector<std::string> f;
    std::stringstream ss(l);
    for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
    return f;
  };
  std::string line;
  std::getline(in, line);
  auto header = split(line);
  std::map<std::string, row> out;
  while (std::getline(in, line)) {
    auto f = split(line);
    REQUIRE(f.size() == header.size());
    row r;
    for (size_t i = 0; i < f.size(); ++i) r[header[i]] = f[i];
    out[r.at("name")] = r;
  }
  return out;
}

double num(const row& r, const std::string& key) { return std::stod(r.at(key)); }

/// V100 training servers of 8 GPUs, no costs to change an allocation.
config free_changes(const std::string& name, const std::string& trace, int training, int inference) {
  config c;
  c.trace_file = test::write_temp_file("eff-" + name + ".csv", trace);
  c.check_invariants = true;
  c.training.servers = training;
  c.inference.servers = inference;
  c.restart_overhead_s = 0;
  c.scale_overhead_s = 0;
  c.checkpoint_s = 0;
  c.checkpoint_per_gpu_s = 0;
  c.checkpoint_jitter = 0;
  c.out_dir = test::temp_dir("eff-" + name + "-out");
  return c;
}

} // namespace

TEST_CASE("a rigid job alone on one server holds exactly the GPU-seconds its work needs: work efficiency 1") {
  // 1 x 8 V100: a (4 GPUs, 100 s) runs on t0:4 from 0 to 100. Held 400 GPU-s, needed 4 x 100.
  auto c = free_changes("rigid", "job_id,submit_s,gpus,duration_s,gpu_type,elastic\na,0,4,100,,0\n", 1, 0);
  c.policy = "fifo";
  auto out = test::run(c);
  REQUIRE_MESSAGE(out.ok, out.error);
  auto a = jobs_by_name(c.out_dir + "/jobs.csv").at("a");
  CHECK(num(a, "needed_gpu_s") == doctest::Approx(400));
  CHECK(num(a, "gpu_seconds") == doctest::Approx(400));
  CHECK(num(a, "work_efficiency") == doctest::Approx(1).epsilon(1e-6));
  CHECK(out.summary.work_efficiency == doctest::Approx(1).epsilon(1e-6));
  CHECK(out.summary.work_efficiency_speed_weighted == doctest::Approx(1).epsilon(1e-6));
  CHECK(out.summary.work_efficiency_training == doctest::Approx(1).epsilon(1e-6));
  CHECK(out.summary.work_efficiency_loaned == 0);  // no work on loaned servers
  CHECK(out.summary.needed_gpu_hours == doctest::Approx(400.0 / 3600));
}

TEST_CASE("an elastic job scaled out across two servers holds (W/g)^0.05 / cross_server_eff of what its work needs") {
  // 2 x 8 V100, aryl: e asks for 4 GPUs and may take 16. Alone, it runs at 16 workers over t0:8
  // and t1:8 its whole time: rate 4 x (16/4)^-0.05 x 0.66 of its requested one, so it holds
  // 16 / that = (16/4)^0.05 / 0.66 = 1.624 times the 4 x 100 GPU-seconds its work needs.
  auto c = free_changes("spread", "job_id,submit_s,gpus,duration_s,gpu_type,elastic,min_workers,max_workers\n"
                                  "e,0,4,100,,1,4,16\n", 2, 0);
  c.policy = "aryl";
  c.scheduler = myopic_scaling(c.scheduler);  // extras on every free GPU, however slow they make each
  auto out = test::run(c);
  REQUIRE_MESSAGE(out.ok, out.error);
  auto log = test::slurp(c.out_dir + "/events.log");
  REQUIRE(test::lines_with(log, "scheduler start job-0 workers=16 V100 [t0:8 t1:8]").size() == 1);
  CHECK(test::lines_with(log, "scheduler rescale").empty());
  const double factor = std::pow(16.0 / 4, -c.eff_exponent) / c.cross_server_eff;
  auto e = jobs_by_name(c.out_dir + "/jobs.csv").at("e");
  CHECK(num(e, "needed_gpu_s") == doctest::Approx(400));
  CHECK(num(e, "work_efficiency") == doctest::Approx(factor).epsilon(1e-4));
  CHECK(out.summary.work_efficiency == doctest::Approx(factor).epsilon(1e-4));
  CHECK(out.summary.work_efficiency_speed_weighted == doctest::Approx(factor).epsilon(1e-4));
  CHECK(out.summary.work_efficiency_training == doctest::Approx(factor).epsilon(1e-4));
  CHECK(out.summary.work_efficiency > 1.5);
}

TEST_CASE("a job on loaned T4 GPUs counts 0.35 of a V100 second per GPU-second when speed-weighted, in the loaned pool") {
  // 1 x 8 V100 + 1 x 8 T4 lent (demand 0). a (8 GPUs, 1000 s) holds t0 from 0; b (elastic, 4
  // GPUs fixed, 100 s) comes at 10 and runs on i0:4 at 0.35 of its V100 speed: 100 / 0.35 s.
  // b: held 4 x 100 / 0.35, weighted x 0.35 = 400 = needed. a: 8000 held, 8000 needed.
  auto c = free_changes("loaned", "job_id,submit_s,gpus,duration_s,gpu_type,elastic,min_workers,max_workers\n"
                                  "a,0,8,1000,,0,,\nb,10,4,100,,1,4,4\n", 1, 1);
  c.policy = "aryl";
  c.scheduler.free_gpus_first = true;  // b goes on the free T4s, not on a's V100s by a stop
  c.inference_trace = test::write_temp_file("eff-loaned-demand.csv", "t_s,servers_needed\n0,0\n");
  c.inference_interval_s = 30;
  c.inference_headroom = 0;
  auto out = test::run(c);
  REQUIRE_MESSAGE(out.ok, out.error);
  auto log = test::slurp(c.out_dir + "/events.log");
  REQUIRE(test::lines_with(log, "scheduler start job-1 workers=4 T4").size() == 1);
  const double t4 = c.gpu_speed.at("T4");
  auto jobs = jobs_by_name(c.out_dir + "/jobs.csv");
  auto& b = jobs.at("b");
  CHECK(num(b, "needed_gpu_s") == doctest::Approx(400));
  CHECK(num(b, "on_loaned_s") == doctest::Approx(100 / t4).epsilon(1e-6));
  CHECK(num(b, "work_efficiency") == doctest::Approx(1 / t4).epsilon(1e-6));
  CHECK(num(jobs.at("a"), "work_efficiency") == doctest::Approx(1).epsilon(1e-6));
  // Raw counts b's slow GPU-seconds in full, speed-weighted at their worth.
  CHECK(out.summary.work_efficiency == doctest::Approx((8000 + 400 / t4) / 8400).epsilon(1e-6));
  CHECK(out.summary.work_efficiency_speed_weighted == doctest::Approx(1).epsilon(1e-6));
  CHECK(out.summary.work_efficiency > out.summary.work_efficiency_speed_weighted);
  CHECK(out.summary.work_efficiency_training == doctest::Approx(1).epsilon(1e-6));
  CHECK(out.summary.work_efficiency_loaned == doctest::Approx(1 / t4).epsilon(1e-6));
  CHECK(out.summary.needed_gpu_hours == doctest::Approx(8400.0 / 3600));
}
