// Elastic changes that pay for themselves (docs/elastic.md, "What a change of size must pay";
// docs/preemption.md, "Preemption for short jobs"): the holding-time estimate, the cooldown, the efficiency
// floor, the margin, and preemption for queued jobs, each on a hand-made ledger.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "solvers/round_planner.hpp"
#include "tests/solvers/ledger_fixtures.hpp"

using namespace aryl;
using aryl::test::add_job;
using aryl::test::at;
using aryl::test::start_of;

namespace {

/// `servers` training servers of 8 GPUs (and `loaned` T4 servers), the profiled
/// cross-server cost, checkpoints of 10 s + 0.5 s per GPU.
cluster_ledger make_ledger(int servers, int loaned = 0) {
  auto l = test::make_ledger(servers, loaned);
  l.params.model.cross_server_eff = profiled_cross_server_eff;
  l.params.checkpoint_s = 10;
  l.params.checkpoint_per_gpu_s = 0.5;
  return l;
}

const policy_spec& aryl_policy() { return *find_policy("elastic-only"); }

} // namespace

TEST_CASE("holding-time estimate: the prior alone, then revoked spells shorten it and open ones count as they stand") {
  auto l = make_ledger(2);
  l.params.hold_prior_s = 3600;
  l.params.hold_halflife_s = 0;  // no ageing: the sums are exact
  CHECK(l.hold_estimate(0, at(0)) == doctest::Approx(3600));
  // Elastic job-0 (min 2) starts with 4 workers: a spell opens at t=0.
  add_job(l, 4, 1e6, 0, true);
  l.start(0, {{0, 4}}, 0, at(0));
  CHECK(l.hold_estimate(0, at(400)) == doctest::Approx(3600 + 400));
  // At t=100 it loses 2 workers: one revoked spell of 100 s, none open.
  l.rescale(0, {{0, 2}}, at(100));
  CHECK(l.hold_estimate(0, at(500)) == doctest::Approx((100.0 + 3600) / 2));
  // A spell that ends with its job is not revoked: only its time counts.
  l.rescale(0, {{0, 6}}, at(200));
  l.finish(0, at(1200));
  CHECK(l.hold_estimate(0, at(1300)) == doctest::Approx((100.0 + 1000 + 3600) / 2));
}

TEST_CASE("holding-time estimate: observations lose half their weight every half-life") {
  auto l = make_ledger(1);
  l.params.hold_prior_s = 1000;
  l.params.hold_halflife_s = 3600;
  add_job(l, 4, 1e6, 0, true);
  l.start(0, {{0, 4}}, 0, at(0));
  l.rescale(0, {{0, 2}}, at(600));  // revoked after 600 s
  CHECK(l.hold_estimate(0, at(600)) == doctest::Approx((600.0 + 1000) / 2));
  CHECK(l.hold_estimate(0, at(600 + 3600)) == doctest::Approx((300.0 + 1000) / 1.5));
}

TEST_CASE("a job within its cooldown keeps its size when GPUs free up, and grows once it is past") {
  // Elastic job-0 (4 GPUs, min 2, max 8) starts next to rigid job-1 (6 GPUs) on one server:
  // 2 workers fit. Job-1 ends at t=100: 6 GPUs free.
  auto l = make_ledger(1);
  planner_options o;
  add_job(l, 4, 1e6, 0, true);
  add_job(l, 6, 1000, 0);
  plan_round(l, aryl_policy(), o, at(0));
  REQUIRE(l.jobs[0].workers == 2);
  REQUIRE(l.jobs[1].workers == 6);
  l.finish(1, at(100));
  // Within the cooldown a job at its minimum has no extras to keep, so it may grow: the
  // cooldown holds sizes, it does not stop a first growth. Started at t=0 at its minimum
  // (no spell), job-0 grows to 8 at t=100.
  auto ds = plan_round(l, aryl_policy(), o, at(100));
  REQUIRE(ds.size() == 1);
  CHECK(l.jobs[0].workers == 8);
  CHECK(ds[0].why.find("scale out: gains") == 0);
  // Rigid job-2 (4 GPUs) arrives at t=200 and takes 4 extras (base demand comes first);
  // job-0 is back to 4 workers.
  add_job(l, 4, 100000, 200);
  plan_round(l, aryl_policy(), o, at(200));
  REQUIRE(l.jobs[2].workers == 4);
  REQUIRE(l.jobs[0].workers == 4);
  // Job-2 ends at t=300: job-0 was resized at t=200, so it keeps 4 until t=3800.
  l.finish(2, at(300));
  CHECK(plan_round(l, aryl_policy(), o, at(300)).empty());
  CHECK(plan_round(l, aryl_policy(), o, at(3799)).empty());
  CHECK(l.jobs[0].workers == 4);
  ds = plan_round(l, aryl_policy(), o, at(3800));
  REQUIRE(ds.size() == 1);
  CHECK(l.jobs[0].workers == 8);
}

