// The scheduler's pure core: ledger transitions and one round of each kind of policy.
// Each case states the cluster ledger (GPUs per job, queue) after the step it checks.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <stdexcept>

#include "solvers/round_planner.hpp"
#include "tests/solvers/ledger_fixtures.hpp"

using namespace aryl;
using aryl::test::add_job;
using aryl::test::at;
using aryl::test::make_ledger;

namespace {

int count(const std::vector<decision>& ds, decision::kind k) {
  int n = 0;
  for (auto& d : ds) n += d.what == k;
  return n;
}

/// The tests below were written for the myopic scaling rule (every idle GPU to extras);
/// the rule that makes sizes pay for themselves has its own tests (test_paid_scaling.cpp).
planner_options options() {
  planner_options o;
  o.placement = placement_mode::consolidated;
  return myopic_scaling(o);
}

/// One time in three, ends a running job of `l` drawn by `pick` (the random rounds' ends).
template <class Pick>
void maybe_end_one(cluster_ledger& l, Pick& pick, double now) {
  if (l.running.empty() || pick(3) != 0) return;
  auto it = l.running.begin();
  std::advance(it, pick(static_cast<int>(l.running.size())));
  l.finish(*it, at(now));
}

/// One time in two, starts a queued elastic job of `l` at its minimum split over the two
/// servers of its type with the most GPUs free, where they hold it (as a reclaim or a fault
/// can leave a job): a spread job that a later round may consolidate.
template <class Pick>
void maybe_start_spread(cluster_ledger& l, Pick& pick, double now) {
  if (l.queued.empty() || pick(2) != 0) return;
  auto it = l.queued.begin();
  std::advance(it, pick(static_cast<int>(l.queued.size())));
  auto& j = l.jobs[*it];
  if (!j.elastic || j.min_workers < 2) return;
  std::vector<const server_entry*> most;
  for (auto& s : l.servers)
    if (s.gpu_type == 0 && s.free > 0) most.push_back(&s);
  std::sort(most.begin(), most.end(), [](auto* a, auto* b) { return a->free != b->free ? a->free > b->free : a->id < b->id; });
  if (most.size() < 2) return;
  const int first = std::min(most[0]->free, j.min_workers - 1);
  const int second = j.min_workers - first;
  if (second > most[1]->free) return;
  allocation a{{most[0]->id, first}, {most[1]->id, second}};
  std::sort(a.begin(), a.end());  // an allocation is sorted by server
  l.start(j.index, a, 0, at(now));
}

/// Two rounds' decisions are the same, one by one (with their reasons if `reasons`).
void check_same(const std::vector<decision>& a, const std::vector<decision>& b, bool reasons) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].what == b[i].what);
    CHECK(a[i].job == b[i].job);
    CHECK(a[i].alloc == b[i].alloc);
    if (reasons) CHECK(a[i].why == b[i].why);
  }
}

} // namespace

TEST_CASE("ledger: a job cannot take more GPUs than a server has free") {
  auto l = make_ledger(1);
  add_job(l, 8, 100);
  add_job(l, 1, 100);
  l.start(0, {{0, 8}}, 0, at(0));
  CHECK_THROWS_AS(l.start(1, {{0, 1}}, 0, at(0)), std::logic_error);
  CHECK(l.servers[0].free == 0);
}

TEST_CASE("ledger: a restarted job keeps its progress and pays the restart overhead") {
  auto l = make_ledger(1);
  add_job(l, 1, 100);
  l.start(0, {{0, 1}}, 0, at(0));
  l.preempt(0, at(40));            // 40 done; queued again
  CHECK(l.jobs[0].progress.work_done == doctest::Approx(40));
  l.start(0, {{0, 1}}, 0, at(100));  // no progress until 160, then 60 s of work
  CHECK(l.jobs[0].progress.finish_time(100) == at(220));
  CHECK(l.jobs[0].queued_s == doctest::Approx(60));
  CHECK(l.jobs[0].preemptions == 1);
}

