// Solver latency at scheduler-round sizes (docs/performance.md, "Solvers").
// Each benchmark iteration is one solve; besides Google Benchmark's mean it reports the
// median and p99 of single solves (counters p50_us, p99_us), since a round's deadline is
// about the tail.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <new>
#include <numeric>
#include <random>
#include <vector>

#include "solvers/jct_value.hpp"
#include "solvers/mckp.hpp"
#include "solvers/placement.hpp"
#include "solvers/reclaim.hpp"
#include "solvers/round_planner.hpp"

using namespace aryl;

// Heap allocations counted, to measure what a scheduling round allocates (single-threaded).
// The replaced operator new takes from malloc and the replaced delete gives to free, as they
// must pair; GCC 12 sees only the inlined free after a `new` and warns of a mismatch.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
namespace {
long heap_allocations = 0;
}
void* operator new(size_t n) {
  ++heap_allocations;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace {

/// Times `body` once per iteration and publishes the median and p99 in microseconds.
template <class Setup, class Body>
void timed_loop(benchmark::State& state, Setup setup, Body body) {
  std::vector<double> us;
  for (auto _ : state) {
    setup();
    auto t0 = std::chrono::steady_clock::now();
    body();
    auto t1 = std::chrono::steady_clock::now();
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  std::sort(us.begin(), us.end());
  auto at = [&](double q) { return us[std::min(us.size() - 1, static_cast<size_t>(q * us.size()))]; };
  state.counters["p50_us"] = at(0.50);
  state.counters["p99_us"] = at(0.99);
}

enum class shape { jct, nonconcave, random, correlated };

/// Elastic jobs as the scheduler sees them: requested 1-8 workers (powers of two), running
/// at their request, up to 16 more workers, remaining time from minutes to a day, 20 s
/// scaling overhead. `jct`: power-law speed-up (values concave except for jobs near
/// completion). `nonconcave`: an efficiency table that favours power-of-two worker counts
/// (ring all-reduce), so every class is non-concave and goes through the DP.
/// `random`: no structure (value of each k uniform in [0, 1000)). `correlated`: the bound
/// reduction's worst case, the classic "strongly correlated" knapsack: four random weights
/// in 1..16 per class, value exactly 10 w + 30, so every option ties within the bound gap,
/// nothing is fixed and the full DP runs.
mckp_input knapsack_instance(int gpus, int jobs, shape s, uint64_t seed) {
  std::mt19937_64 rng(seed);
  if (s == shape::random || s == shape::correlated) {
    mckp_input in;
    in.capacity = {gpus};
    std::uniform_real_distribution<double> value(0, 1000);
    for (int i = 0; i < jobs; ++i) {
      mckp_class c;
      if (s == shape::random) {
        for (int k = 1; k <= 16; ++k) c.items.push_back({k, value(rng)});
      } else {
        std::vector<int> w(16);
        std::iota(w.begin(), w.end(), 1);
        std::shuffle(w.begin(), w.end(), rng);
        for (int k = 0; k < 4; ++k) c.items.push_back({w[k], 10.0 * w[k] + 30});
      }
      in.classes.push_back(std::move(c));
    }
    return in;
  }
  throughput_model m;
  if (s == shape::nonconcave) {
    for (int w = 1; w <= 32; ++w) m.eff_table.push_back((w & (w - 1)) == 0 ? 1.0 : 0.8);
  }
  mckp_input in;
  in.capacity = {gpus};
  for (int i = 0; i < jobs; ++i) {
    scale_out_job j;
    j.requested = 1 << std::uniform_int_distribution<int>(0, 3)(rng);
    j.current_workers = j.requested;
    j.max_workers = j.requested + 16;
    j.remaining_work = std::exp(std::uniform_real_distribution<double>(std::log(300), std::log(86400))(rng));
    j.scale_overhead_s = 20;
    in.classes.push_back(scale_out_class(m, j));
  }
  return in;
}

/// Baseline for ratios: the textbook DP over (class, GPUs) with every item, no reductions
/// (value only, no backtracking, so it is a lower bound on that approach's cost).
double textbook_dp(const mckp_input& in) {
  std::vector<double> best(static_cast<size_t>(in.capacity[0]) + 1, 0.0), next;
  for (const auto& c : in.classes) {
    next = best;
    for (const auto& it : c.items)
      for (int w = it.weight; w <= in.capacity[0]; ++w)
        next[w] = std::max(next[w], best[w - it.weight] + it.value);
    best.swap(next);
  }
  return best.back();
}

void bm_baseline_textbook_dp(benchmark::State& state, shape s) {
  auto in = knapsack_instance(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)),
                              s, 42);
  timed_loop(state, [] {}, [&] { benchmark::DoNotOptimize(textbook_dp(in)); });
}

void bm_mckp(benchmark::State& state, shape s) {
  auto in = knapsack_instance(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)),
                              s, 42);
  timed_loop(state, [] {}, [&] { benchmark::DoNotOptimize(solve_mckp(in)); });
}