TEST_CASE("the efficiency floor keeps a one-server job from growing across servers") {
  // Elastic job-0 (8 GPUs, min 4, max 16) alone on 2 servers. On two servers each GPU does
  // 0.66 x (16/4)^-0.05 = 0.61 of a GPU's work at min: below the 0.8 floor, so job-0 stops
  // at 8 on one server; with the floor at 0 it takes all 16.
  for (double floor : {0.8, 0.0}) {
    auto l = make_ledger(2);
    planner_options o;
    o.min_extra_efficiency = floor;
    add_job(l, 8, 1e6, 0, true);
    plan_round(l, aryl_policy(), o, at(0));
    CAPTURE(floor);
    CHECK(l.jobs[0].workers == (floor > 0 ? 8 : 16));
    CHECK(servers_spanned(l.jobs[0].alloc) == (floor > 0 ? 1 : 2));
  }
}

TEST_CASE("a job at its minimum on a full server is offered growth onto another server, which the efficiency floor refuses") {
  // Rigid job-2 (8 GPUs, shortest) fills server 0; rigid job-1 (6 GPUs) and elastic job-0
  // (4 GPUs, min 2, max 8) share server 1. Job-2 ends at t=100: server 0 is empty and job-0's
  // own server full, so any growth spans two servers (0.66 x (8/2)^-0.05 = 0.61 of a GPU's
  // work at min each). The round skips planning such a job only when every larger size is
  // below the floor: with the floor at 0.8 it stays at 2, with 0 it grows to 8 across.
  for (double floor : {0.8, 0.0}) {
    auto l = make_ledger(2);
    planner_options o;
    o.min_extra_efficiency = floor;
    add_job(l, 4, 1e6, 0, true);
    add_job(l, 6, 1000, 0);
    add_job(l, 8, 500, 0);
    plan_round(l, aryl_policy(), o, at(0));
    REQUIRE(l.jobs[0].workers == 2);
    REQUIRE(l.jobs[0].alloc == l.jobs[0].base);
    REQUIRE(l.jobs[0].alloc.front().first == l.jobs[1].alloc.front().first);
    l.finish(2, at(100));
    auto ds = plan_round(l, aryl_policy(), o, at(100));
    CAPTURE(floor);
    CHECK(ds.size() == (floor > 0 ? 0u : 1u));
    CHECK(l.jobs[0].workers == (floor > 0 ? 2 : 8));
    CHECK(servers_spanned(l.jobs[0].alloc) == (floor > 0 ? 1 : 2));
  }
}

TEST_CASE("without a cross-server cost, a job at its minimum on a full server grows onto another, which the efficiency floor allows") {
  // As above with cross_server_eff 1: each GPU of job-0 at 8 across two servers does
  // (8/2)^-0.05 = 0.93 of a GPU's work at min, above the 0.8 floor, so job-0 grows to 8.
  auto l = make_ledger(2);
  l.params.model.cross_server_eff = 1;
  planner_options o;
  add_job(l, 4, 1e6, 0, true);
  add_job(l, 6, 1000, 0);
  add_job(l, 8, 500, 0);
  plan_round(l, aryl_policy(), o, at(0));
  REQUIRE(l.jobs[0].workers == 2);
  REQUIRE(l.jobs[0].alloc.front().first == l.jobs[1].alloc.front().first);
  l.finish(2, at(100));
  plan_round(l, aryl_policy(), o, at(100));
  CHECK(l.jobs[0].workers == 8);
  CHECK(servers_spanned(l.jobs[0].alloc) == 2);
}

