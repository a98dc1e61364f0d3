// Job classes (solvers/priorities.hpp): the queue's order by class, preemption of lower
// classes when it pays, the bound on it, and aging, which keeps a stream of higher-class jobs
// from starving a lower one. Each case states the cluster ledger after the step it checks.
#include <doctest/doctest.h>

#include <random>
#include <vector>

#include "solvers/priorities.hpp"
#include "solvers/round_planner.hpp"
#include "tests/solvers/ledger_fixtures.hpp"

using namespace aryl;
using aryl::test::add_job;
using aryl::test::at;
using aryl::test::make_ledger;

namespace {

uint32_t add_class_job(cluster_ledger& l, int priority, int gpus, double work, double submit) {
  auto id = add_job(l, gpus, work, submit);
  l.jobs[id].priority = priority;
  if (priority != 0) l.params.priorities = true;  // as the scheduler does at admission
  return id;
}

/// Rounds without short-job preemption: what preempts here is the class alone.
planner_options no_short_preemption() {
  planner_options o;
  o.preempt_ratio = 0;
  return o;
}

int count(const std::vector<decision>& ds, decision::kind k) {
  int n = 0;
  for (auto& d : ds) n += d.what == k;
  return n;
}

/// Ends the running jobs whose work is done by `t`.
void finish_done(cluster_ledger& l, double t) {
  for (auto id : std::vector<uint32_t>(l.running.begin(), l.running.end()))
    if (l.jobs[id].progress.done_at(at(t)) >= l.jobs[id].predicted_work - 1e-9) l.finish(id, at(t));
}

} // namespace

TEST_CASE("priorities: a higher class starts first, the policy's order within a class") {
  for (const char* policy : {"baseline", "aryl", "fifo"}) {
    CAPTURE(policy);
    auto l = make_ledger(1);
    l.params.priority_aging_s = 0;
    auto low = add_class_job(l, 0, 8, 100, 0);      // shortest, first submitted, class 0
    auto slow = add_class_job(l, 2, 8, 2000, 1);    // class 2, longer
    auto quick = add_class_job(l, 2, 8, 1000, 2);   // class 2, shorter, submitted last
    auto ds = plan_round(l, *find_policy(policy), no_short_preemption(), at(2));
    // ledger: one class-2 job on t0 (the shorter under SJF, the earlier under FIFO); 2 queued
    const uint32_t first = std::string(policy) == "fifo" ? slow : quick;
    REQUIRE(count(ds, decision::kind::start) == 1);
    CHECK(ds[0].job == first);
    finish_done(l, 5000);
    plan_round(l, *find_policy(policy), no_short_preemption(), at(5000));
    // ledger: the other class-2 job on t0; the class-0 job still queued
    CHECK(l.jobs[first == slow ? quick : slow].status == job_status::running);
    CHECK(l.jobs[low].status == job_status::queued);
  }
}

TEST_CASE("priorities: with every class equal and no aging the queue is walked exactly as without classes") {
  // Random small queues on two servers: the decisions with priorities switched on but every
  // job of class 0 equal those with them off, decision for decision.
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    for (const char* policy : {"baseline", "aryl"}) {
      CAPTURE(trial);
      CAPTURE(policy);
      auto off = make_ledger(2);
      std::uniform_int_distribution<int> gpus(1, 8), n(1, 8);
      std::uniform_real_distribution<double> work(10, 5000);
      const int jobs = n(rng);
      for (int i = 0; i < jobs; ++i) add_job(off, gpus(rng), work(rng), i);
      auto on = off;
      on.params.priorities = true;
      on.params.priority_aging_s = 0;
      auto a = plan_round(off, *find_policy(policy), planner_options{}, at(10));
      auto b = plan_round(on, *find_policy(policy), planner_options{}, at(10));
      REQUIRE(a.size() == b.size());
      for (size_t k = 0; k < a.size(); ++k) {
        CHECK(a[k].job == b[k].job);
        CHECK(a[k].alloc == b[k].alloc);
        CHECK(a[k].why == b[k].why);
      }
    }
  }
}