TEST_CASE("ledger: the running elastic jobs are the running jobs that are elastic, through starts, preemptions and ends") {
  auto l = make_ledger(2);
  for (int i = 0; i < 6; ++i) add_job(l, 2, 100, 0, i % 2 == 1);
  auto expected = [&] {
    std::vector<uint32_t> v;
    for (auto id : l.running)
      if (l.jobs[id].elastic) v.push_back(id);
    return v;
  };
  auto listed = [&] { return std::vector<uint32_t>(l.running_elastic.begin(), l.running_elastic.end()); };
  for (uint32_t id = 0; id < 6; ++id) l.start(id, {{static_cast<int>(id / 4), 2}}, 0, at(0));
  CHECK(listed() == std::vector<uint32_t>{1, 3, 5});
  l.preempt(3, at(10));
  l.finish(5, at(100));
  l.preempt(2, at(10));
  CHECK(listed() == expected());
  CHECK(listed() == std::vector<uint32_t>{1});
  l.start(3, {{1, 2}}, 0, at(20));
  CHECK(listed() == std::vector<uint32_t>{1, 3});
}

TEST_CASE("job progress: completion falls exactly on the microsecond") {
  job_progress p;
  p.change_rate(at(10), 0.5, 0);
  CHECK(p.finish_time(3) == at(16));
  p.change_rate(at(12), 1.0, 20);  // 1 unit done; 2 left after 20 s of overhead
  CHECK(p.finish_time(3) == at(34));
}

TEST_CASE("throughput: the power-law cache gives exactly std::pow") {
  auto cached = power_law_model(-0.15, 64);
  throughput_model plain;
  plain.eff_exponent = -0.15;
  for (int w = 1; w <= 100; ++w) CHECK(efficiency(cached, w) == efficiency(plain, w));
  CHECK(work_rate(cached, 4, 4, 1, 1.0) == doctest::Approx(1.0));
}

TEST_CASE("fifo: the first job that does not fit stops the walk") {
  // One server. Queue: 4, 8, 1 GPUs. Ledger after: job-0 on t0:4; 8 blocks; the 1 waits too.
  auto l = make_ledger(1);
  add_job(l, 4, 100);
  add_job(l, 8, 100);
  add_job(l, 1, 100);
  auto ds = plan_round(l, *find_policy("fifo"), options(), at(0));
  REQUIRE(ds.size() == 1);
  CHECK(ds[0].job == 0);
  CHECK(l.queued.size() == 2);
}

TEST_CASE("fifo with backfill: later jobs that fit start past a blocked one") {
  auto l = make_ledger(1);
  add_job(l, 4, 100);
  add_job(l, 8, 100);
  add_job(l, 1, 100);
  auto o = options();
  o.backfill = true;
  auto ds = plan_round(l, *find_policy("fifo"), o, at(0));
  CHECK(ds.size() == 2);
  CHECK(l.queued == std::set<uint32_t>{1});
}

TEST_CASE("sjf: the shortest predicted job goes first") {
  auto l = make_ledger(1);
  add_job(l, 8, 500);
  add_job(l, 8, 50);
  auto ds = plan_round(l, *find_policy("sjf"), options(), at(0));
  REQUIRE(ds.size() == 1);
  CHECK(ds[0].job == 1);
}

TEST_CASE("srtf: a shorter arrival preempts the running job with the most remaining time") {
  // t=0: job-0 (8 GPUs, 1000 s) runs. t=100: job-1 (8 GPUs, 50 s) arrives and preempts it.
  auto l = make_ledger(1);
  add_job(l, 8, 1000);
  plan_round(l, *find_policy("srtf"), options(), at(0));
  add_job(l, 8, 50, 100);
  auto ds = plan_round(l, *find_policy("srtf"), options(), at(100));
  REQUIRE(ds.size() == 2);
  CHECK(ds[0].what == decision::kind::preempt);
  CHECK(ds[0].job == 0);
  CHECK(ds[1].what == decision::kind::start);
  CHECK(ds[1].job == 1);
}

TEST_CASE("elastic: free GPUs go to elastic jobs up to their maximum") {
  // One server; one elastic 2-GPU job (min 1, max 4): it starts with all 4 workers.
  auto l = make_ledger(1);
  add_job(l, 2, 1000, 0, true);
  auto ds = plan_round(l, *find_policy("elastic-only"), options(), at(0));
  REQUIRE(ds.size() == 1);
  CHECK(l.jobs[0].workers == 4);
}