TEST_CASE("a job keeps a size the efficiency floor would not offer it now, past smaller sizes the floor refuses, while its extras hold their GPUs") {
  // Elastic job-0 (4 GPUs, min 2, max 8) runs at 4, its base on server 0 (which rigid job-1
  // fills) and 2 extras on server 1. Any size it is not at spans two servers: at 3, each GPU
  // does 0.66 x (3/2)^-0.05 = 0.65 of a GPU's work at min, below the 0.8 floor. Its size of
  // 4 (also across two servers) stays offered, and keeping it costs nothing: no change.
  auto l = make_ledger(2);
  planner_options o;
  o.consolidate = false;
  o.rescale_cooldown_s = 0;
  add_job(l, 4, 1e6, 0, true);
  add_job(l, 6, 1e6, 0);
  l.start(0, {{0, 2}, {1, 2}}, 0, at(0));
  l.start(1, {{0, 6}}, 0, at(0));
  REQUIRE(l.jobs[0].base == allocation{{0, 2}});
  auto ds = plan_round(l, aryl_policy(), o, at(100));
  CHECK(ds.empty());
  CHECK(l.jobs[0].workers == 4);
}

TEST_CASE("a growth whose gain does not clear its cost and margin is not made") {
  // Elastic job-0 (2 GPUs, min 1, max 4) with 15 work units left: 29 s at 1 worker, 7.8 s at
  // 4. Growing saves about 21 s of JCT, less than the 20 s overhead + the 10.5 s checkpoint +
  // the 60 s margin: it stays at 1. With 10^6 units the same change pays.
  for (double work : {15.0, 1e6}) {
    auto l = make_ledger(1);
    planner_options o;
    o.rescale_cooldown_s = 0;
    add_job(l, 2, work, 0, true);
    add_job(l, 7, 1000, 0);
    plan_round(l, aryl_policy(), o, at(0));
    REQUIRE(l.jobs[0].workers == 1);
    l.finish(1, at(10));
    plan_round(l, aryl_policy(), o, at(10));
    CAPTURE(work);
    CHECK(l.jobs[0].workers == (work < 100 ? 1 : 4));
  }
}

TEST_CASE("a scale-in that costs its own job says how much more the round saves than the best that keeps its size") {
  // One server. Elastic job-0 (4 GPUs, min 2, max 8) runs at 6 workers from t=0 with 1500
  // work units predicted (as of its last change); elastic job-1 (the same shape) at its
  // minimum of 2, with 10^6. At t=5000, past job-0's cooldown, job-1's extras save far more
  // JCT over the expected hold than job-0's, which would end soon: the knapsack moves the 4
  // extra GPUs, and job-0's line gives its own loss and the round's lead over keeping it.
  auto l = make_ledger(1);
  planner_options o;
  add_job(l, 4, 1500, 0, true);
  add_job(l, 4, 1e6, 0, true);
  l.start(0, {{0, 6}}, 0, at(0));
  l.start(1, {{0, 2}}, 0, at(0));
  auto ds = plan_round(l, aryl_policy(), o, at(5000));
  CHECK(l.jobs[0].workers == 2);
  CHECK(l.jobs[1].workers == 6);
  const decision* in = nullptr;
  const decision* out = nullptr;
  for (auto& d : ds) (d.job == 0 ? in : out) = &d;
  REQUIRE(in != nullptr);
  REQUIRE(out != nullptr);
  CAPTURE(in->why);
  CAPTURE(out->why);
  double lead = -1, loss = -1, cost = -1, gain = -1;
  REQUIRE(std::sscanf(in->why.c_str(),
                      "scale in: the round's sizes save %lf s more of predicted JCT than the best that keeps its "
                      "size; it loses %lf s after its cost (%lf s) and margin",
                      &lead, &loss, &cost) == 3);
  REQUIRE(std::sscanf(out->why.c_str(), "scale out: gains %lf s", &gain) == 1);
  CHECK(loss > 0);
  CHECK(cost > 0);
  // The best that keeps job-0 at 6 leaves job-1 at 2: the lead is job-1's gain less job-0's
  // loss (each after its cost and margin), up to the rounding of the three printed figures.
  CHECK(std::abs(lead - (gain - loss)) <= 1.5);
  CHECK(lead > 0);
}

