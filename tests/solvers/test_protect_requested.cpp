// scheduler.protect_requested: a queued job takes a running elastic job's workers between
// its minimum and its requested size only if it is not the shorter of the two.
#include <doctest/doctest.h>

#include "solvers/round_planner.hpp"
#include "tests/solvers/ledger_fixtures.hpp"

using namespace aryl;
using aryl::test::add_job;
using aryl::test::at;
using aryl::test::make_ledger;

namespace {

const policy_spec& aryl_policy() { return *find_policy("aryl"); }

planner_options options(bool protect) {
  planner_options o;
  o.protect_requested = protect;
  return o;
}

/// One server: elastic job 0 (requests 4, min 2) at its request with about 1,000 s to go,
/// and a rigid job 1 on the other 4 GPUs with too little left to be preempted for a job of
/// 10^5 s. Job 2 (rigid, 2 GPUs) is queued with `work`.
cluster_ledger full_server(double work) {
  auto l = make_ledger(1);
  add_job(l, 4, 1000, 0, true);
  add_job(l, 4, 2e5);
  l.start(0, {{0, 4}}, 0, at(0));
  l.start(1, {{0, 4}}, 0, at(0));
  add_job(l, 2, work, 10);
  return l;
}

} // namespace

TEST_CASE("protect_requested: a queued job longer than a running elastic job's remaining time does not take its workers below its request") {
  auto l = full_server(1e5);
  plan_round(l, aryl_policy(), options(true), at(10));
  CHECK(l.jobs[2].status == job_status::queued);
  CHECK(l.jobs[0].workers == 4);
  // Off, the same queued job takes the two workers above job 0's minimum.
  auto m = full_server(1e5);
  plan_round(m, aryl_policy(), options(false), at(10));
  CHECK(m.jobs[2].status == job_status::running);
  CHECK(m.jobs[0].workers == 2);
}

TEST_CASE("protect_requested: a queued job shorter than the running elastic job still takes its workers above its minimum") {
  auto l = full_server(100);
  plan_round(l, aryl_policy(), options(true), at(10));
  CHECK(l.jobs[2].status == job_status::running);
  CHECK(l.jobs[0].workers == 2);
}

TEST_CASE("protect_requested: workers beyond the request are not protected") {
  // Job 0 runs at 6 workers (request 4): a longer queued 2-GPU job takes the 2 beyond it.
  auto l = make_ledger(1);
  add_job(l, 4, 1000, 0, true);
  add_job(l, 2, 2e5);
  l.start(0, {{0, 6}}, 0, at(0));
  l.start(1, {{0, 2}}, 0, at(0));
  add_job(l, 2, 1e5, 10);
  plan_round(l, aryl_policy(), options(true), at(10));
  CHECK(l.jobs[2].status == job_status::running);
  CHECK(l.jobs[0].workers == 4);
}
