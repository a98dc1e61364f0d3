// Synthetic training workload: determinism, offered load, Philly-like mix.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <vector>

#include "solvers/input_error.hpp"
#include "runtime/inputs/synthetic_workload.hpp"

using namespace aryl;

namespace {

bool same(const std::vector<job_spec>& a, const std::vector<job_spec>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].name != b[i].name || a[i].submit != b[i].submit || a[i].gpus != b[i].gpus ||
        a[i].duration_s != b[i].duration_s)
      return false;
  }
  return true;
}

} // namespace

TEST_CASE("synthetic workload: the same seed gives the same jobs, another seed different ones") {
  synthetic_options o;
  const auto a = generate_synthetic(o);
  const auto b = generate_synthetic(o);
  CHECK(same(a, b));
  o.seed = 2;
  CHECK_FALSE(same(a, generate_synthetic(o)));
}

TEST_CASE("synthetic workload: exactly `jobs` jobs, sorted by submit, indexed, inelastic, whole seconds") {
  const auto jobs = generate_synthetic({});
  REQUIRE(jobs.size() == 2000);
  CHECK(jobs.front().submit >= sim_time{});
  for (size_t i = 0; i < jobs.size(); ++i) {
    const job_spec& j = jobs[i];
    CHECK(j.index == i);
    if (i > 0) CHECK(jobs[i - 1].submit <= j.submit);
    CHECK(j.submit.us % 1'000'000 == 0);
    CHECK(j.duration_s >= 1);
    CHECK(j.duration_s <= 86400);
    CHECK(j.duration_s == static_cast<double>(static_cast<int64_t>(j.duration_s)));
    CHECK_FALSE(j.elastic);
    CHECK(j.min_workers == j.gpus);
    CHECK(j.max_workers == j.gpus);
    CHECK(j.predict_factor == 1.0);
  }
  synthetic_options none;
  none.jobs = 0;
  CHECK(generate_synthetic(none).empty());
}

TEST_CASE("synthetic workload: offered load is within 10% of the target for several seeds and loads") {
  for (const double load : {0.5, 0.8, 1.2}) {
    for (uint64_t seed = 1; seed <= 5; ++seed) {
      synthetic_options o;
      o.seed = seed;
      o.target_load = load;
      const auto jobs = generate_synthetic(o);
      CAPTURE(seed);
      CAPTURE(load);
      CHECK(offered_load(jobs, o.cluster_gpus) == doctest::Approx(load).epsilon(0.10));
    }
  }
}

TEST_CASE("synthetic workload: without a target load, arrivals span `days` and follow the Philly hour-of-day cycle") {
  synthetic_options o;
  o.jobs = 20000;
  o.days = 10;
  o.target_load = 0;
  const auto jobs = generate_synthetic(o);
  CHECK(jobs.back().submit < sim_time::from_us(10LL * 86400 * 1'000'000));
  CHECK(jobs.back().submit > sim_time::from_us(9LL * 86400 * 1'000'000));
  std::array<int, 24> per_hour{};
  for (const auto& j : jobs) ++per_hour[static_cast<size_t>(j.submit.us / 3'600'000'000LL % 24)];
  // Philly: 7,159 submissions at 07h against 2,185 at 14h.
  CHECK(per_hour[7] > 2 * per_hour[14]);
}

TEST_CASE("synthetic workload: job-size mix and durations are Philly-like") {
  synthetic_options o;
  o.jobs = 20000;
  o.cluster_gpus = 64;
  const auto jobs = generate_synthetic(o);
  int single = 0, eight = 0;
  std::vector<double> durations;
  for (const auto& j : jobs) {
    CHECK(j.gpus <= 32);  // never more than half the cluster
    CHECK((j.gpus == 1 || j.gpus == 2 || j.gpus == 4 || j.gpus == 8 || j.gpus == 12 || j.gpus == 16 ||
           j.gpus == 24 || j.gpus == 32));
    single += j.gpus == 1;
    eight += j.gpus == 8;
    durations.push_back(j.duration_s);
  }
  CHECK(single / 20000.0 == doctest::Approx(0.932).epsilon(0.02));  // Philly: 93.2% of jobs use 1 GPU
  CHECK(eight / 20000.0 == doctest::Approx(0.020).epsilon(0.25));   // Philly: 2.0%
  std::sort(durations.begin(), durations.end());
  CHECK(durations[10000] == doctest::Approx(1144).epsilon(0.15));   // Philly median 1,144 s
  CHECK(durations[2000] == doctest::Approx(61).epsilon(0.15));      // Philly p10 61 s
  CHECK(durations.back() == 86400);                                  // the cap is reached
}

TEST_CASE("synthetic workload: out-of-range options are input errors") {
  synthetic_options o;
  o.jobs = -1;
  CHECK_THROWS_AS(generate_synthetic(o), input_error);
  o = {};
  o.cluster_gpus = 0;
  CHECK_THROWS_AS(generate_synthetic(o), input_error);
  o = {};
  o.days = 0;
  CHECK_THROWS_AS(generate_synthetic(o), input_error);
  o = {};
  o.max_duration_s = 0.5;
  CHECK_THROWS_AS(generate_synthetic(o), input_error);
}

TEST_CASE("synthetic workload: scaled with the cluster, the arrival window and load stay the same") {
  // What scripts/bench_scale.sh relies on: 20x the jobs on 20x the GPUs is the same workload,
  // only larger, and the larger cluster admits the Philly sizes a small one excludes.
  synthetic_options small, large;
  small.jobs = 10'000;
  small.cluster_gpus = 128;
  large.jobs = 200'000;
  large.cluster_gpus = 2'560;
  const auto a = generate_synthetic(small);
  const auto b = generate_synthetic(large);
  REQUIRE(b.size() == 200'000);
  CHECK(b.back().submit.seconds() == doctest::Approx(a.back().submit.seconds()).epsilon(0.05));
  CHECK(offered_load(b, large.cluster_gpus) == doctest::Approx(large.target_load).epsilon(0.05));
  CHECK(std::any_of(b.begin(), b.end(), [](const job_spec& j) { return j.gpus == 128; }));
  CHECK(std::none_of(a.begin(), a.end(), [](const job_spec& j) { return j.gpus > 64; }));
}