TEST_CASE("between servers where as many GPUs must stop, a queued job preempts where the victim has the most time left") {
  // Rigid 8-GPU jobs fill two servers: job-0 (10^5 s) on server 0, job-1 (10^6 s) on
  // server 1. Job-2 (8 GPUs, 1000 s) passes the ratio against both and stops one job either
  // way; it stops job-1, the one with more time left (the lower server id used to decide).
  auto l = make_ledger(2);
  planner_options o;
  add_job(l, 8, 1e5, 0);
  add_job(l, 8, 1e6, 0);
  l.start(0, {{0, 8}}, 0, at(0));
  l.start(1, {{1, 8}}, 0, at(0));
  add_job(l, 8, 1000, 10);
  auto ds = plan_round(l, aryl_policy(), o, at(10));
  REQUIRE(ds.size() == 2);
  CHECK(ds[0].what == decision::kind::preempt);
  CHECK(ds[0].job == 1);
  CHECK(ds[1].what == decision::kind::start);
  CHECK(ds[1].alloc == allocation{{1, 8}});
  CHECK(l.jobs[0].status == job_status::running);
}

TEST_CASE("a queued short job preempts a long rigid job only past the ratio, and never a job preempted max times") {
  // Rigid job-0 (8 GPUs) fills the one server with 10^5 s of work. Job-1 (8 GPUs, 1000 s)
  // arrives: 10^5 > 4 x (1000 + 60 + 14) s, so job-0 is preempted and job-1 starts.
  auto l = make_ledger(1);
  planner_options o;
  add_job(l, 8, 1e5, 0);
  plan_round(l, aryl_policy(), o, at(0));
  add_job(l, 8, 1000, 10);
  auto ds = plan_round(l, aryl_policy(), o, at(10));
  REQUIRE(ds.size() == 2);
  CHECK(ds[0].what == decision::kind::preempt);
  CHECK(ds[0].job == 0);
  CHECK(ds[0].why.find("preempted for job 1") == 0);
  CHECK(ds[1].what == decision::kind::start);
  CHECK(ds[1].job == 1);
  CHECK(l.jobs[0].status == job_status::queued);
  // Job-2 (30,000 s) cannot preempt job-1 (1000 s left): the ratio is not met.
  add_job(l, 8, 30000, 20);
  CHECK(plan_round(l, aryl_policy(), o, at(20)).empty());
  // Job-1 ends: job-2 (30,000 s) comes before job-0 (99,990 s left) in SJF order and starts;
  // job-0 cannot preempt it (ratio). Job-3 (100 s) arrives and preempts job-2.
  l.finish(1, at(1030));
  plan_round(l, aryl_policy(), o, at(1030));
  REQUIRE(l.jobs[2].status == job_status::running);
  add_job(l, 8, 100, 1040);
  ds = plan_round(l, aryl_policy(), o, at(1040));
  REQUIRE(!ds.empty());
  CHECK(ds[0].what == decision::kind::preempt);
  CHECK(ds[0].job == 2);
  // With max_preemptions 1, a job preempted once already is never a victim.
  auto m = make_ledger(1);
  o.max_preemptions = 1;
  add_job(m, 8, 1e5, 0);
  plan_round(m, aryl_policy(), o, at(0));
  m.preempt(0, at(1));
  plan_round(m, aryl_policy(), o, at(2));
  REQUIRE(m.jobs[0].status == job_status::running);
  add_job(m, 8, 100, 10);
  CHECK(plan_round(m, aryl_policy(), o, at(10)).empty());
  CHECK(m.jobs[1].status == job_status::queued);
}

TEST_CASE("preempt_for_speed: a job that fits only on loaned T4s preempts on a V100 when it gains more than its victim loses") {
  // Rigid job-0 fills the V100 server with 10^5 s of work; the T4 server is loaned and idle.
  // Elastic job-1 (base 1 worker) would run about 2.9x slower on a T4.
  auto& aryl = *find_policy("aryl");
  for (bool on : {true, false}) {
    CAPTURE(on);
    auto l = make_ledger(1, 1);
    planner_options o;
    o.preempt_for_speed = on;
    add_job(l, 8, 1e5, 0);
    plan_round(l, aryl, o, at(0));
    REQUIRE(l.jobs[0].alloc == allocation{{0, 8}});
    add_job(l, 2, 1000, 10, true);
    auto ds = plan_round(l, aryl, o, at(10));
    auto s = start_of(ds, 1);
    REQUIRE(s);
    if (on) {
      REQUIRE(ds[0].what == decision::kind::preempt);
      CHECK(ds[0].job == 0);
      CHECK(ds[0].why.find("on the faster type that job saves") != std::string::npos);
      CHECK(s->gpu_type == 0);  // on the V100 server (grown in the same round where that pays)
      CHECK(s->alloc.front().first == 0);
    } else {
      CHECK(std::none_of(ds.begin(), ds.end(), [](auto& d) { return d.what == decision::kind::preempt; }));
      CHECK(s->gpu_type == 1);
      CHECK(s->alloc.front().first == 1);
    }
  }
}

