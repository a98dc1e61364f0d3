// Tenants: the quota reclaim's choice against brute force, quota lent and taken back in a
// round, fair share across tenants, and jobs without an estimate.
// Each case states the cluster ledger (GPUs per job, queue) after the step it checks.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <set>
#include <tuple>

#include "solvers/duration_estimate.hpp"
#include "solvers/round_planner.hpp"
#include "solvers/tenants.hpp"
#include "tests/solvers/ledger_fixtures.hpp"

using namespace aryl;
using aryl::test::add_job;
using aryl::test::at;
using aryl::test::make_ledger;

namespace {

/// The optimum by enumerating every subset: fewest victims, then fewest GPUs, then least
/// cost, then the smallest ascending ids.
quota_reclaim_result brute_force(const quota_reclaim_input& in) {
  quota_reclaim_result best;
  const size_t n = in.jobs.size();
  for (uint32_t mask = 1; mask < (1u << n); ++mask) {
    std::vector<uint32_t> ids;
    long gpus = 0;
    double cost = 0;
    for (size_t i = 0; i < n; ++i)
      if (mask & (1u << i)) {
        ids.push_back(in.jobs[i].job);
        gpus += in.jobs[i].gpus;
        cost += in.jobs[i].cost_s;
      }
    if (!quota_victims_valid(in, ids)) continue;
    std::sort(ids.begin(), ids.end());
    auto key = std::make_tuple(ids.size(), gpus, cost, ids);
    if (!best.ok || key < std::make_tuple(best.victims.size(), best.gpus, best.cost_s, best.victims)) {
      best.ok = true;
      best.victims = ids;
      best.gpus = gpus;
      best.cost_s = cost;
    }
  }
  return best;
}

quota_reclaim_input random_instance(std::mt19937_64& rng) {
  auto uni = [&](int a, int b) { return std::uniform_int_distribution<int>(a, b)(rng); };
  quota_reclaim_input in;
  int tenants = uni(1, 3);
  for (int t = 0; t < tenants; ++t) in.borrowed.push_back(uni(-2, 12));
  int jobs = uni(1, 10);
  for (int i = 0; i < jobs; ++i) {
    int gpus = uni(1, 8);
    in.jobs.push_back({static_cast<uint32_t>(10 + i), uni(0, tenants - 1), uni(0, gpus), gpus,
                       60 + 10 + 0.5 * gpus * uni(1, 3)});
  }
  in.need = uni(1, 16);
  return in;
}

tenant_entry tenant(const char* name, long quota, double weight, bool lend = true) {
  tenant_entry t;
  t.name = name;
  t.quota = quota;
  t.weight = weight;
  t.lend = lend;
  return t;
}

/// Two tenants on two 8-GPU V100 servers, each guaranteed 8 GPUs, both lending and borrowing.
cluster_ledger two_tenants(bool a_lends = true) {
  auto l = make_ledger(2);
  l.params.quotas = true;
  l.params.checkpoint_s = 10;
  l.tenants = {tenant_entry{}, tenant("a", 8, 1, a_lends), tenant("b", 8, 1)};
  return l;
}

uint32_t add_tenant_job(cluster_ledger& l, int tenant, int gpus, double work, double submit, bool elastic = false) {
  l.jobs.emplace_back();
  auto& j = l.jobs.back();
  j.index = static_cast<uint32_t>(l.jobs.size() - 1);
  j.submit = at(submit);
  j.gpus = gpus;
  j.min_workers = elastic ? std::max(1, gpus / 2) : gpus;
  j.max_workers = elastic ? 2 * gpus : gpus;
  j.elastic = elastic;
  j.predicted_work = work;
  j.tenant = tenant;
  l.submit(j.index, at(submit));
  return j.index;
}

int count(const std::vector<decision>& ds, decision::kind k) {
  int n = 0;
  for (auto& d : ds) n += d.what == k;
  return n;
}

/// A round as the scheduler runs it with tenants: the round, then the tenants' books.
std::vector<decision> round(cluster_ledger& l, const char* policy, double t,
                            round_scope scope = round_scope::full) {
  auto ds = plan_round(l, *find_policy(policy), planner_options{}, at(t), scope);
  settle_tenant_usage(l, *find_policy(policy), at(t));
  return ds;
}

} // namespace