TEST_CASE("elastic: a queued job's base demand takes GPUs from extra workers") {
  // t=0: elastic job-0 (4 GPUs, min 2, max 8) fills t0. t=10: inelastic job-1 needs 6:
  // job-0 shrinks to 2, job-1 gets the rest of t0.
  auto l = make_ledger(1);
  add_job(l, 4, 10000, 0, true);
  plan_round(l, *find_policy("elastic-only"), options(), at(0));
  REQUIRE(l.jobs[0].workers == 8);
  add_job(l, 6, 100, 10);
  auto ds = plan_round(l, *find_policy("elastic-only"), options(), at(10));
  CHECK(count(ds, decision::kind::rescale) == 1);
  CHECK(count(ds, decision::kind::start) == 1);
  CHECK(l.jobs[0].workers == 2);
  CHECK(l.jobs[1].workers == 6);
  CHECK(l.jobs[0].scale_ins == 1);
}

TEST_CASE("elastic: a round with nothing new changes nothing") {
  auto l = make_ledger(2);
  add_job(l, 4, 10000, 0, true);
  add_job(l, 2, 5000, 0, true);
  add_job(l, 3, 100, 0, false);
  plan_round(l, *find_policy("elastic-only"), options(), at(0));
  auto again = plan_round(l, *find_policy("elastic-only"), options(), at(5));
  CHECK(again.empty());
}

TEST_CASE("loaning: only elastic jobs use loaned servers, and a long one moves to fast GPUs when they free") {
  // t0 (V100) is full with inelastic job-0; elastic job-1 (8 GPUs, min 4) starts on the loaned
  // T4 server. When job-0 finishes, job-1 moves to t0 (its remaining time drops far more than
  // the 60 s restart).
  auto l = make_ledger(1, 1);
  add_job(l, 8, 100);
  add_job(l, 8, 50000, 0, true);
  add_job(l, 1, 200000, 0, false);
  plan_round(l, *find_policy("aryl"), options(), at(0));
  CHECK(l.jobs[0].alloc == allocation{{0, 8}});
  CHECK(l.jobs[1].alloc == allocation{{1, 8}});   // on T4, scaled out to the whole server
  CHECK(l.jobs[2].status == job_status::queued);  // inelastic: not on loaned servers
  l.finish(0, at(100));
  plan_round(l, *find_policy("aryl"), options(), at(100));
  // Ledger: job-2 on t0:1 (queue first), job-1 moved to t0 with the 7 GPUs left.
  CHECK(l.jobs[2].alloc == allocation{{0, 1}});
  CHECK(l.jobs[1].alloc == allocation{{0, 7}});
  CHECK(l.jobs[1].migrations == 1);
}

TEST_CASE("a job pinned to a GPU type is never moved to faster GPUs of another type") {
  // As above, but job-1 asks for T4 (type 1): when t0 (V100) frees, it stays on the T4 server.
  auto l = make_ledger(1, 1);
  add_job(l, 8, 100);
  job_entry pinned;
  pinned.index = 1;
  pinned.gpus = 8;
  pinned.min_workers = 4;
  pinned.max_workers = 16;
  pinned.elastic = true;
  pinned.gpu_type = 1;
  pinned.predicted_work = 50000;
  l.jobs.push_back(pinned);
  l.submit(1, at(0));
  plan_round(l, *find_policy("aryl"), options(), at(0));
  REQUIRE(l.jobs[1].alloc == allocation{{1, 8}});
  l.finish(0, at(100));
  plan_round(l, *find_policy("aryl"), options(), at(100));
  CHECK(l.jobs[1].alloc == allocation{{1, 8}});
  CHECK(l.jobs[1].migrations == 0);
}