TEST_CASE("preempt_for_speed: a job too short to repay its victim's restart starts on the slower type") {
  // Job-1's run at its base is about 40 s: on a T4 it would lose about 75 s, less than the
  // victim's wait for it plus the 60 s restart, though the ratio alone would allow the stop.
  auto& aryl = *find_policy("aryl");
  auto l = make_ledger(1, 1);
  planner_options o;
  add_job(l, 8, 1e5, 0);
  plan_round(l, aryl, o, at(0));
  add_job(l, 2, 20, 10, true);
  auto ds = plan_round(l, aryl, o, at(10));
  CHECK(std::none_of(ds.begin(), ds.end(), [](auto& d) { return d.what == decision::kind::preempt; }));
  auto s = start_of(ds, 1);
  REQUIRE(s);
  CHECK(s->gpu_type == 1);
  CHECK(s->alloc.front().first == 1);
  CHECK(l.jobs[0].status == job_status::running);
}

TEST_CASE("with the ratio at 0 a queued job never preempts") {
  auto l = make_ledger(1);
  planner_options o;
  o.preempt_ratio = 0;
  add_job(l, 8, 1e6, 0);
  plan_round(l, aryl_policy(), o, at(0));
  add_job(l, 8, 10, 10);
  CHECK(plan_round(l, aryl_policy(), o, at(10)).empty());
}

TEST_CASE("extras that another job's growth pushes onto a second server are dropped when they break the efficiency floor") {
  // t0: elastic job-0 and job-1 (4 GPUs, min 2, max 8) at 2 workers each, 4 GPUs free; t1:
  // rigid job-2 on 4, 4 free. Alone, each would grow to 6 on t0. Job-0 is placed first and
  // takes t0's 4; job-1's 4 extras would go on t1, where 6 workers on two servers do
  // 0.66 x 3^-0.05 = 0.62 of a GPU's work at min each: below 0.8, so job-1 stays at 2 on t0.
  // With the floor at 0 it runs 6 over both servers.
  for (double floor : {0.8, 0.0}) {
    auto l = make_ledger(2);
    planner_options o;
    o.min_extra_efficiency = floor;
    add_job(l, 4, 1e6, 0, true);
    add_job(l, 4, 1e6, 0, true);
    add_job(l, 4, 1e6, 0);
    l.start(0, {{0, 2}}, 0, at(0));
    l.start(1, {{0, 2}}, 0, at(0));
    l.start(2, {{1, 4}}, 0, at(0));
    plan_round(l, aryl_policy(), o, at(10));
    CAPTURE(floor);
    CHECK(l.jobs[0].alloc == allocation{{0, 6}});
    CHECK(l.jobs[1].workers == (floor > 0 ? 2 : 6));
    CHECK(servers_spanned(l.jobs[1].alloc) == (floor > 0 ? 1 : 2));
  }
}

TEST_CASE("a queued job larger than a server preempts on whole servers, where the fewest GPUs must stop") {
  // Three servers. t0: rigid job-0 (8 GPUs, 10^6 s). t1: rigid job-1 (4 GPUs, 10^6 s), 4 free.
  // t2: rigid job-2 (8 GPUs, 500 s: not past the ratio). Job-3 (16 GPUs, 1000 s) arrives: it
  // takes t1 (4 GPUs to stop) and t0 (8); job-2 keeps running.
  auto l = make_ledger(3);
  planner_options o;
  add_job(l, 8, 1e6, 0);
  add_job(l, 4, 1e6, 0);
  add_job(l, 8, 500, 0);
  l.start(0, {{0, 8}}, 0, at(0));
  l.start(1, {{1, 4}}, 0, at(0));
  l.start(2, {{2, 8}}, 0, at(0));
  add_job(l, 16, 1000, 10);
  auto ds = plan_round(l, aryl_policy(), o, at(10));
  REQUIRE(ds.size() == 3);
  CHECK(ds[0].what == decision::kind::preempt);
  CHECK(ds[1].what == decision::kind::preempt);
  CHECK(((ds[0].job == 1 && ds[1].job == 0) || (ds[0].job == 0 && ds[1].job == 1)));
  CHECK(ds[2].what == decision::kind::start);
  CHECK(l.jobs[3].alloc == allocation{{0, 8}, {1, 8}});
  CHECK(l.jobs[2].status == job_status::running);
}