TEST_CASE("quota reclaim: the fewest victims, checked by brute force on random small cases") {
  std::mt19937_64 rng(24);
  int solved = 0;
  for (int k = 0; k < 3000; ++k) {
    auto in = random_instance(rng);
    auto got = choose_quota_victims(in);
    auto want = brute_force(in);
    REQUIRE(got.exact);
    REQUIRE(got.ok == want.ok);
    if (!want.ok) continue;
    ++solved;
    CHECK(quota_victims_valid(in, got.victims));
    CHECK(got.victims == want.victims);
    CHECK(got.gpus == want.gpus);
  }
  CHECK(solved > 500);  // the instances are not all infeasible
}

TEST_CASE("quota reclaim: a tenant gives back no job once it holds no more than its quota") {
  // Tenant 0 borrows 2 GPUs: one of its 4-GPU jobs may go (taking it to 2 below its quota),
  // a second may not; the need of 8 is not met.
  quota_reclaim_input in;
  in.need = 8;
  in.borrowed = {2};
  in.jobs = {{1, 0, 4, 4, 72}, {2, 0, 4, 4, 72}};
  CHECK_FALSE(choose_quota_victims(in).ok);
  in.need = 4;
  auto r = choose_quota_victims(in);
  REQUIRE(r.ok);
  CHECK(r.victims == std::vector<uint32_t>{1});
}

TEST_CASE("quota: a reclaim's reason names both tenants in full, however long their names") {
  // The same reclaim as below, with tenant names of 300 characters: the reason in events.log
  // is not cut short.
  for (const char* policy : {"baseline", "aryl"}) {
    CAPTURE(policy);
    auto l = two_tenants();
    const std::string a_name(300, 'a'), b_name(300, 'b');
    l.tenants[1].name = a_name;
    l.tenants[2].name = b_name;
    for (int i = 0; i < 4; ++i) add_tenant_job(l, 2, 4, 10000 + i, 0);
    round(l, policy, 0);
    add_tenant_job(l, 1, 8, 5000, 10);
    auto ds = round(l, policy, 10);
    REQUIRE(count(ds, decision::kind::preempt) == 2);
    for (auto& d : ds)
      if (d.what == decision::kind::preempt)
        CHECK(d.why == "quota reclaim for job 4 of tenant " + a_name + ": tenant " + b_name + " borrows 8 GPUs beyond its quota");
  }
}

TEST_CASE("quota: idle quota is lent, and taken back with one preemption when its owner needs it") {
  for (const char* policy : {"baseline", "aryl"}) {
    CAPTURE(policy);
    auto l = two_tenants();
    // Tenant b's four 4-GPU jobs: 8 GPUs of its quota and 8 of a's idle quota, lent.
    for (int i = 0; i < 4; ++i) add_tenant_job(l, 2, 4, 10000 + i, 0);
    auto ds = round(l, policy, 0);
    CHECK(count(ds, decision::kind::start) == 4);
    CHECK(l.tenants[2].held_base == 16);  // ledger: b 16 GPUs (8 borrowed), a 0, queue empty
    // a's 8-GPU job: within its quota; the cluster is full of b's jobs. Two of b's jobs must
    // stop (the fewest that free one server), and a's job starts.
    auto a = add_tenant_job(l, 1, 8, 5000, 10);
    ds = round(l, policy, 10);
    CHECK(count(ds, decision::kind::preempt) == 2);
    for (auto& d : ds)
      if (d.what == decision::kind::preempt)
        CHECK(d.why == "quota reclaim for job 4 of tenant a: tenant b borrows 8 GPUs beyond its quota");
    CHECK(l.jobs[a].status == job_status::running);
    // ledger: a 8 GPUs on one server, b 8 GPUs (its quota), b's two stopped jobs queued
    CHECK(l.tenants[1].held_base == 8);
    CHECK(l.tenants[2].held_base == 8);
    CHECK(l.queued.size() == 2);
    // b holds only its quota now: its queued jobs neither start nor take anything back.
    ds = round(l, policy, 20);
    CHECK(ds.empty());
  }
}