TEST_CASE("a long elastic job waits for its fastest type instead of starting on slower loaned GPUs, unless that type cannot hold it") {
  // t0 (V100) is full with job-0, too short for any later job to stop it; the loaned T4 server
  // is free. Then elastic jobs arrive at 10 s: `long_s` is a job predicted to run 200,000 s, past
  // long_job_s.
  planner_options o;
  auto arrive = [&](std::vector<std::pair<int, double>> jobs) {
    auto l = make_ledger(1, 1);
    add_job(l, 8, 15000);
    plan_round(l, *find_policy("aryl"), o, at(0));
    for (auto [gpus, work] : jobs) add_job(l, gpus, work, 10, true);
    plan_round(l, *find_policy("aryl"), o, at(10));
    return l;
  };
  const double long_s = 200000;
  o.long_job_s = 100000;
  auto on = arrive({{4, long_s}, {4, 5000}});
  CHECK(on.jobs[0].alloc == allocation{{0, 8}});
  CHECK(on.jobs[1].status == job_status::queued);
  CHECK(on.jobs[2].alloc.front().first == 1);
  // A long job of 16 GPUs (minimum 8) that the one V100 server cannot hold may use the T4s.
  CHECK(arrive({{16, long_s}}).jobs[1].alloc == allocation{{1, 8}});
  // Off, the long job starts on the T4s too.
  o.long_job_s = 0;
  auto off = arrive({{4, long_s}});
  CHECK(off.jobs[1].status == job_status::running);
  CHECK(off.jobs[1].alloc.front().first == 1);
}

TEST_CASE("a local round starts queued jobs, on extra workers' GPUs if it must, and grows or moves no job") {
  // Elastic job-0 (8 GPUs, min 4, max 16) takes both 8-GPU servers in a full round.
  auto l = make_ledger(2);
  add_job(l, 8, 100000, 0, true);
  plan_round(l, *find_policy("aryl"), options(), at(0));
  REQUIRE(l.jobs[0].workers == 16);
  // Job-1 needs 4 GPUs: only job-0's extras can give them; job-0 scales in, job-1 starts.
  add_job(l, 4, 1000, 10);
  auto ds = plan_round(l, *find_policy("aryl"), options(), at(10), round_scope::local);
  REQUIRE(ds.size() == 2);
  CHECK(ds[0].what == decision::kind::rescale);
  CHECK(ds[0].job == 0);
  CHECK(ds[1].what == decision::kind::start);
  CHECK(ds[1].job == 1);
  CHECK(l.jobs[0].workers == 12);
  CHECK(l.jobs[1].workers == 4);
  // Job-1 ends: 4 GPUs free. Job-2 (2 GPUs) starts on them; job-0 does not grow.
  l.finish(1, at(30));
  add_job(l, 2, 1000, 30);
  ds = plan_round(l, *find_policy("aryl"), options(), at(30), round_scope::local);
  REQUIRE(ds.size() == 1);
  CHECK(ds[0].what == decision::kind::start);
  CHECK(ds[0].job == 2);
  CHECK(l.jobs[2].workers == 2);
  CHECK(l.jobs[0].workers == 12);
  // The next full round gives job-0 the 2 GPUs left.
  plan_round(l, *find_policy("aryl"), options(), at(40));
  CHECK(l.jobs[0].workers == 14);
}

