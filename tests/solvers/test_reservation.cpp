// scheduler.reserve_after_s (docs/design.md, "Backfill"): a job queued past the bound goes
// first, and when it finds no room the server that would hold it soonest is held for it, in
// full rounds and in the local rounds between them, until it starts there.
#include <doctest/doctest.h>

#include "solvers/round_planner.hpp"
#include "tests/solvers/ledger_fixtures.hpp"

using namespace aryl;
using aryl::test::add_job;
using aryl::test::at;
using aryl::test::make_ledger;
using aryl::test::start_of;

namespace {

/// Two training servers, each with 4 of 8 GPUs busy: on server 0 a job that ends in 100 s, on
/// server 1 one that ends in 10,000 s. Queued: a rigid 8-GPU job submitted at 0 (job 2) and a
/// shorter 4-GPU one submitted at 49,000 s (job 3); the round is at 50,000 s. Preemption is
/// off, so that only room decides.
cluster_ledger waiting_wide_job() {
  auto l = make_ledger(2);
  add_job(l, 4, 100, 49'990);
  add_job(l, 4, 10'000, 49'990);
  l.start(0, {{0, 4}}, 0, at(49'990));
  l.start(1, {{1, 4}}, 0, at(49'990));
  add_job(l, 8, 20'000, 0);
  add_job(l, 4, 50, 49'000);
  return l;
}

planner_options reserving(double after_s) {
  planner_options o;
  o.preempt_ratio = 0;
  o.reserve_after_s = after_s;
  return o;
}

} // namespace

TEST_CASE("reserve_after_s: a job queued past it keeps the server that frees soonest from a shorter job behind it") {
  auto aryl = *find_policy("aryl");
  {
    auto l = waiting_wide_job();
    auto ds = plan_round(l, aryl, reserving(0), at(50'000));
    auto s = start_of(ds, 3);
    REQUIRE(s);  // backfilled onto the best fit, the lowest id of two equal servers
    CHECK(s->alloc == allocation{{0, 4}});
  }
  auto l = waiting_wide_job();
  auto ds = plan_round(l, aryl, reserving(43'200), at(50'000));
  CHECK_FALSE(start_of(ds, 2));
  auto s = start_of(ds, 3);
  REQUIRE(s);
  CHECK(s->alloc == allocation{{1, 4}});  // server 0 is held: its job ends first
  CHECK(l.reserved_servers == std::vector<int>{0});
}

TEST_CASE("reserve_after_s: a job that has not waited that long holds nothing") {
  auto l = waiting_wide_job();
  auto ds = plan_round(l, *find_policy("aryl"), reserving(60'000), at(50'000));
  auto s = start_of(ds, 3);
  REQUIRE(s);
  CHECK(s->alloc == allocation{{0, 4}});
  CHECK(l.reserved_servers.empty());
}

TEST_CASE("reserve_after_s: local rounds keep the held server from arrivals, and start the job on it once it frees") {
  auto aryl = *find_policy("aryl");
  auto o = reserving(43'200);
  auto l = waiting_wide_job();
  plan_round(l, aryl, o, at(50'000));  // job 3 onto server 1, server 0 held for job 2
  add_job(l, 4, 50, 50'010);           // job 4: fits only the held server
  auto ds = plan_round(l, aryl, o, at(50'010), round_scope::local);
  CHECK_FALSE(start_of(ds, 4));
  CHECK(l.queued.count(4) == 1);
  l.finish(0, at(50'090));  // server 0 is free: the held job goes first, before job 4
  ds = plan_round(l, aryl, o, at(50'090), round_scope::local);
  auto s = start_of(ds, 2);
  REQUIRE(s);
  CHECK(s->alloc == allocation{{0, 8}});
  CHECK_FALSE(start_of(ds, 4));
  CHECK(l.reserved_servers.empty());
}

TEST_CASE("reserve_after_s: a queued job that finds room only on the held server is told which job holds it") {
  auto aryl = *find_policy("aryl");
  auto o = reserving(43'200);
  auto l = waiting_wide_job();
  plan_round(l, aryl, o, at(50'000));
  add_job(l, 4, 50, 50'010);
  plan_round(l, aryl, o, at(50'010), round_scope::local);
  CHECK(queue_wait_reason(l, aryl, o, 4, {"V100", "T4"}) == "GPUs held for job 2 (queued past scheduler.reserve_after_s) on t0");
}

TEST_CASE("reserve_after_s: servers held for a job that left the queue are free again in the next local round") {
  auto aryl = *find_policy("aryl");
  auto o = reserving(43'200);
  auto l = waiting_wide_job();
  plan_round(l, aryl, o, at(50'000));
  REQUIRE(l.reserved_servers == std::vector<int>{0});
  l.finish(2, at(50'005));  // as a cancel ends a queued job
  add_job(l, 4, 50, 50'010);
  auto ds = plan_round(l, aryl, o, at(50'010), round_scope::local);
  auto s = start_of(ds, 4);
  REQUIRE(s);
  CHECK(s->alloc == allocation{{0, 4}});
  CHECK(l.reserved_servers.empty());
}

TEST_CASE("shadow_backfill: a job predicted to end before the held server frees for the waiting job starts on it, and a longer one does not") {
  auto aryl = *find_policy("aryl");
  for (bool shadow : {true, false}) {
    CAPTURE(shadow);
    auto o = reserving(43'200);
    o.shadow_backfill = shadow;
    auto l = waiting_wide_job();
    add_job(l, 4, 60, 49'500);   // job 4: ends 60 s after its start, before server 0 frees (100 s)
    add_job(l, 4, 500, 49'600);  // job 5: would still run when job 2 could start there
    auto ds = plan_round(l, aryl, o, at(50'000));
    CHECK_FALSE(start_of(ds, 2));
    REQUIRE(start_of(ds, 3));
    CHECK(start_of(ds, 3)->alloc == allocation{{1, 4}});
    CHECK(l.reserved_servers == std::vector<int>{0});
    CHECK_FALSE(start_of(ds, 5));
    auto s = start_of(ds, 4);
    if (shadow) {
      REQUIRE(s);
      CHECK(s->alloc == allocation{{0, 4}});
    } else {
      CHECK_FALSE(s);
    }
  }
}