TEST_CASE("quota: a reclaim never stops a job the same round started") {
  // Four servers. Jobs without a tenant (no quota: all borrowed) hold 2+2 GPUs on t1 and on
  // t2 and 4+4 on t3; t0 is empty. Tenant a (quota 8) and b (quota 7) each queue an 8-GPU job.
  auto l = make_ledger(4);
  l.params.quotas = true;
  l.tenants = {tenant_entry{}, tenant("a", 8, 1), tenant("b", 7, 1)};
  auto place = [&](int server, int gpus) {
    auto id = add_tenant_job(l, 0, gpus, 100000, 0);
    l.start(id, allocation{{server, gpus}}, 0, at(0));
  };
  for (int server : {1, 2}) place(server, 2), place(server, 2);
  place(3, 4), place(3, 4);
  settle_tenant_usage(l, *find_policy("baseline"), at(0));
  auto b = add_tenant_job(l, 2, 8, 10, 1);
  auto a = add_tenant_job(l, 1, 8, 5000, 1);
  auto ds = round(l, "baseline", 1);
  // b's shorter job goes first, on the one empty server (7 GPUs of its quota and 1 lent); a's
  // job, within its quota, then stops the two 2-GPU jobs on t1 rather than b's job just started.
  // ledger: t0 b 8; t1 a 8; t2 2+2; t3 4+4; two 2-GPU jobs queued
  CHECK(l.jobs[b].status == job_status::running);
  CHECK(l.jobs[a].status == job_status::running);
  CHECK(l.jobs[a].alloc == allocation{{1, 8}});
  CHECK(count(ds, decision::kind::preempt) == 2);
  for (auto& d : ds) CHECK_FALSE((d.what == decision::kind::preempt && d.job == b));
}

TEST_CASE("quota: a tenant that does not lend keeps its idle quota") {
  auto l = two_tenants(/*a_lends=*/false);
  for (int i = 0; i < 4; ++i) add_tenant_job(l, 2, 4, 10000 + i, 0);
  auto ds = round(l, "baseline", 0);
  // ledger: b 8 GPUs (its quota), two of its jobs queued; a's 8 idle GPUs stay idle
  CHECK(count(ds, decision::kind::start) == 2);
  CHECK(l.tenants[2].held_base == 8);
  CHECK(l.queued.size() == 2);
}

TEST_CASE("quota: a tenant that may not borrow runs within its quota only") {
  auto l = two_tenants();
  l.tenants[2].borrow = false;
  for (int i = 0; i < 4; ++i) add_tenant_job(l, 2, 4, 10000 + i, 0);
  round(l, "baseline", 0);
  CHECK(l.tenants[2].held_base == 8);  // ledger: b 8 GPUs, two jobs queued, 8 GPUs idle
  CHECK(l.queued.size() == 2);
}

TEST_CASE("quota: a tenant's job that ended frees its quota for the very next round") {
  auto l = two_tenants();
  l.tenants[2].quota = 4;
  l.tenants[2].borrow = false;
  auto first = add_tenant_job(l, 2, 4, 100, 0);
  auto second = add_tenant_job(l, 2, 4, 200, 0);
  round(l, "baseline", 0);
  // ledger: b's first job 4 GPUs (its whole quota); its second queued
  CHECK(l.jobs[first].status == job_status::running);
  CHECK(l.jobs[second].status == job_status::queued);
  l.finish(first, at(100));
  round(l, "baseline", 100);
  // ledger: b's second job 4 GPUs, nothing queued
  CHECK(l.jobs[second].status == job_status::running);
}

