// Backfilling in aryl's rounds (docs/preemption.md, "Backfill"): on by default for the policies
// that loan or scale, off for the rigid baselines; a full round leaves no queued job that
// fits, and a local round stays strict.
#include <doctest/doctest.h>

#include <random>

#include "solvers/round_planner.hpp"
#include "tests/solvers/ledger_fixtures.hpp"

using namespace aryl;
using aryl::test::add_job;
using aryl::test::at;
using aryl::test::make_ledger;
using aryl::test::start_of;

namespace {

/// One training server with 6 of its 8 GPUs busy and one loaned server with 4 busy, by jobs
/// too near their end to be preempted; queued, shortest first: a rigid 4-GPU job (fits
/// nowhere: rigid jobs stay off loaned servers), a rigid 8-GPU job, and an elastic job of
/// minimum 2 that fits the loaned server.
cluster_ledger blocked_queue() {
  auto l = make_ledger(1, 1);
  add_job(l, 6, 300);
  add_job(l, 8, 300, 0, true);  // elastic, at its minimum of 4
  l.start(0, {{0, 6}}, 0, at(0));
  l.start(1, {{1, 4}}, 0, at(0));
  add_job(l, 4, 100, 1);
  add_job(l, 8, 200, 1);
  add_job(l, 4, 300, 1, true);
  return l;
}

} // namespace

TEST_CASE("aryl backfills by default: an elastic job starts past a rigid one that finds no room") {
  auto l = blocked_queue();
  planner_options o;
  CHECK(backfills(*find_policy("aryl"), o));
  auto ds = plan_round(l, *find_policy("aryl"), o, at(1));
  CHECK_FALSE(start_of(ds, 2));
  CHECK_FALSE(start_of(ds, 3));
  CHECK(start_of(ds, 4));
}

TEST_CASE("the rigid baselines stay strict by default, and aryl does when backfill is off") {
  planner_options o;
  for (auto name : {"fifo", "sjf", "baseline"}) CHECK_FALSE(backfills(*find_policy(name), o));
  for (auto name : {"aryl", "loan-only", "elastic-only"}) CHECK(backfills(*find_policy(name), o));
  auto l = blocked_queue();
  o.backfill = false;
  auto ds = plan_round(l, *find_policy("aryl"), o, at(1));
  CHECK_FALSE(start_of(ds, 4));
  CHECK(l.queued.size() == 3);
}

TEST_CASE("a local round stays strict: what fits behind a job that finds no room waits for a full round") {
  auto l = blocked_queue();
  auto ds = plan_round(l, *find_policy("aryl"), planner_options{}, at(1), round_scope::local);
  CHECK_FALSE(start_of(ds, 4));
  ds = plan_round(l, *find_policy("aryl"), planner_options{}, at(2));
  CHECK(start_of(ds, 4));
}

TEST_CASE("after a full backfilling round no queued job's base demand fits the GPUs left free") {
  // Random clusters and queues. Moves and preemption are off, so every GPU a round leaves
  // free was free while the queue was walked: a job left queued that fits them was passed
  // over wrongly. The same rounds without backfilling leave such jobs (the check can fail).
  std::mt19937 rng;
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  int strict_left_fitting = 0;
  for (int round = 0; round < 400; ++round) {
    for (bool backfill : {true, false}) {
      rng.seed(static_cast<unsigned>(round));  // the same cluster and queue for both
      auto l = make_ledger(1 + pick(3), pick(3));
      const int running = pick(6);
      for (int k = 0; k < running; ++k) {
        const int gpus = 1 + pick(8);
        const auto id = add_job(l, gpus, 1000 + pick(5000), 0, pick(2) == 1);
        const int want = l.jobs[id].min_workers;
        for (auto& s : l.servers) {
          if (s.free < want || (s.mode == server_mode::loaned && !l.jobs[id].elastic)) continue;
          l.start(id, {{s.id, want}}, 0, at(0));
          break;
        }
      }
      const int queued = 1 + pick(8);
      for (int k = 0; k < queued; ++k) add_job(l, 1 + pick(8), 10 + pick(900), 1, pick(2) == 1);
      planner_options o;
      o.backfill = backfill;
      o.migrate = false;
      o.preempt_ratio = 0;
      o.consolidate = false;
      plan_round(l, *find_policy("aryl"), o, at(2));
      int left_fitting = 0;
      for (auto id : l.queued) {
        auto& j = l.jobs[id];
        const int demand = j.elastic ? j.min_workers : j.gpus;
        for (auto& s : l.servers)
          if (s.free >= demand && (s.mode == server_mode::training || j.elastic)) ++left_fitting;
      }
      if (backfill) CHECK_MESSAGE(left_fitting == 0, "round " << round);
      else strict_left_fitting += left_fitting > 0;
    }
  }
  CHECK(strict_left_fitting > 0);
}
