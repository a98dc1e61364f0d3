// Job attributes: elasticity and misprediction, seeded per job.
#include <doctest/doctest.h>

#include <stdexcept>
#include <vector>

#include "solvers/input_error.hpp"
#include "runtime/inputs/job_attributes.hpp"

using namespace aryl;

namespace {

std::vector<job_spec> jobs_of(size_t n, int gpus = 4) {
  std::vector<job_spec> jobs(n);
  for (size_t i = 0; i < n; ++i) {
    jobs[i].index = static_cast<uint32_t>(i);
    jobs[i].gpus = gpus;
    jobs[i].min_workers = jobs[i].max_workers = gpus;
  }
  return jobs;
}

} // namespace

TEST_CASE("job attributes: the elastic and mispredicted fractions are met within tolerance") {
  auto jobs = jobs_of(10000);
  job_attribute_options o;
  o.elastic_fraction = 0.3;
  o.mispredict_fraction = 0.6;
  assign_job_attributes(jobs, o);
  int elastic = 0, mispredicted = 0;
  for (const auto& j : jobs) {
    elastic += j.elastic;
    if (j.predict_factor != 1.0) {
      ++mispredicted;
      CHECK(j.predict_factor >= 0.75);
      CHECK(j.predict_factor <= 1.25);
    }
  }
  CHECK(elastic / 10000.0 == doctest::Approx(0.3).epsilon(0.07));
  CHECK(mispredicted / 10000.0 == doctest::Approx(0.6).epsilon(0.05));
}

TEST_CASE("job attributes: deterministic per (seed, index), independent of the other jobs") {
  job_attribute_options o;
  o.elastic_fraction = 0.5;
  o.mispredict_fraction = 0.5;
  auto all = jobs_of(200);
  assign_job_attributes(all, o);
  auto again = jobs_of(200);
  assign_job_attributes(again, o);
  std::vector<job_spec> some{jobs_of(200)[17], jobs_of(200)[150]};
  assign_job_attributes(some, o);
  for (size_t i = 0; i < all.size(); ++i) {
    CHECK(all[i].elastic == again[i].elastic);
    CHECK(all[i].predict_factor == again[i].predict_factor);
  }
  CHECK(some[0].elastic == all[17].elastic);
  CHECK(some[0].predict_factor == all[17].predict_factor);
  CHECK(some[1].predict_factor == all[150].predict_factor);

  o.seed = 2;
  auto other = jobs_of(200);
  assign_job_attributes(other, o);
  int differ = 0;
  for (size_t i = 0; i < all.size(); ++i) differ += all[i].elastic != other[i].elastic;
  CHECK(differ > 50);
}

TEST_CASE("job attributes: raising elastic_fraction only adds elastic jobs") {
  job_attribute_options lo, hi;
  lo.elastic_fraction = 0.2;
  hi.elastic_fraction = 0.5;
  auto a = jobs_of(1000), b = jobs_of(1000);
  assign_job_attributes(a, lo);
  assign_job_attributes(b, hi);
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].elastic) CHECK(b[i].elastic);
    CHECK(a[i].predict_factor == b[i].predict_factor);
  }
}

TEST_CASE("job attributes: elastic bounds are min = max(1, floor(n f)) and max = ceil(n k), inelastic min = max = n") {
  job_attribute_options o;
  o.elastic_fraction = 1;
  struct expect {
    int gpus;
    double min_fraction, max_factor;
    int min, max;
  };
  for (const auto& e : std::vector<expect>{{1, 0.5, 2, 1, 2},
                                           {3, 0.5, 2, 1, 6},
                                           {8, 0.5, 2, 4, 16},
                                           {10, 0.3, 1.1, 3, 11},  // 10 * 1.1 is 11.000000000000002
                                           {7, 1, 1, 7, 7},
                                           {5, 0.2, 1.5, 1, 8}}) {
    o.min_workers_fraction = e.min_fraction;
    o.max_workers_factor = e.max_factor;
    auto jobs = jobs_of(1, e.gpus);
    assign_job_attributes(jobs, o);
    CAPTURE(e.gpus);
    CHECK(jobs[0].elastic);
    CHECK(jobs[0].min_workers == e.min);
    CHECK(jobs[0].max_workers == e.max);
  }
  o.elastic_fraction = 0;
  auto jobs = jobs_of(3, 4);
  jobs[1].elastic = true;  // stale values are reset
  jobs[1].min_workers = 1;
  jobs[1].max_workers = 9;
  assign_job_attributes(jobs, o);
  for (const auto& j : jobs) {
    CHECK_FALSE(j.elastic);
    CHECK(j.min_workers == 4);
    CHECK(j.max_workers == 4);
    CHECK(j.predict_factor == 1.0);
  }
}