TEST_CASE("over random full and local rounds, the ledger's extra-worker counts, bases, totals, capacities and best fits match a recount, and local rounds never grow or move a job") {
  std::mt19937 rng(7);
  auto l = make_ledger(4, 2);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  int checked_local = 0;
  for (int step = 0; step < 400; ++step) {
    double now = 10.0 * step;
    if (pick(3) > 0) add_job(l, 1 + pick(12), 500 + pick(5000), now, pick(2) == 0);
    maybe_end_one(l, pick, now);
    // An idle inference server goes back to serving, or is loaned again.
    for (auto& sv : l.servers)
      if (sv.home == server_home::inference && sv.jobs.empty() && pick(4) == 0)
        l.set_mode(sv.id, sv.mode == server_mode::loaned ? server_mode::serving : server_mode::loaned);
    const bool local = pick(2) == 0;
    std::vector<std::pair<int, int>> before(l.jobs.size());  // (workers, type) of running jobs
    for (auto id : l.running) before[id] = {l.jobs[id].workers, l.jobs[id].alloc_type};
    std::vector<uint32_t> was_running(l.running.begin(), l.running.end());
    plan_round(l, *find_policy("aryl"), options(), at(now), local ? round_scope::local : round_scope::full);

    std::vector<int> extra(l.servers.size(), 0), used(l.servers.size(), 0);
    allocation base;
    for (auto id : l.running) {
      auto& j = l.jobs[id];
      for (auto& [sid, w] : j.alloc) used[static_cast<size_t>(sid)] += w;
      if (!j.elastic) continue;
      keep_on_fewest(j.alloc, j.min_workers, base);
      CHECK(j.base == base);
      for (auto& [sid, w] : j.alloc) {
        int e = w;
        for (auto& [bsid, bw] : base)
          if (bsid == sid) e -= bw;
        extra[static_cast<size_t>(sid)] += e;
      }
    }
    server_totals t;
    for (auto& s : l.servers) {
      CHECK(s.extra == extra[static_cast<size_t>(s.id)]);
      CHECK(s.free == s.gpus - used[static_cast<size_t>(s.id)]);
      auto m = static_cast<size_t>(s.mode);
      ++t.servers[m];
      t.gpus[m] += s.gpus;
      t.busy[m] += s.gpus - s.free;
    }
    for (size_t m = 0; m < server_totals::modes; ++m) {
      CHECK(l.totals().servers[m] == t.servers[m]);
      CHECK(l.totals().gpus[m] == t.gpus[m]);
      CHECK(l.totals().busy[m] == t.busy[m]);
    }
    // Capacity and best fit from the ledger = a recount and place_one's pick among the servers
    // it would scan, counting extra workers' GPUs free or not.
    for (int type = 0; type < 2; ++type)
      for (int g = 1; g <= 8; ++g)
        for (bool loaned : {false, true})
          for (bool with_extras : {false, true}) {
            std::vector<server_slot> slots;
            for (auto& s : l.servers)
              if (s.gpu_type == type && (s.mode == server_mode::training || (loaned && s.mode == server_mode::loaned)))
                slots.push_back({s.id, s.gpu_type, s.gpus, s.free + (with_extras ? s.extra : 0)});
            long capacity = 0, gpus = 0;
            for (auto& slot : slots) {
              capacity += slot.free;
              gpus += slot.gpus;
            }
            CHECK(l.capacity(type, loaned, with_extras) == capacity);
            CHECK(l.type_gpus(type, loaned) == gpus);
            auto a = place_one(placement_mode::consolidated, slots, {0, g, type, {}});
            CHECK(l.best_fit(type, g, loaned, with_extras) == (a ? a->front().first : -1));
          }
    if (local) {
      for (auto id : was_running) {
        if (l.jobs[id].status != job_status::running) continue;
        CHECK(l.jobs[id].workers <= before[id].first);
        CHECK(l.jobs[id].alloc_type == before[id].second);
        ++checked_local;
      }
    }
  }
  CHECK(checked_local > 100);
}

TEST_CASE("over random rounds of every scope and random preemption, protection, reservation and placement settings, no round takes a GPU that is not free") {
  // Short and long jobs, rigid and elastic, on a small cluster with loaned servers: starts
  // that take extra workers' GPUs, preemptions and growth meet in the same rounds. The ledger
  // refuses any over-commitment (a round would throw); after each round the servers' free
  // GPUs match a recount of the running jobs' allocations.
  int preempted = 0, rounds = 0, reserving = 0;
  constexpr unsigned seeds = 1000;
  constexpr int steps = 200;
  for (unsigned seed = 1; seed <= seeds; ++seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
    auto l = make_ledger(1 + pick(3), pick(2));
    planner_options o = options();
    const double ratios[] = {0, 2, 4, 8};
    o.preempt_ratio = ratios[pick(4)];
    o.free_gpus_first = pick(3) > 0;
    o.backfill = pick(4) == 0;
    o.reserve_after_s = pick(3) == 0 ? 200 : 0;
    o.shadow_backfill = pick(2) == 0;
    for (int step = 0; step < steps; ++step) {
      double now = 10.0 * step;
      for (int k = pick(5); k > 0; --k) add_job(l, 1 + pick(4), pick(2) ? 50 + pick(500) : 20000 + pick(200000), now, pick(2) == 0);
      maybe_end_one(l, pick, now);
      const round_scope scopes[] = {round_scope::full, round_scope::local, round_scope::starts};
      std::vector<decision> ds;
      REQUIRE_NOTHROW(ds = plan_round(l, *find_policy("aryl"), o, at(now), scopes[pick(3)]));
      for (auto& d : ds) preempted += d.what == decision::kind::preempt;
      ++rounds;
      reserving += !l.reserved_servers.empty();
      std::vector<int> used(l.servers.size(), 0);
      for (auto id : l.running)
        for (auto& [sid, w] : l.jobs[id].alloc) used[static_cast<size_t>(sid)] += w;
      for (auto& s : l.servers) REQUIRE(s.free == s.gpus - used[static_cast<size_t>(s.id)]);
    }
  }
  CHECK(rounds == static_cast<int>(seeds) * steps);
  CHECK(preempted > 50);
  CHECK(reserving > 50);
}