TEST_CASE("fair share: two saturated tenants converge to their weights 3:1") {
  auto l = make_ledger(2);
  l.params.fair_share = true;
  l.params.tenant_halflife_s = 3600;
  l.tenants = {tenant_entry{}, tenant("a", -1, 3), tenant("b", -1, 1)};
  // Both tenants keep 1-GPU jobs of 100 s queued; the short ones of b would win under SJF.
  for (int i = 0; i < 3000; ++i) {
    add_tenant_job(l, 1, 1, 100, 0);
    add_tenant_job(l, 2, 1, 50, 0);
  }
  const auto& sjf = *find_policy("baseline");
  double gpu_s[3] = {0, 0, 0};
  std::vector<std::pair<double, uint32_t>> ends;
  for (int step = 0; step <= 1500; ++step) {
    double t = step * 10.0;
    for (auto id : std::vector<uint32_t>(l.running.begin(), l.running.end())) {
      auto& j = l.jobs[id];
      if (j.progress.done_at(at(t)) >= j.predicted_work - 1e-9) l.finish(id, at(t));
    }
    for (auto& d : plan_round(l, sjf, planner_options{}, at(t))) (void)d;
    settle_tenant_usage(l, sjf, at(t));
    if (t >= 5000)  // from a cold start, while both queues stay full
      for (size_t k = 1; k < 3; ++k) gpu_s[k] += static_cast<double>(l.tenants[k].held_all) * 10;
  }
  double share_a = gpu_s[1] / (gpu_s[1] + gpu_s[2]);
  CHECK(share_a == doctest::Approx(0.75).epsilon(0.04));
}

TEST_CASE("without fair share, SJF across tenants gives the short jobs' tenant everything") {
  auto l = make_ledger(2);
  l.tenants = {tenant_entry{}, tenant("a", -1, 3), tenant("b", -1, 1)};
  for (int i = 0; i < 40; ++i) {
    add_tenant_job(l, 1, 1, 100, 0);
    add_tenant_job(l, 2, 1, 50, 0);
  }
  plan_round(l, *find_policy("baseline"), planner_options{}, at(0));
  settle_tenant_usage(l, *find_policy("baseline"), at(0));
  CHECK(l.tenants[2].held_all == 16);  // ledger: b 16 one-GPU jobs, a none
}

TEST_CASE("duration history: the expected remaining time is the mean residual life of ended jobs") {
  duration_history h;
  CHECK(h.expected_remaining(0, 0, 3600) == 3600);    // nothing ended: the prior
  CHECK(h.expected_remaining(0, 5000, 3600) == 5000);  // past the prior: as long again
  for (double d : {100.0, 200.0, 300.0, 10000.0}) h.add(1, d);
  CHECK(h.expected_remaining(1, 0, 3600) == doctest::Approx(2650));  // mean of all four
  // Having run 250 s: only 300 and 10,000 remain possible; mean 5150, minus 250.
  CHECK(h.expected_remaining(1, 250, 3600) == doctest::Approx(4900));
  // Past every ended job: as long again as it has run.
  CHECK(h.expected_remaining(1, 20000, 3600) == doctest::Approx(20000));
  // A tenant with fewer than min_tenant_samples ended jobs uses all tenants' history.
  for (int i = 0; i < 3; ++i) h.add(2, 50);
  CHECK(h.expected_remaining(2, 0, 3600) == doctest::Approx((10600.0 + 150) / 7));
  for (size_t i = 3; i < duration_history::min_tenant_samples; ++i) h.add(2, 50);
  CHECK(h.expected_remaining(2, 0, 3600) == doctest::Approx(50));
}