TEST_CASE("job attributes: elasticity given by the trace is authoritative") {
  auto jobs = jobs_of(3, 4);
  jobs[0].elastic = false;  // trace said elastic = 0
  jobs[1].elastic = true;   // trace said elastic = 1 with bounds 3..5
  jobs[1].min_workers = 3;
  jobs[1].max_workers = 5;
  const std::vector<bool> explicit_elastic{true, true, false};
  job_attribute_options o;
  o.elastic_fraction = 1;
  o.mispredict_fraction = 1;
  assign_job_attributes(jobs, o, &explicit_elastic);
  CHECK_FALSE(jobs[0].elastic);
  CHECK(jobs[0].min_workers == 4);
  CHECK(jobs[1].min_workers == 3);
  CHECK(jobs[1].max_workers == 5);
  CHECK(jobs[2].elastic);
  CHECK(jobs[2].max_workers == 8);
  for (const auto& j : jobs) CHECK(j.predict_factor != 1.0);  // misprediction still applies

  const std::vector<bool> short_flags{true};
  CHECK_THROWS_AS(assign_job_attributes(jobs, o, &short_flags), std::invalid_argument);
}

TEST_CASE("job attributes: out-of-range options are input errors") {
  auto jobs = jobs_of(2);
  job_attribute_options o;
  o.elastic_fraction = 1.5;
  CHECK_THROWS_AS(assign_job_attributes(jobs, o), input_error);
  o = {};
  o.min_workers_fraction = -0.1;
  CHECK_THROWS_AS(assign_job_attributes(jobs, o), input_error);
  o = {};
  o.max_workers_factor = 0.5;
  CHECK_THROWS_AS(assign_job_attributes(jobs, o), input_error);
  o = {};
  o.mispredict_error = 0.995;  // past 0.99, the end of its config range
  CHECK_THROWS_AS(assign_job_attributes(jobs, o), input_error);
}

TEST_CASE("job attributes: a min_workers_fraction of 0, the end of its config range, gives elastic jobs a minimum of one worker") {
  auto jobs = jobs_of(100, 8);
  job_attribute_options o;
  o.elastic_fraction = 1;
  o.min_workers_fraction = 0;
  assign_job_attributes(jobs, o);
  for (const auto& j : jobs) {
    REQUIRE(j.elastic);
    CHECK(j.min_workers == 1);
  }
}

TEST_CASE("job attributes: unestimated_fraction takes that share of estimates, only adding to them, elasticity unchanged") {
  auto base = jobs_of(10000);
  job_attribute_options o;
  o.elastic_fraction = 0.5;
  assign_job_attributes(base, o);
  auto half = jobs_of(10000), more = jobs_of(10000);
  half[7].estimated = false;  // the trace said so: stays without one
  o.unestimated_fraction = 0.5;
  assign_job_attributes(half, o);
  o.unestimated_fraction = 0.8;
  assign_job_attributes(more, o);
  size_t without = 0;
  for (size_t i = 0; i < half.size(); ++i) {
    without += !half[i].estimated;
    CHECK(half[i].elastic == base[i].elastic);
    if (!half[i].estimated && i != 7) CHECK_FALSE(more[i].estimated);
  }
  CHECK_FALSE(half[7].estimated);
  CHECK(without == doctest::Approx(5000).epsilon(0.03));
  o.unestimated_fraction = 1.5;
  CHECK_THROWS_AS(assign_job_attributes(half, o), input_error);
}