TEST_CASE("over random rounds, the preemption rule's index of servers kept between rounds decides as one read afresh") {
  // The ledger keeps, between rounds, each server's summary of the jobs the preemption rule
  // could stop and an index of the servers by them; a round reads only the servers listed
  // past the rule's bar. A copy of the ledger with the summaries dropped reads every server
  // again: both must make the same decisions, round after round, also for demands that
  // span servers.
  int preempted = 0, compared = 0;
  for (unsigned seed = 1; seed <= 300; ++seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
    auto l = make_ledger(2 + pick(3), pick(3));
    planner_options o = options();
    const double ratios[] = {2, 4, 8};
    o.preempt_ratio = ratios[pick(3)];
    o.max_preemptions = 1 + pick(4);
    o.preempt_for_speed = pick(2) == 0;
    o.free_gpus_first = pick(3) > 0;
    for (int step = 0; step < 120; ++step) {
      double now = 10.0 * step;
      for (int k = pick(4); k > 0; --k) {
        const int gpus = pick(6) == 0 ? 8 * (1 + pick(2)) : 1 + pick(4);
        add_job(l, gpus, pick(2) ? 50 + pick(500) : 20000 + pick(200000), now, pick(2) == 0);
      }
      maybe_end_one(l, pick, now);
      const auto scope = pick(3) == 0 ? round_scope::local : round_scope::full;
      auto fresh = l;
      fresh.stoppable_known = false;
      auto kept = plan_round(l, *find_policy("aryl"), o, at(now), scope);
      auto read = plan_round(fresh, *find_policy("aryl"), o, at(now), scope);
      check_same(kept, read, false);
      preempted += count(kept, decision::kind::preempt);
      ++compared;
    }
  }
  CHECK(compared == 300 * 120);
  CHECK(preempted > 200);
}