TEST_CASE("a job without an estimate is scheduled and valued from ended jobs' durations") {
  auto l = make_ledger(1);
  duration_history h;
  for (int i = 0; i < 20; ++i) h.add(0, 20000);
  // An elastic 2-GPU job (min 1, max 4) without an estimate, and no other job.
  auto id = add_job(l, 2, 0, 0, /*elastic=*/true);
  l.jobs[id].estimated = false;
  refresh_estimates(l, h, 3600, at(0));
  CHECK(l.jobs[id].predicted_work == doctest::Approx(20000));
  planner_options o;
  auto ds = plan_round(l, *find_policy("aryl"), o, at(0));
  REQUIRE(!ds.empty());
  // ledger: the job runs, and the knapsack, valuing 20,000 s of expected work, grew it to 4.
  CHECK(l.jobs[id].status == job_status::running);
  CHECK(l.jobs[id].workers == 4);
  // An hour later its estimate still totals 20,000 s: every ended job ran that long, so what
  // it has done comes off what is left.
  refresh_estimates(l, h, 3600, at(3600));
  CHECK(l.jobs[id].predicted_work == doctest::Approx(20000));
}

TEST_CASE("jobs without an estimate queue by expected remaining time: less attained first") {
  auto l = make_ledger(1);
  duration_history h;
  // Heavy-tailed history: most jobs short, a few very long.
  for (int i = 0; i < 18; ++i) h.add(0, 100);
  for (int i = 0; i < 2; ++i) h.add(0, 100000);
  auto fresh = add_job(l, 8, 0, 0);
  auto served = add_job(l, 8, 0, 0);
  l.jobs[fresh].estimated = l.jobs[served].estimated = false;
  l.jobs[served].progress.work_done = 500;  // preempted after 500 s: past every short job
  refresh_estimates(l, h, 3600, at(0));
  CHECK(l.jobs[fresh].predicted_remaining() < l.jobs[served].predicted_remaining());
  auto ds = plan_round(l, *find_policy("baseline"), planner_options{}, at(0));
  REQUIRE(ds.size() == 1);
  CHECK(ds[0].job == fresh);  // ledger: the fresh job runs on the server; the served one waits
}

TEST_CASE("quota: no round stops a job it started, on random workloads of three tenants") {
  // Random arrivals and ends under quotas (one tenant not lending, one not borrowing): in every
  // round, no job is both started and stopped, and every quota stop names a borrowing tenant.
  // Full, local and starts rounds take turns (scheduler.scale_rounds=capacity runs all three;
  // a local round starts jobs in the ledger at once, and must not stop them again).
  for (std::string policy : {"baseline", "aryl"})
  for (int seed : {7, 8, 9, 11}) {
    CAPTURE(policy);
    CAPTURE(seed);
    std::mt19937_64 rng(static_cast<uint64_t>(seed));
    auto uni = [&](int a, int b) { return std::uniform_int_distribution<int>(a, b)(rng); };
    auto l = make_ledger(4);
    l.params.quotas = l.params.fair_share = true;
    l.tenants = {tenant_entry{}, tenant("a", 8, 1, false), tenant("b", 8, 1), tenant("c", 8, 1)};
    l.tenants[3].borrow = false;
    int stops = 0;
    for (int step = 0; step < 1000; ++step) {
      double t = step * 60.0;
      for (auto id : std::vector<uint32_t>(l.running.begin(), l.running.end()))
        if (l.jobs[id].progress.done_at(at(t)) >= l.jobs[id].predicted_work) l.finish(id, at(t));
      for (int k = uni(0, 4); k > 0; --k)
        add_tenant_job(l, std::min(3, uni(1, 4)), 1 << uni(0, 3), uni(100, 6000), t, uni(0, 1) == 1);
      const round_scope scopes[] = {round_scope::full, round_scope::local, round_scope::starts};
      auto ds = round(l, policy.c_str(), t, scopes[step % 3]);
      std::set<uint32_t> started, stopped;
      for (auto& d : ds) {
        if (d.what == decision::kind::start) started.insert(d.job);
        if (d.what == decision::kind::preempt) {
          stopped.insert(d.job);
          if (d.why.rfind("quota reclaim", 0) == 0) ++stops;
        }
      }
      for (auto id : started) CHECK_MESSAGE(!stopped.count(id), "job " << id << " at t=" << t);
      // Tenant c never borrows: its base GPUs stay within its quota.
      CHECK(l.tenants[3].held_base <= 8);
    }
    CHECK(stops > 0);  // the workload does exercise reclaims
  }
}