TEST_CASE("priorities: a higher-class job preempts a lower one when it pays, counting its checkpoint") {
  auto l = make_ledger(1);
  l.params.checkpoint_s = 30;
  auto low = add_class_job(l, 0, 8, 100000, 0);
  plan_round(l, *find_policy("aryl"), no_short_preemption(), at(0));
  REQUIRE(l.jobs[low].status == job_status::running);
  // ledger: low 8 GPUs on t0 (100000 s to go); queue empty
  auto high = add_class_job(l, 1, 8, 1000, 100);
  auto ds = plan_round(l, *find_policy("aryl"), no_short_preemption(), at(100));
  // ledger: high 8 GPUs on t0; low queued, stopped once for a class
  REQUIRE(count(ds, decision::kind::preempt) == 1);
  CHECK(ds[0].job == low);
  CHECK(ds[0].why.rfind("priority: preempted for job 1 (class 1 over its 0, 1 of 1 stops for a class)", 0) == 0);
  CHECK(ds[0].why.find("restart and checkpoint 90 s") != std::string::npos);  // 60 s restart + 30 s checkpoint
  CHECK(l.jobs[high].status == job_status::running);
  CHECK(l.jobs[low].priority_preemptions == 1);
}

TEST_CASE("priorities: a lower job about to end is waited for, not preempted") {
  auto l = make_ledger(1);
  l.params.checkpoint_s = 30;
  auto low = add_class_job(l, 0, 8, 200, 0);
  plan_round(l, *find_policy("aryl"), no_short_preemption(), at(0));
  // ledger: low 8 GPUs on t0, 80 s to go at t=120, less than its 90 s restart and checkpoint
  auto high = add_class_job(l, 1, 8, 1000, 120);
  auto ds = plan_round(l, *find_policy("aryl"), no_short_preemption(), at(120));
  CHECK(count(ds, decision::kind::preempt) == 0);
  CHECK(l.jobs[low].status == job_status::running);
  CHECK(l.jobs[high].status == job_status::queued);
}

TEST_CASE("priorities: a job is stopped for a class at most max_preemptions times") {
  auto l = make_ledger(1);
  l.params.priority_max_preemptions = 1;
  l.params.priority_aging_s = 0;
  auto low = add_class_job(l, 0, 8, 100000, 0);
  plan_round(l, *find_policy("aryl"), no_short_preemption(), at(0));
  add_class_job(l, 1, 8, 500, 10);
  plan_round(l, *find_policy("aryl"), no_short_preemption(), at(10));
  // ledger: the first high job on t0; low queued (1 stop for a class)
  REQUIRE(l.jobs[low].priority_preemptions == 1);
  finish_done(l, 1000);
  plan_round(l, *find_policy("aryl"), no_short_preemption(), at(1000));
  REQUIRE(l.jobs[low].status == job_status::running);
  // ledger: low back on t0; a second high job arrives: low has had its one stop
  auto second = add_class_job(l, 1, 8, 500, 1100);
  auto ds = plan_round(l, *find_policy("aryl"), no_short_preemption(), at(1100));
  CHECK(count(ds, decision::kind::preempt) == 0);
  CHECK(l.jobs[low].status == job_status::running);
  CHECK(l.jobs[second].status == job_status::queued);
}

TEST_CASE("priorities: a stream of higher-class jobs does not starve a lower one (aging)") {
  // One 8-GPU server. A class-0 job of 3000 s, then a class-1 job of 400 s every 200 s: the
  // queue always holds a higher-class job. With aging (600 s per class) the low job's class
  // passes theirs while it waits, it starts, is stopped for a class at most once, and ends;
  // without aging it never runs.
  auto run = [](double aging_s) {
    auto l = make_ledger(1);
    l.params.priority_aging_s = aging_s;
    l.params.priority_max_preemptions = 1;
    auto low = add_class_job(l, 0, 8, 3000, 0);
    const auto& p = *find_policy("aryl");
    for (int step = 1; step <= 3000; ++step) {
      const double t = step * 10.0;
      finish_done(l, t);
      if (step % 20 == 0) add_class_job(l, 1, 8, 400, t);
      plan_round(l, p, no_short_preemption(), at(t));
      if (l.jobs[low].status == job_status::done) return t;
    }
    return -1.0;
  };
  const double with_aging = run(600);
  CHECK(with_aging > 0);
  CHECK(with_aging < 30000);
  CHECK(run(0) < 0);  // the contrast: without the bound the low job starves
}

TEST_CASE("effective class: a queued job gains one class per aging period of its whole wait") {
  job_entry j;
  j.priority = 2;
  j.status = job_status::queued;
  j.queued_s = 500;            // an earlier spell
  j.queued_since = at(1000);   // queued again since t=1000
  CHECK(effective_class(j, at(1000), 600) == 2);   // 500 s waited
  CHECK(effective_class(j, at(1100), 600) == 3);   // 600 s
  CHECK(effective_class(j, at(2300), 600) == 5);   // 1800 s
  CHECK(effective_class(j, at(2300), 0) == 2);     // no aging
  j.status = job_status::running;                   // a running job's wait stopped at its start
  CHECK(effective_class(j, at(9000), 600) == 2);
}
