// scheduler.reserve_after_s (docs/preemption.md, "Backfill"): a job queued past the bound goes
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
  o.reserve_stretch = 0;
  return o;
}

/// The bound by stretch alone: waited at least `stretch` x the predicted run, and `min_s`.
planner_options stretching(double stretch, double min_s) {
  auto o = reserving(0);
  o.reserve_stretch = stretch;
  o.reserve_stretch_min_s = min_s;
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

TEST_CASE("reserve_stretch: a job queued past that many times its predicted run holds the server that frees soonest") {
  // Job 2 (8 GPUs, 20,000 work units at 8^-0.05: a predicted run of about 22,200 s) has
  // waited 50,000 s: over 2 x its run, under 3 x.
  auto aryl = *find_policy("aryl");
  for (double stretch : {2.0, 3.0}) {
    CAPTURE(stretch);
    auto l = waiting_wide_job();
    auto ds = plan_round(l, aryl, stretching(stretch, 1800), at(50'000));
    auto s = start_of(ds, 3);
    REQUIRE(s);
    if (stretch == 2.0) {
      CHECK(s->alloc == allocation{{1, 4}});
      CHECK(l.reserved_servers == std::vector<int>{0});
      CHECK(queue_wait_reason(l, aryl, stretching(stretch, 1800), 3, {"V100", "T4"}) ==
            "GPUs held for job 2 (queued past scheduler.reserve_stretch x its predicted run) on t0");
    } else {
      CHECK(s->alloc == allocation{{0, 4}});
      CHECK(l.reserved_servers.empty());
    }
  }
}

TEST_CASE("reserve_stretch_min_s: a job past its stretch holds nothing until it has waited the minimum") {
  auto l = waiting_wide_job();
  plan_round(l, *find_policy("aryl"), stretching(2, 60'000), at(50'000));
  CHECK(l.reserved_servers.empty());
}

TEST_CASE("the job holding servers may stop a job already preempted max_preemptions times, and no other job may") {
  // Rigid job 0 fills the one server with 10^5 s of work and has been stopped the most
  // times the rule allows. Job 1 (8 GPUs, 100 s) has queued since 0.
  auto aryl = *find_policy("aryl");
  for (bool starved : {true, false}) {
    CAPTURE(starved);
    auto l = make_ledger(1);
    add_job(l, 8, 1e5, 0);
    l.start(0, {{0, 8}}, 0, at(0));
    add_job(l, 8, 100, 0);
    planner_options o;
    o.reserve_stretch = starved ? 5 : 0;
    o.reserve_stretch_min_s = 1800;
    l.jobs[0].preemptions = o.max_preemptions;
    auto ds = plan_round(l, aryl, o, at(2000));
    if (starved) {
      REQUIRE(ds.size() == 2);
      CHECK(ds[0].what == decision::kind::preempt);
      CHECK(ds[0].job == 0);
      CHECK(ds[1].what == decision::kind::start);
      CHECK(ds[1].job == 1);
    } else {
      CHECK(ds.empty());
    }
  }
}

TEST_CASE("the servers held for a starved job count the jobs it may stop as free, so it holds where only those remain soonest") {
  // Job 4 (8 GPUs, 1000 s) is starved. Server 0: a 10^5 s job it may stop and a 500 s one
  // it may not (500 < 4 x (1000 + its restart and checkpoint)). Server 1: two jobs of 2000 s
  // and 3000 s, neither stoppable. By ends alone server 1 frees first (3000 s against
  // 10^5 s); counting what it may stop, server 0 does (500 s), and it is held.
  auto l = make_ledger(2);
  add_job(l, 4, 1e5, 0);
  add_job(l, 4, 500, 0);
  add_job(l, 4, 2000, 0);
  add_job(l, 4, 3000, 0);
  l.start(0, {{0, 4}}, 0, at(0));
  l.start(1, {{0, 4}}, 0, at(0));
  l.start(2, {{1, 4}}, 0, at(0));
  l.start(3, {{1, 4}}, 0, at(0));
  add_job(l, 8, 1000, 0);
  planner_options o;
  o.reserve_stretch = 0.001;  // starved after a few seconds
  o.reserve_stretch_min_s = 1;
  auto ds = plan_round(l, *find_policy("aryl"), o, at(5));
  CHECK(ds.empty());
  CHECK(l.reserved_for == 4);
  CHECK(l.reserved_servers == std::vector<int>{0});
}