namespace {

/// Tenant a's elastic 8-GPU job (min 4) runs at its minimum on t0 beside one of tenant b's
/// rigid 4-GPU jobs; b's other `b_on_t1` jobs hold t1. Ledger: t0 a:4 + b:4, t1 b:4 x n.
/// With the profiled cross-server cost, a's job grows only on t0 (onto t1 it would fail
/// the efficiency floor).
cluster_ledger grower(int b_on_t1, uint32_t& a_job, uint32_t& b_job) {
  auto l = two_tenants();
  l.params.model.cross_server_eff = profiled_cross_server_eff;
  a_job = add_tenant_job(l, 1, 8, 1e6, 0, true);
  l.start(a_job, {{0, 4}}, 0, at(0));
  b_job = add_tenant_job(l, 2, 4, 1e6, 0);
  l.start(b_job, {{0, 4}}, 0, at(0));
  for (int i = 0; i < b_on_t1; ++i) {
    auto id = add_tenant_job(l, 2, 4, 1e6, 0);
    l.start(id, {{1, 4}}, 0, at(0));
  }
  settle_tenant_usage(l, *find_policy("aryl"), at(0));
  return l;
}

} // namespace

TEST_CASE("quota growth: an elastic job below its requested size takes its quota back from a borrower to grow") {
  uint32_t a = 0, b = 0;
  // b holds 12 GPUs against its quota of 8: it borrows 4, which a's job lacks of its 8.
  auto l = grower(2, a, b);
  // Within a's job's cooldown (an hour from its start) nothing changes.
  CHECK(round(l, "aryl", 100).empty());
  auto ds = round(l, "aryl", 4000);
  // One stop, b's job beside a's on t0, and a's job grows to 8 there.
  // ledger: t0 a:8, t1 b:4+4 (b at its quota), b's stopped job queued
  REQUIRE(count(ds, decision::kind::preempt) == 1);
  for (auto& d : ds)
    if (d.what == decision::kind::preempt) {
      CHECK(d.job == b);
      CHECK(d.why.rfind("quota reclaim for job 0 of tenant a to grow to its requested 8 workers: tenant b borrows 4", 0) == 0);
    }
  CHECK(l.jobs[a].alloc == allocation{{0, 8}});
  CHECK(l.jobs[b].status == job_status::queued);
  // b holds its quota now: nothing more is taken back, nor does b's job start again.
  CHECK(round(l, "aryl", 8000).empty());
}

TEST_CASE("quota growth: a tenant within its quota is not stopped, and without quotas nothing grows by stops") {
  uint32_t a = 0, b = 0;
  // b holds 8 GPUs, its quota: it borrows nothing, so a's job stays at 4 (t0 has no GPU free).
  auto l = grower(1, a, b);
  auto ds = round(l, "aryl", 4000);
  CHECK(count(ds, decision::kind::preempt) == 0);
  CHECK(l.jobs[a].workers == 4);
  // Quotas off: the same borrowing ledger as the first case, no stop.
  auto free_for_all = grower(2, a, b);
  free_for_all.params.quotas = false;
  ds = round(free_for_all, "aryl", 4000);
  CHECK(count(ds, decision::kind::preempt) == 0);
  CHECK(free_for_all.jobs[a].workers == 4);
}