/// 500 loaned 8-GPU servers hosting 2,000 jobs: each on 1-2 loaned servers with 1-2
/// workers there (88% of loaned GPUs busy), a quarter also on a training server,
/// min_workers uniform in 1..workers; 50 servers to return.
reclaim_input reclaim_instance(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uni = [&](int a, int b) { return std::uniform_int_distribution<int>(a, b)(rng); };
  reclaim_input in;
  std::vector<int> free(500, 8);
  for (int s = 0; s < 500; ++s) in.loaned.push_back({s, 8});
  for (int j = 0; j < 2000; ++j) {
    reclaim_job job{j, 1, 1, {}};
    int total = 0, spread = uni(1, 2);
    for (int tries = 0; static_cast<int>(job.placement.size()) < spread && tries < 50; ++tries) {
      int s = uni(0, 499);
      int w = std::min(uni(0, 4) == 0 ? 2 : 1, free[s]);
      if (w == 0 || std::any_of(job.placement.begin(), job.placement.end(),
                                [&](auto& p) { return p.first == s; }))
        continue;
      free[s] -= w;
      job.placement.emplace_back(s, w);
      total += w;
    }
    if (uni(0, 3) == 0) job.placement.emplace_back(10000 + j, 2), total += 2;  // training
    job.min_workers = uni(1, total);
    in.jobs.push_back(job);
  }
  in.count = 50;
  return in;
}

void bm_reclaim_greedy(benchmark::State& state) {
  auto in = reclaim_instance(7);
  timed_loop(state, [] {}, [&] { benchmark::DoNotOptimize(reclaim_greedy(in)); });
}

/// 1,250 8-GPU servers of two types (1,000 V100-like, 250 T4-like), about half the GPUs
/// already busy; 1,000 requests of 1-32 GPUs (Philly-like sizes), a quarter typed, a tenth with a
/// preferred server.
struct placement_instance {
  std::vector<server_slot> servers;
  std::vector<place_request> requests;
};

placement_instance make_placement_instance() {
  std::mt19937_64 rng(11);
  auto uni = [&](int a, int b) { return std::uniform_int_distribution<int>(a, b)(rng); };
  placement_instance p;
  for (int s = 0; s < 1250; ++s) p.servers.push_back({s, s < 1000 ? 0 : 1, 8, uni(0, 8)});
  const int sizes[] = {1, 1, 1, 1, 2, 2, 4, 4, 8, 16, 32};
  for (int i = 0; i < 1000; ++i) {
    place_request r{i, sizes[uni(0, 10)], uni(0, 3) == 0 ? uni(0, 1) : -1, {}};
    if (uni(0, 9) == 0) r.prefer.push_back(uni(0, 1249));
    p.requests.push_back(r);
  }
  return p;
}

void bm_place_bfd(benchmark::State& state, placement_mode mode) {
  const auto p = make_placement_instance();
  std::vector<server_slot> work;
  timed_loop(state, [&] { work = p.servers; },
             [&] { benchmark::DoNotOptimize(place_bfd(mode, work, p.requests)); });
}

/// Baseline for ratios: the same placements by calling place_one (linear scans) per request.
void bm_baseline_place_one_loop(benchmark::State& state, placement_mode mode) {
  const auto p = make_placement_instance();
  std::vector<size_t> order(p.requests.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return p.requests[a].gpus > p.requests[b].gpus; });
  std::vector<server_slot> work;
  timed_loop(state, [&] { work = p.servers; }, [&] {
    for (size_t i : order) benchmark::DoNotOptimize(place_one(mode, work, p.requests[i]));
  });
}