TEST_CASE("a spread job moves onto fewer servers when the rate it gains pays for the change, and only then") {
  // Elastic job-0 (8 GPUs, min 4, max 16) runs 8 workers as 4 + 4 on servers 0 and 1 (as a
  // reclaim or a fault can leave it); server 2 is free. On one server it runs 1/0.66 as fast
  // as on two: over the expected hold (the prior and its open spell, 10800 s) that gains far
  // more than the change's cost (34 s) and margin (60 s), so it moves onto one server at its
  // size. With 100 s of work left the move saves about 50 s, less than cost and margin; with
  // consolidation off it stays spread at its size.
  struct variant {
    double work;
    bool consolidate;
    bool moves;
  };
  for (auto v : {variant{1e6, true, true}, variant{100, true, false}, variant{1e6, false, false}}) {
    auto l = make_ledger(3);
    planner_options o;
    o.consolidate = v.consolidate;
    add_job(l, 8, v.work, 0, true);
    l.start(0, {{0, 4}, {1, 4}}, 0, at(0));
    auto ds = plan_round(l, aryl_policy(), o, at(7200));
    CAPTURE(v.work);
    CAPTURE(v.consolidate);
    if (v.moves) {
      REQUIRE(ds.size() == 1);
      CHECK(ds[0].why.find("consolidate onto 1 servers from 2: gains") == 0);
      CHECK(l.jobs[0].workers == 8);
      CHECK(servers_spanned(l.jobs[0].alloc) == 1);
    } else {
      for (auto& d : ds) CHECK_MESSAGE(d.why.find("consolidate") == std::string::npos, d.why);
      CHECK_FALSE((l.jobs[0].workers == 8 && servers_spanned(l.jobs[0].alloc) == 1));
    }
  }
}

TEST_CASE("a consolidating job's old GPUs are counted once: jobs growing in the same round fit their servers") {
  // As above, job-0 moves from 4 + 4 on servers 0 and 1 onto server 0. Elastic job-1 (8 GPUs,
  // min 4, max 32) runs 4 workers on server 2 and, with no efficiency floor, grows into every
  // GPU the round finds free. Server 1 has 8 GPUs: the ledger refuses a plan that puts more
  // there (it would, were job-0's extras on server 1 counted free twice).
  auto l = make_ledger(3);
  planner_options o;
  o.min_extra_efficiency = 0;
  add_job(l, 8, 1e6, 0, true);
  add_job(l, 8, 1e6, 0, true);
  l.start(0, {{0, 4}, {1, 4}}, 0, at(0));
  l.jobs[1].max_workers = 32;
  l.start(1, {{2, 4}}, 0, at(0));
  REQUIRE_NOTHROW(plan_round(l, aryl_policy(), o, at(7200)));
  CHECK(servers_spanned(l.jobs[0].alloc) == 1);
  for (auto& s : l.servers) CHECK(s.free >= 0);
  CHECK(l.jobs[0].workers + l.jobs[1].workers <= 24);
}

TEST_CASE("a job at its minimum on a full server grows onto the GPUs a spread neighbour's consolidation frees there") {
  // Elastic job-0 (8 GPUs, min 4) runs its minimum as 2 + 2 on servers 0 and 1; elastic job-1
  // (12 GPUs, min 6) runs its minimum on server 0, which is full. Servers 1 and 2 have room:
  // job-0 moves onto one (1/0.66 as fast), and job-1 can then grow by the 2 GPUs job-0
  // left on server 0 without spanning a second server. Job-1 looks inert before the move
  // (its next size would span two servers, below the efficiency floor); a round that skips
  // inert jobs must decide as one that plans every job.
  for (bool skip : {false, true}) {
    CAPTURE(skip);
    auto l = make_ledger(3);
    planner_options o;
    o.skip_inert = skip;
    add_job(l, 8, 1e6, 0, true);
    add_job(l, 12, 1e6, 0, true);
    l.start(0, {{0, 2}, {1, 2}}, 0, at(0));
    l.start(1, {{0, 6}}, 0, at(0));
    plan_round(l, aryl_policy(), o, at(7200));
    CHECK(servers_spanned(l.jobs[0].alloc) == 1);
    CHECK(l.jobs[0].alloc.front().first != 0);
    CHECK(l.jobs[1].workers == 8);
    CHECK(l.servers[0].free == 0);
  }
}
