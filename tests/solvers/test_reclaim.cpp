// Reclaiming loaned servers: exact solver against brute force, greedy's contract and
// quality, hand cases for each rule.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <stdexcept>

#include "solvers/reclaim.hpp"

using namespace aryl;

namespace {

/// Optimum by enumerating every count-subset of the loaned servers: least cost, then the
/// lexicographically smallest ascending id list.
reclaim_result brute_force(const reclaim_input& in) {
  std::vector<int> ids;
  for (const auto& s : in.loaned) ids.push_back(s.id);
  std::sort(ids.begin(), ids.end());
  const size_t n = ids.size(), r = static_cast<size_t>(in.count);
  std::vector<char> mask(n, 0);
  std::fill(mask.begin(), mask.begin() + static_cast<long>(r), 1);
  bool have = false;
  reclaim_result best;
  do {  // prev_permutation over a 1...10...0 mask yields subsets in lexicographic order
    std::vector<int> set;
    for (size_t i = 0; i < n; ++i)
      if (mask[i]) set.push_back(ids[i]);
    auto res = evaluate_reclaim(in, set);
    if (!have || res.cost < best.cost) {
      best = res;
      have = true;
    }
  } while (std::prev_permutation(mask.begin(), mask.end()));
  return best;
}

/// The greedy written from its statement: every round re-evaluates every candidate set
/// from scratch. The solver caches marginal costs; this checks the caching changes nothing.
std::vector<int> naive_greedy(const reclaim_input& in) {
  std::map<int, long> busy;
  for (const auto& s : in.loaned) busy[s.id] = 0;
  for (const auto& j : in.jobs)
    for (auto [server, w] : j.placement)
      if (busy.count(server)) busy[server] += static_cast<long>(w) * j.gpus_per_worker;
  std::vector<int> chosen;
  for (auto& [id, b] : busy)  // ascending id
    if (b == 0 && chosen.size() < static_cast<size_t>(in.count)) chosen.push_back(id);
  while (chosen.size() < static_cast<size_t>(in.count)) {
    int pick = 0;
    bool have = false;
    reclaim_cost pick_cost;
    for (auto& [id, b] : busy) {
      if (std::find(chosen.begin(), chosen.end(), id) != chosen.end()) continue;
      auto with = chosen;
      with.push_back(id);
      auto c = evaluate_reclaim(in, with).cost;
      if (!have || c < pick_cost || (c == pick_cost && b < busy[pick])) {
        pick = id;
        pick_cost = c;
        have = true;
      }
    }
    chosen.push_back(pick);
  }
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

/// Random instance: 1..max_servers loaned servers (ids 1.. or 1000..), up to 2 training servers
/// (ids 100..), up to max_jobs jobs packed onto free GPUs.
reclaim_input random_instance(std::mt19937_64& rng, int max_servers = 8, int max_jobs = 8) {
  auto uni = [&](int a, int b) { return std::uniform_int_distribution<int>(a, b)(rng); };
  reclaim_input in;
  std::vector<std::pair<int, int>> free;  // (server id, free GPUs)
  int n = uni(1, max_servers);
  // Half the instances use widely spaced server ids (the solver's sparse id lookup).
  const int stride = uni(0, 1) == 0 ? 1 : 1000;
  for (int s = 0; s < n; ++s) {
    int gpus = uni(2, 8);
    in.loaned.push_back({(s + 1) * stride, gpus});
    free.emplace_back((s + 1) * stride, gpus);
  }
  int training = uni(0, 2);
  for (int t = 0; t < training; ++t) free.emplace_back(100 + t, 8);
  int jobs = uni(0, max_jobs);
  for (int j = 0; j < jobs; ++j) {
    reclaim_job job;
    job.id = 1000 + j;
    job.gpus_per_worker = uni(1, 2);
    int spread = uni(1, 3), total = 0;
    for (int k = 0; k < spread; ++k) {
      auto& [id, f] = free[static_cast<size_t>(uni(0, static_cast<int>(free.size()) - 1))];
      int w = std::min(uni(1, 3), f / job.gpus_per_worker);
      bool repeat = std::any_of(job.placement.begin(), job.placement.end(),
                                [&](auto& p) { return p.first == id; });
      if (w <= 0 || repeat) continue;
      f -= w * job.gpus_per_worker;
      job.placement.emplace_back(id, w);
      total += w;
    }
    if (total == 0) continue;
    job.min_workers = uni(1, total);
    in.jobs.push_back(job);
  }
  in.count = uni(0, n);
  return in;
}

/// The result agrees with a recomputation from its returned set, and returns count
/// distinct loaned servers.
void check_consistent(const reclaim_input& in, const reclaim_result& r) {
  REQUIRE(r.returned.size() == static_cast<size_t>(in.count));
  std::set<int> loaned;
  for (const auto& s : in.loaned) loaned.insert(s.id);
  std::set<int> distinct(r.returned.begin(), r.returned.end());
  CHECK(distinct.size() == r.returned.size());
  for (int id : r.returned) CHECK(loaned.count(id) == 1);
  auto again = evaluate_reclaim(in, r.returned);
  CHECK(again.cost == r.cost);
  CHECK(again.preempted == r.preempted);
  CHECK(again.scaled_in == r.scaled_in);
  CHECK(static_cast<int>(r.preempted.size()) == r.cost.preempted_jobs);
}

} // namespace

TEST_CASE("reclaim: exact equals brute force (cost and tie-break) on 10,000 random instances") {
  std::mt19937_64 rng(31337);
  for (int trial = 0; trial < 10000; ++trial) {
    auto in = random_instance(rng);
    CAPTURE(trial);
    auto exact = reclaim_exact(in);
    auto brute = brute_force(in);
    check_consistent(in, exact);
    CHECK(exact.cost == brute.cost);
    CHECK(exact.returned == brute.returned);
  }
}

TEST_CASE("reclaim: greedy returns exactly count servers with consistent costs, and its "
          "preemptions stay within 10% of the optimum") {
  std::mt19937_64 rng(8086);
  long greedy_preempted = 0, exact_preempted = 0, worse = 0, trials = 10000;
  for (int trial = 0; trial < trials; ++trial) {
    auto in = random_instance(rng);
    CAPTURE(trial);
    auto greedy = reclaim_greedy(in);
    auto exact = reclaim_exact(in);
    check_consistent(in, greedy);
    CHECK(exact.cost <= greedy.cost);
    greedy_preempted += greedy.cost.preempted_jobs;
    exact_preempted += exact.cost.preempted_jobs;
    worse += greedy.cost > exact.cost;
  }
  MESSAGE("greedy preemptions " << greedy_preempted << ", optimum " << exact_preempted
          << ", instances where greedy's cost is worse: " << worse << " of " << trials);
  CHECK(greedy_preempted <= exact_preempted * 1.10);
}

TEST_CASE("reclaim: on 500 medium instances (up to 16 loaned servers, 24 jobs) greedy's "
          "preemptions stay within 10% of the optimum") {
  std::mt19937_64 rng(65);
  long greedy_preempted = 0, exact_preempted = 0, worse = 0, trials = 500;
  for (int trial = 0; trial < trials; ++trial) {
    auto in = random_instance(rng, 16, 24);
    CAPTURE(trial);
    auto greedy = reclaim_greedy(in);
    auto exact = reclaim_exact(in);
    check_consistent(in, greedy);
    check_consistent(in, exact);
    CHECK(exact.cost <= greedy.cost);
    greedy_preempted += greedy.cost.preempted_jobs;
    exact_preempted += exact.cost.preempted_jobs;
    worse += greedy.cost > exact.cost;
  }
  MESSAGE("medium: greedy preemptions " << greedy_preempted << ", optimum " << exact_preempted
          << ", instances where greedy's cost is worse: " << worse << " of " << trials);
  CHECK(greedy_preempted <= exact_preempted * 1.10);
}

TEST_CASE("reclaim: greedy picks exactly what its statement says, on 10,000 random instances") {
  std::mt19937_64 rng(4004);
  for (int trial = 0; trial < 10000; ++trial) {
    auto in = random_instance(rng);
    CAPTURE(trial);
    CHECK(reclaim_greedy(in).returned == naive_greedy(in));
  }
}

TEST_CASE("reclaim: idle servers are returned first, lowest id first") {
  // Server 1 hosts a job; 2, 3 and 4 are idle. Returning two: the idle 2 and 3, no cost.
  reclaim_input in{{{1, 8}, {2, 8}, {3, 8}, {4, 8}}, {{7, 1, 1, {{1, 2}}}}, 2};
  for (auto* solve : {&reclaim_greedy, &reclaim_exact}) {
    auto r = solve(in);
    CHECK(r.returned == std::vector<int>{2, 3});
    CHECK(r.cost == reclaim_cost{});
  }
}

TEST_CASE("reclaim: a job counts once however many of its servers are returned") {
  // Job 1: 2 workers on server 1 and 2 on server 2, min 3: losing either server preempts it.
  // Job 2: 1 worker on server 3 and 1 on training server 100, min 1: losing 3 scales it in.
  // Return 2. Optimum {1, 2}: job 1 preempted once (4 GPUs), nothing scaled in.
  // Greedy first takes the cheapest single server, 3 (one scale-in), then 1 (preempts job
  // 1): {1, 3}, one preemption plus one scale-in.
  reclaim_input in{{{1, 4}, {2, 4}, {3, 4}},
                   {{1, 3, 1, {{1, 2}, {2, 2}}}, {2, 1, 1, {{3, 1}, {100, 1}}}},
                   2};
  auto exact = reclaim_exact(in);
  CHECK(exact.returned == std::vector<int>{1, 2});
  CHECK(exact.preempted == std::vector<int>{1});
  CHECK(exact.scaled_in.empty());
  CHECK(exact.cost == reclaim_cost{1, 4, 0});
  auto greedy = reclaim_greedy(in);
  CHECK(greedy.returned == std::vector<int>{1, 3});
  CHECK(greedy.cost == reclaim_cost{1, 4, 1});
  CHECK(greedy.scaled_in == std::vector<std::pair<int, int>>{{2, 1}});
}

TEST_CASE("reclaim: a preempted job's GPUs include its workers on training servers") {
  // Job 5: 1 worker (2 GPUs each) on loaned server 1 and 3 on training server 100, min 4.
  // Returning server 1 leaves 3 < 4 workers: preempted, all 4 workers x 2 = 8 GPUs.
  reclaim_input in{{{1, 8}}, {{5, 4, 2, {{1, 1}, {100, 3}}}}, 1};
  auto r = reclaim_greedy(in);
  CHECK(r.preempted == std::vector<int>{5});
  CHECK(r.cost == reclaim_cost{1, 8, 0});
}

TEST_CASE("reclaim: fewer preempted GPUs beat fewer scale-ins") {
  // Server 1: a 1-worker job (min 1, 8 GPUs per worker) -> preempting it costs 8 GPUs.
  // Server 2: a 4-worker job all there (min 1, 1 GPU each) -> preempted, 4 GPUs.
  // Both preempt one job; server 2 loses fewer GPUs, so it is returned.
  reclaim_input in{{{1, 8}, {2, 8}}, {{1, 1, 8, {{1, 1}}}, {2, 1, 1, {{2, 4}}}}, 1};
  CHECK(reclaim_greedy(in).returned == std::vector<int>{2});
  CHECK(reclaim_exact(in).returned == std::vector<int>{2});
}

TEST_CASE("reclaim: greedy ties on cost go to the server with fewer busy GPUs") {
  // Server 1: 1 worker of a 4-GPU-per-worker job (min 1, 2 workers): scale-in 1, busy 4.
  // Server 2: 1 worker of a 1-GPU-per-worker job (min 1, 2 workers): scale-in 1, busy 1.
  // Equal marginal cost; server 2 has fewer busy GPUs despite its higher id.
  reclaim_input in{{{1, 8}, {2, 8}},
                   {{1, 1, 4, {{1, 1}, {100, 1}}}, {2, 1, 1, {{2, 1}, {100, 1}}}},
                   1};
  CHECK(reclaim_greedy(in).returned == std::vector<int>{2});
}

TEST_CASE("reclaim: returning nothing costs nothing") {
  reclaim_input in{{{1, 8}}, {{1, 1, 1, {{1, 2}}}}, 0};
  auto r = reclaim_exact(in);
  CHECK(r.returned.empty());
  CHECK(r.cost == reclaim_cost{});
}

TEST_CASE("reclaim: malformed input is rejected with a one-line reason") {
  CHECK_THROWS_WITH_AS(reclaim_greedy({{{1, 8}}, {}, 2}),
                       "reclaim: count 2 is not between 0 and the 1 loaned servers",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(reclaim_greedy({{{1, 8}, {1, 8}}, {}, 1}), "reclaim: server id 1 repeats",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(reclaim_exact({{{1, 2}}, {{1, 1, 1, {{1, 3}}}}, 1}),
                       "reclaim: workers on server 1 need more than its 2 GPUs",
                       std::invalid_argument);
  CHECK_THROWS_AS(reclaim_greedy({{{1, 8}}, {{1, 0, 1, {{1, 1}}}}, 1}), std::invalid_argument);
  CHECK_THROWS_AS(reclaim_greedy({{{1, 8}}, {{1, 1, 1, {{1, 0}}}}, 1}), std::invalid_argument);
}

TEST_CASE("reclaim: exact handles 20 loaned servers") {
  // Larger than the brute-force tests: 20 servers, 30 jobs, return 10; checks the contract
  // and that exact is no worse than greedy.
  std::mt19937_64 rng(12);
  auto uni = [&](int a, int b) { return std::uniform_int_distribution<int>(a, b)(rng); };
  reclaim_input in;
  std::vector<int> free(20, 8);
  for (int s = 0; s < 20; ++s) in.loaned.push_back({s + 1, 8});
  for (int j = 0; j < 30; ++j) {
    reclaim_job job{j, 1, 1, {}};
    int total = 0;
    for (int k = 0; k < 3; ++k) {
      int s = uni(0, 19);
      int w = std::min(uni(1, 2), free[s]);
      if (w == 0 || std::any_of(job.placement.begin(), job.placement.end(),
                                [&](auto& p) { return p.first == s + 1; }))
        continue;
      free[s] -= w;
      job.placement.emplace_back(s + 1, w);
      total += w;
    }
    if (total == 0) continue;
    job.min_workers = uni(1, total);
    in.jobs.push_back(job);
  }
  in.count = 10;
  auto exact = reclaim_exact(in);
  check_consistent(in, exact);
  CHECK(exact.cost <= reclaim_greedy(in).cost);
}