TEST_CASE("over random full rounds on fast and slow loaned servers, skipping the inert running jobs decides as planning every one") {
  // A full round builds no plan for a running elastic job no later step could change or let
  // change another's outcome: at its minimum on one full server, every larger size below the
  // efficiency floor, and on the fastest type or in a round where no faster type has a GPU
  // free, with no spread job on its server that may consolidate away (some jobs start spread,
  // as a reclaim or fault can leave them). A copy of the ledger planned with every running
  // job must decide the same.
  int compared = 0, moves = 0, resizes = 0, consolidations = 0, at_min_on_one = 0;
  for (unsigned seed = 1; seed <= 300; ++seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
    auto l = make_ledger(1 + pick(3), 1 + pick(3));
    // Factors below the 0.8 floor and at or above it (growth across servers allowed).
    const double factors[] = {profiled_cross_server_eff, 0.94, 1.0};
    l.params.model.cross_server_eff = factors[pick(3)];
    planner_options o;
    o.placement = placement_mode::consolidated;
    o.consolidate = pick(3) > 0;
    o.rescale_cooldown_s = pick(2) == 0 ? 0 : 300;
    o.preempt_ratio = pick(2) == 0 ? 0 : 4;
    for (int step = 0; step < 120; ++step) {
      double now = 10.0 * step;
      for (int k = pick(4); k > 0; --k) add_job(l, 1 + pick(6), pick(2) ? 50 + pick(500) : 20000 + pick(200000), now, pick(4) > 0);
      maybe_end_one(l, pick, now);
      maybe_start_spread(l, pick, now);
      auto every = l;
      auto o_every = o;
      o_every.skip_inert = false;
      auto skipped = plan_round(l, *find_policy("aryl"), o, at(now), round_scope::full);
      auto planned = plan_round(every, *find_policy("aryl"), o_every, at(now), round_scope::full);
      check_same(skipped, planned, true);
      // The ledger's count of spread elastic jobs per server, which the skip reads, is exact.
      std::vector<int> spread(l.servers.size(), 0);
      for (auto id : l.running)
        if (l.jobs[id].elastic && l.jobs[id].alloc.size() > 1)
          for (auto& [sid, w] : l.jobs[id].alloc) ++spread[static_cast<size_t>(sid)];
      for (auto& s : l.servers) REQUIRE(s.spread_elastic == spread[static_cast<size_t>(s.id)]);
      // So is its record of each running elastic job's server while at its minimum on one.
      for (auto id : l.running_elastic) {
        auto& j = l.jobs[id];
        const int home = j.alloc.size() == 1 && j.workers == j.min_workers ? j.alloc.front().first : -1;
        REQUIRE(l.min_home[id].server == home);
        REQUIRE(l.min_home[id].min_workers == j.min_workers);
        REQUIRE(l.min_home[id].max_workers == j.max_workers);
        at_min_on_one += home >= 0;
      }
      resizes += count(skipped, decision::kind::rescale);
      for (auto& d : skipped) consolidations += d.why.rfind("consolidate", 0) == 0;
      for (size_t i = 0; i < skipped.size(); ++i) {
        // A move: from a loaned T4 server onto a V100 one.
        moves += skipped[i].what == decision::kind::rescale && skipped[i].gpu_type == 0 && !skipped[i].before.empty() &&
                 l.servers[static_cast<size_t>(skipped[i].before.front().first)].gpu_type == 1;
      }
      ++compared;
    }
  }
  CHECK(compared == 300 * 120);
  CHECK(resizes > 1000);
  CHECK(moves > 50);
  CHECK(consolidations > 20);
  CHECK(at_min_on_one > 1000);
}

TEST_CASE("over random full rounds, a power-law model decides as its own efficiencies given as a table, whose sizes are each checked against the floor") {
  // Under a power law that does not rise, the knapsack stops offering a job's sizes at the
  // first that fails the efficiency floor (every larger one fails too), save the size it
  // keeps; a table is read size by size. The same efficiencies both ways must decide the
  // same, with jobs spread over servers (whose kept size lies past the sizes that fail).
  int compared = 0, resizes = 0;
  for (unsigned seed = 1; seed <= 300; ++seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
    auto l = make_ledger(1 + pick(3), pick(3));
    const double exponents[] = {-0.05, -0.2, -0.4};
    l.params.model = power_law_model(exponents[pick(3)]);
    l.params.model.cross_server_eff = pick(2) == 0 ? 1.0 : profiled_cross_server_eff;
    auto table = l.params.model;
    table.power_cache.reset();
    for (int w = 1; w <= 64; ++w) table.eff_table.push_back(efficiency(l.params.model, w));
    REQUIRE(falling_share(l.params.model));
    REQUIRE_FALSE(falling_share(table));
    planner_options o;
    o.placement = placement_mode::consolidated;
    const double floors[] = {0.5, 0.8, 0.9};
    o.min_extra_efficiency = floors[pick(3)];
    o.consolidate = pick(3) == 0;
    o.rescale_cooldown_s = pick(2) == 0 ? 0 : 300;
    for (int step = 0; step < 120; ++step) {
      double now = 10.0 * step;
      for (int k = pick(4); k > 0; --k) add_job(l, 1 + pick(8), pick(2) ? 50 + pick(500) : 20000 + pick(200000), now, pick(4) > 0);
      maybe_end_one(l, pick, now);
      auto read = l;
      read.params.model = table;
      const auto scope = pick(4) == 0 ? round_scope::starts : round_scope::full;
      auto law = plan_round(l, *find_policy("aryl"), o, at(now), scope);
      auto by_size = plan_round(read, *find_policy("aryl"), o, at(now), scope);
      check_same(law, by_size, true);
      resizes += count(law, decision::kind::rescale);
      ++compared;
    }
  }
  CHECK(compared == 300 * 120);
  CHECK(resizes > 1000);
}