/// One elastic round of policy aryl as the contended Philly run sees it: 64 V100 and 64 loaned
/// T4 8-GPU servers, every GPU busy with elastic jobs (1-8 requested workers, min half, max
/// twice) scaled out by earlier rounds, a queue of 300 jobs; the round follows one job's
/// completion. Reports the median and p99 latency and the median heap allocations per round.
void bm_elastic_round(benchmark::State& state) {
  std::mt19937_64 rng(5);
  cluster_ledger base;
  base.params.model = power_law_model(-0.05);
  base.params.type_speed = {1.0, 0.35};
  for (int i = 0; i < 128; ++i) {
    server_entry s;
    s.id = i;
    s.name = std::to_string(i);
    s.gpus = s.free = 8;
    s.gpu_type = i < 64 ? 0 : 1;
    s.home = i < 64 ? server_home::training : server_home::inference;
    s.mode = i < 64 ? server_mode::training : server_mode::loaned;
    base.servers.push_back(s);
  }
  const int sizes[] = {1, 1, 1, 2, 2, 4, 8};
  auto add = [&](double at_s) {
    job_entry j;
    j.index = static_cast<uint32_t>(base.jobs.size());
    j.submit = sim_time::from_seconds(at_s);
    j.gpus = sizes[std::uniform_int_distribution<int>(0, 6)(rng)];
    j.elastic = std::uniform_int_distribution<int>(0, 1)(rng) == 1;
    j.min_workers = j.elastic ? std::max(1, j.gpus / 2) : j.gpus;
    j.max_workers = j.elastic ? 2 * j.gpus : j.gpus;
    j.predicted_work = std::exp(std::uniform_real_distribution<double>(std::log(600), std::log(86400))(rng));
    base.jobs.push_back(j);
    base.submit(j.index, j.submit);
  };
  const auto& aryl_policy = *find_policy("aryl");
  planner_options o;
  double t = 0;
  while (base.running.size() < 150 && t < 5000) {
    add(t);
    plan_round(base, aryl_policy, o, sim_time::from_seconds(t));
    t += 10;
  }
  for (int i = 0; i < 300; ++i) add(t);
  plan_round(base, aryl_policy, o, sim_time::from_seconds(t));
  const uint32_t ending = *base.running.begin();
  const auto now = sim_time::from_seconds(t + 600);
  cluster_ledger l;
  std::vector<long> allocs;
  size_t decisions = 0;
  timed_loop(
      state,
      [&] {
        l = base;
        l.finish(ending, now);
      },
      [&] {
        long before = heap_allocations;
        auto out = plan_round(l, aryl_policy, o, now);
        allocs.push_back(heap_allocations - before);
        decisions = out.size();
      });
  std::sort(allocs.begin(), allocs.end());
  state.counters["allocs"] = static_cast<double>(allocs[allocs.size() / 2]);
  state.counters["decisions"] = static_cast<double>(decisions);
  // The same instant planned again until a round changes nothing: what such a round allocates.
  long idle = -1;
  for (int k = 0; k < 10 && idle < 0; ++k) {
    long before = heap_allocations;
    auto again = plan_round(l, aryl_policy, o, now);
    if (again.empty()) idle = heap_allocations - before;
  }
  state.counters["allocs_idle"] = static_cast<double>(idle);
  state.counters["running"] = static_cast<double>(base.running.size());
}

} // namespace

BENCHMARK(bm_elastic_round)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(bm_mckp, jct, shape::jct)
    ->Args({512, 100})->Args({4096, 500})->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(bm_mckp, nonconcave, shape::nonconcave)
    ->Args({512, 100})->Args({4096, 500})->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(bm_mckp, random, shape::random)
    ->Args({512, 100})->Args({4096, 500})->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(bm_mckp, correlated, shape::correlated)
    ->Args({512, 100})->Args({4096, 500})->Unit(benchmark::kMicrosecond);
BENCHMARK(bm_reclaim_greedy)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(bm_place_bfd, consolidated, placement_mode::consolidated)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(bm_place_bfd, count, placement_mode::count)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(bm_baseline_textbook_dp, jct, shape::jct)
    ->Args({512, 100})->Args({4096, 500})->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(bm_baseline_place_one_loop, consolidated, placement_mode::consolidated)
    ->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