TEST_CASE("quota: a job its quota does not admit starts on an idle loaned server, outside every quota") {
  auto l = make_ledger(2, 1);  // t0, t1: 8 V100 each; i2: 8 T4 loaned
  l.params.quotas = true;
  l.tenants = {tenant_entry{}, tenant("a", 8, 1), tenant("b", 8, 1)};
  l.tenants[1].borrow = false;
  auto first = add_tenant_job(l, 1, 8, 10000, 0);
  round(l, "aryl", 0);
  // ledger: a's first job 8 GPUs on a training server (its whole quota)
  REQUIRE(l.jobs[first].status == job_status::running);
  auto second = add_tenant_job(l, 1, 4, 10000, 10, /*elastic=*/true);  // 2..8 workers
  round(l, "aryl", 10);
  // ledger: a's second job on the loaned server only; a's quota holds 8 as before
  REQUIRE(l.jobs[second].status == job_status::running);
  for (auto& [server, gpus] : l.jobs[second].alloc) CHECK(l.servers[static_cast<size_t>(server)].mode == server_mode::loaned);
  CHECK(l.tenants[1].held_base == 8);
}

TEST_CASE("quota: without an idle loaned server a job its quota does not admit waits, as before") {
  auto l = make_ledger(2);
  l.params.quotas = true;
  l.tenants = {tenant_entry{}, tenant("a", 8, 1), tenant("b", 8, 1)};
  l.tenants[1].borrow = false;
  add_tenant_job(l, 1, 8, 10000, 0);
  round(l, "aryl", 0);
  auto second = add_tenant_job(l, 1, 4, 10000, 10, /*elastic=*/true);
  round(l, "aryl", 10);
  // ledger: a 8 GPUs, its second job queued; b's 8 idle
  CHECK(l.jobs[second].status == job_status::queued);
  // Status gives the reason the round applied, not "fits now".
  CHECK(queue_wait_reason(l, *find_policy("aryl"), planner_options{}, second, {"V100", "T4"}) ==
        "quota: tenant a holds 8 of its quota 8 and may not borrow");
}

TEST_CASE("quota: a cordoned server's jobs are counted once, so a job borrows the other, idle server") {
  auto l = make_ledger(2);  // t0, t1: 8 V100 each
  l.params.quotas = true;
  l.tenants = {tenant_entry{}, tenant("a", 8, 1), tenant("b", 8, 1)};
  auto first = add_tenant_job(l, 1, 8, 10000, 0);
  round(l, "baseline", 0);
  REQUIRE(l.jobs[first].status == job_status::running);
  l.set_mode(l.jobs[first].alloc.front().first, server_mode::cordoned);
  // ledger: a 8 GPUs on a cordoned server; the other server's 8 idle; b queues nothing
  auto second = add_tenant_job(l, 0, 4, 10000, 10);  // no tenant: borrows only
  round(l, "baseline", 10);
  CHECK(l.jobs[second].status == job_status::running);
}

TEST_CASE("quota: a higher-class job whose quota is full stops a lower-class job of its own tenant, never another's") {
  auto l = two_tenants();
  for (int i = 0; i < 8; ++i) add_tenant_job(l, 1, 1, 100000, 0);
  for (int i = 0; i < 8; ++i) add_tenant_job(l, 2, 1, 100000, 0);
  round(l, "aryl", 0);
  // ledger: a and b 8 x 1 GPU of class 0 each, both at their quota, nothing free
  REQUIRE(l.running.size() == 16);
  auto high = add_tenant_job(l, 1, 1, 5000, 100);
  l.jobs[high].priority = 5;
  l.params.priorities = true;
  auto ds = round(l, "aryl", 100);
  // ledger: a's class-5 job on the GPU of one of a's class-0 jobs, queued again; b untouched
  REQUIRE(l.jobs[high].status == job_status::running);
  REQUIRE(count(ds, decision::kind::preempt) == 1);
  for (auto& d : ds)
    if (d.what == decision::kind::preempt) {
      CHECK(l.jobs[d.job].tenant == 1);
      CHECK(d.why.rfind("priority: preempted for job 16 (class 5 over its 0", 0) == 0);
    }
  CHECK(l.tenants[1].held_base == 8);
  CHECK(l.tenants[2].held_base == 8);
}
