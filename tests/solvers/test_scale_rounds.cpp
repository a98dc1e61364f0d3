// When a job's end needs a round that re-plans sizes (scheduler.scale_rounds=capacity): only
// when some elastic job could use the GPUs it freed.
#include <doctest/doctest.h>

#include "solvers/round_planner.hpp"
#include "tests/solvers/ledger_fixtures.hpp"

using namespace aryl;
using aryl::test::add_job;
using aryl::test::at;
using aryl::test::make_ledger;

namespace {

const policy_spec& aryl_policy() { return *find_policy("aryl"); }

planner_options options() {
  planner_options o;
  o.placement = placement_mode::consolidated;
  return o;
}

/// Two V100 servers: an elastic 4-GPU job at its maximum (8) on server 0, and an inelastic
/// 2-GPU job on server 1 that then ends; `before` is what it freed.
struct ended_fixture {
  cluster_ledger l = make_ledger(2);
  allocation before{{1, 2}};
  ended_fixture() {
    add_job(l, 4, 1e5, 0, true);
    add_job(l, 2, 100);
    l.start(0, {{0, 8}}, 0, at(0));
    l.start(1, before, 0, at(0));
    l.finish(1, at(100));
  }
};

} // namespace

TEST_CASE_FIXTURE(ended_fixture, "scale rounds: an end that no elastic job could use needs no full round") {
  CHECK_FALSE(freed_may_resize(l, aryl_policy(), options(), before));
  // The same end under a policy without elasticity plans as it always did.
  CHECK(freed_may_resize(l, *find_policy("fifo"), options(), before));
}

TEST_CASE_FIXTURE(ended_fixture, "scale rounds: an elastic job below its maximum on the freed server needs one") {
  add_job(l, 2, 1e5, 0, true);  // min 1, max 4, at 2 on server 1
  l.start(2, {{1, 2}}, 0, at(100));
  CHECK(freed_may_resize(l, aryl_policy(), options(), before));
}

TEST_CASE_FIXTURE(ended_fixture, "scale rounds: a job below its maximum elsewhere does not, unless a second server keeps its GPUs efficient") {
  l.preempt(0, at(100));
  l.start(0, {{0, 6}}, 0, at(100));  // server 0: the elastic job at 6 of its 8
  l.params.model.cross_server_eff = 0.66;  // a 7th worker on a second server: below the floor
  CHECK_FALSE(freed_may_resize(l, aryl_policy(), options(), before));
  auto o = options();
  o.min_extra_efficiency = 0.5;  // now it is offered
  CHECK(freed_may_resize(l, aryl_policy(), o, before));
}

TEST_CASE_FIXTURE(ended_fixture, "scale rounds: a queued elastic job may start above its minimum on the freed GPUs") {
  add_job(l, 2, 1e5, 100, true);
  CHECK(freed_may_resize(l, aryl_policy(), options(), before));
}

TEST_CASE("scale rounds: a spread job may consolidate, and a job on a slower type may move, onto freed GPUs") {
  auto l = make_ledger(3, 1);
  add_job(l, 4, 1e5, 0, true);  // min 2, max 8
  add_job(l, 8, 100);
  l.start(1, {{2, 8}}, 0, at(0));
  l.start(0, {{0, 4}, {1, 4}}, 0, at(0));  // at its maximum, over two servers
  allocation before{{2, 8}};
  l.finish(1, at(100));
  CHECK(freed_may_resize(l, aryl_policy(), options(), before));
  auto o = options();
  o.consolidate = false;
  CHECK_FALSE(freed_may_resize(l, aryl_policy(), o, before));
  l.preempt(0, at(100));
  l.start(0, {{3, 8}}, 1, at(100));  // at its maximum on one loaned T4 server
  CHECK(freed_may_resize(l, aryl_policy(), options(), before));  // it may move onto the V100s
  o = options();
  o.migrate = false;
  CHECK_FALSE(freed_may_resize(l, aryl_policy(), o, before));
}

TEST_CASE("scale rounds: a starts round sizes the job it starts on free GPUs and leaves running jobs as they are") {
  auto l = make_ledger(2);
  add_job(l, 4, 1e5, 0, true);  // min 2, max 8
  l.start(0, {{0, 8}}, 0, at(0));  // six extra workers on server 0
  add_job(l, 4, 1e5, 10, true);
  auto ds = plan_round(l, aryl_policy(), options(), at(10), round_scope::starts);
  REQUIRE(ds.size() == 1);
  CHECK(ds[0].what == decision::kind::start);
  CHECK(ds[0].job == 1);
  CHECK(count_workers(ds[0].alloc) > 2);  // above its minimum, on server 1 only
  CHECK(ds[0].alloc.front().first == 1);
  CHECK(l.jobs[0].workers == 8);
}

TEST_CASE("scale rounds: a start in a starts round that takes extra workers' GPUs scales their job in, and only that") {
  auto l = make_ledger(2);
  add_job(l, 4, 1e5, 0, true);
  l.start(0, {{0, 8}}, 0, at(0));
  add_job(l, 8, 1e5);
  l.start(1, {{1, 8}}, 0, at(0));
  add_job(l, 4, 1e5, 10);  // inelastic: fits only on the extras' GPUs
  auto ds = plan_round(l, aryl_policy(), options(), at(10), round_scope::starts);
  REQUIRE(ds.size() == 2);
  CHECK(ds[0].what == decision::kind::rescale);
  CHECK(ds[0].job == 0);
  CHECK(l.jobs[0].workers == 4);
  CHECK(ds[1].what == decision::kind::start);
  CHECK(ds[1].job == 2);
  CHECK(l.jobs[1].workers == 8);
}

TEST_CASE("scale rounds: GPUs a preemption frees after a start took extra workers' GPUs on that server are counted once") {
  // One server, full: elastic job 0 at 2 workers (one extra), a long rigid job 1 on 4 GPUs and
  // a rigid job 2 on 2 with too little left to be preempted. Job 3 takes job 0's extra GPU;
  // job 4 fits nowhere and preempts job 1, which frees 4 GPUs; job 3 could as well have used
  // one of those, so job 0 keeps its extra and 1 of the 4 is really free after jobs 3, 4 and
  // job 5's base. Counting 2 there let job 5 grow by 2 and take a GPU no one had freed.
  auto l = make_ledger(1);
  add_job(l, 2, 1e6, 0, true);
  add_job(l, 4, 1e6);
  add_job(l, 2, 1000);
  l.start(0, {{0, 2}}, 0, at(0));
  l.start(1, {{0, 4}}, 0, at(0));
  l.start(2, {{0, 2}}, 0, at(0));
  add_job(l, 1, 100, 10);
  add_job(l, 1, 200, 10);
  add_job(l, 2, 1e5, 10, true);  // min 1, max 4
  std::vector<decision> ds;
  REQUIRE_NOTHROW(ds = plan_round(l, aryl_policy(), options(), at(10), round_scope::starts));
  CHECK(l.jobs[1].status == job_status::queued);
  for (uint32_t id : {3u, 4u, 5u}) CHECK(l.jobs[id].status == job_status::running);
  CHECK(l.jobs[0].workers == 2);
  CHECK(l.jobs[5].workers == 2);
  CHECK(l.servers[0].free == 0);
}
