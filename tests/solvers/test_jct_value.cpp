// JCT-reduction values for the scale-out knapsack.
#include <doctest/doctest.h>

#include <limits>
#include <random>
#include <stdexcept>

#include "solvers/jct_value.hpp"

using namespace aryl;

TEST_CASE("jct_value: value is remaining time saved minus the scaling overhead") {
  // Linear speed-up (eff = 1): 3,600 work units at the requested 4 workers take 3,600 s;
  // at 8 workers 1,800 s. Adding 4 workers saves 1,800 s, minus 20 s overhead = 1,780 s.
  throughput_model linear{0.0, {}, nullptr, 1.0};
  scale_out_job j{3600, 4, 4, 8, 1.0, 20};
  CHECK(remaining_time_s(linear, 3600, 4, 4, 1, 1.0) == doctest::Approx(3600));
  CHECK(scale_out_value(linear, j, 4) == doctest::Approx(1780));
  // On a half-speed GPU type every time doubles: saving 3,600 s, value 3,580 s.
  j.type_speed = 0.5;
  CHECK(scale_out_value(linear, j, 4) == doctest::Approx(3580));
}

TEST_CASE("jct_value: each size is valued at the rate of the servers it spans") {
  // Linear speed-up, cross-server efficiency 0.5; the job's 4 workers fill one server, 2 more
  // fit beside them (span 1 up to 6 workers), the 7th and 8th need a second server.
  // 6 workers: rate 1.5, 2,400 s, value 1,200 s. 8 workers on two servers: rate 8/4 * 0.5
  // = 1, 3,600 s: worth nothing, though 8 workers on one server would save 1,800 s.
  throughput_model m{0.0, {}, nullptr, 0.5};
  scale_out_job j{3600, 4, 4, 8, 1.0, 0, {1, 1, 1, 2}};
  CHECK(scale_out_value(m, j, 2) == doctest::Approx(1200));
  CHECK(scale_out_value(m, j, 4) == doctest::Approx(0));
  auto c = scale_out_class(m, j);
  REQUIRE(c.items.size() == 4);
  CHECK(c.items[3].value == doctest::Approx(0));
  j.span.clear();
  CHECK(scale_out_value(m, j, 4) == doctest::Approx(1800));
}

TEST_CASE("jct_value: no workers means no progress") {
  throughput_model m;
  CHECK(remaining_time_s(m, 100, 4, 0, 1, 1.0) == std::numeric_limits<double>::infinity());
}

TEST_CASE("jct_value: a job close to done gets a negative value") {
  // 10 s left at 4 workers: doubling saves ~5 s, less than the 20 s overhead.
  throughput_model linear{0.0, {}, nullptr, 1.0};
  scale_out_job j{10, 4, 4, 8, 1.0, 20};
  CHECK(scale_out_value(linear, j, 4) == doctest::Approx(-15));
}

TEST_CASE("jct_value: the class has one item per extra worker up to max_workers") {
  // cur 3, max 7: items add 1..4 workers, weight k, value = scale_out_value(k).
  throughput_model m;
  scale_out_job j{5000, 4, 3, 7, 1.0, 20};
  auto c = scale_out_class(m, j, 2);
  CHECK(c.gpu_type == 2);
  REQUIRE(c.items.size() == 4);
  for (int k = 1; k <= 4; ++k) {
    CHECK(c.items[k - 1].weight == k);
    CHECK(c.items[k - 1].value == scale_out_value(m, j, k));
  }
  j.current_workers = 7;
  CHECK(scale_out_class(m, j).items.empty());
  j.current_workers = 9;  // above max (e.g. max lowered): nothing to add
  CHECK(scale_out_class(m, j).items.empty());
}

TEST_CASE("jct_value: without overhead, power-law reductions are concave in k") {
  // T(w) is proportional to w^-(1+e) with -1 < e <= 0: convex and decreasing, so the saving
  // T(cur) - T(cur+k) is concave in k; the knapsack's fast path then applies.
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 10000; ++trial) {
    throughput_model m{std::uniform_real_distribution<double>(-0.5, 0.0)(rng), {}, nullptr, 1.0};
    scale_out_job j;
    j.requested = std::uniform_int_distribution<int>(1, 16)(rng);
    j.current_workers = std::uniform_int_distribution<int>(1, 16)(rng);
    j.max_workers = j.current_workers + 16;
    j.remaining_work = std::uniform_real_distribution<double>(1, 1e5)(rng);
    auto c = scale_out_class(m, j);
    double prev_gain = std::numeric_limits<double>::infinity(), prev = 0;
    for (const auto& it : c.items) {
      double gain = it.value - prev;
      CHECK(gain > 0);
      CHECK(gain <= prev_gain * (1 + 1e-12));
      prev_gain = gain;
      prev = it.value;
    }
  }
}

TEST_CASE("jct_value: invalid jobs are rejected") {
  throughput_model m;
  CHECK_THROWS_AS(scale_out_value(m, {100, 4, 0, 8, 1.0, 0}, 1), std::invalid_argument);
  CHECK_THROWS_AS(scale_out_value(m, {100, 4, 4, 8, 1.0, 0}, 0), std::invalid_argument);
  CHECK_THROWS_AS(scale_out_class(m, {100, 4, 4, 8, 0.0, 0}), std::invalid_argument);
}
