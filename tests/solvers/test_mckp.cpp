// Multiple-choice knapsack: exactness against brute force, structure rules, tie-breaks.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>

#include "solvers/jct_value.hpp"
#include "solvers/mckp.hpp"

using namespace aryl;

namespace {

/// Best total value by enumerating every combination (none or one item per class).
double brute_force_value(const mckp_input& in) {
  const size_t n = in.classes.size();
  std::vector<int> pick(n, -1);
  double best = 0;
  while (true) {
    std::vector<long> used(in.capacity.size(), 0);
    double v = 0;
    for (size_t i = 0; i < n; ++i)
      if (pick[i] >= 0) {
        used[in.classes[i].gpu_type] += in.classes[i].items[pick[i]].weight;
        v += in.classes[i].items[pick[i]].value;
      }
    bool fits = true;
    for (size_t t = 0; t < used.size(); ++t) fits = fits && used[t] <= in.capacity[t];
    if (fits) best = std::max(best, v);
    size_t i = 0;  // odometer over (items + 1) choices per class
    for (; i < n; ++i) {
      if (++pick[i] < static_cast<int>(in.classes[i].items.size())) break;
      pick[i] = -1;
    }
    if (i == n) return best;
  }
}

/// Best total value by the textbook DP over (class, capacity) with every item: no
/// reductions, for instances too large to enumerate.
double reference_dp_value(const mckp_input& in) {
  double total = 0;
  for (size_t t = 0; t < in.capacity.size(); ++t) {
    std::vector<double> best(static_cast<size_t>(in.capacity[t]) + 1, 0.0);
    for (const auto& c : in.classes) {
      if (c.gpu_type != static_cast<int>(t)) continue;
      auto next = best;
      for (const auto& it : c.items)
        for (int w = it.weight; w <= in.capacity[t]; ++w)
          next[w] = std::max(next[w], best[w - it.weight] + it.value);
      best = std::move(next);
    }
    total += best.back();
  }
  return total;
}

/// Checks the result's contract: valid indices, capacity respected, value = sum of choices.
void check_feasible(const mckp_input& in, const mckp_result& r) {
  REQUIRE(r.choice.size() == in.classes.size());
  std::vector<long> used(in.capacity.size(), 0);
  double v = 0;
  for (size_t i = 0; i < in.classes.size(); ++i) {
    int c = r.choice[i];
    REQUIRE(c >= -1);
    REQUIRE(c < static_cast<int>(in.classes[i].items.size()));
    if (c < 0) continue;
    used[in.classes[i].gpu_type] += in.classes[i].items[c].weight;
    v += in.classes[i].items[c].value;
  }
  for (size_t t = 0; t < used.size(); ++t) CHECK(used[t] <= in.capacity[t]);
  CHECK(r.value == doctest::Approx(v).epsilon(1e-12));
}

/// Random small instance. Values are often integers so that ties occur.
mckp_input random_instance(std::mt19937_64& rng, bool concave_only) {
  std::uniform_int_distribution<int> types(1, 2), classes(0, 5), items(0, 4), weight(1, 6),
      cap(0, 14), coin(0, 3);
  std::uniform_real_distribution<double> value(-4, 12);
  mckp_input in;
  in.capacity.resize(static_cast<size_t>(types(rng)));
  for (auto& c : in.capacity) c = cap(rng);
  int n = classes(rng);
  for (int i = 0; i < n; ++i) {
    mckp_class c;
    c.gpu_type = std::uniform_int_distribution<int>(0, static_cast<int>(in.capacity.size()) - 1)(rng);
    int k = items(rng);
    if (concave_only || coin(rng) == 0) {
      // Weights 1..k with non-increasing marginal gains: the fast path's shape.
      double gain = value(rng) + 4, v = 0;
      for (int w = 1; w <= k; ++w) {
        v += gain;
        c.items.push_back({w, v});
        gain -= std::uniform_real_distribution<double>(0, 3)(rng);
      }
    } else {
      for (int j = 0; j < k; ++j) {
        double v = coin(rng) == 0 ? std::round(value(rng)) : value(rng);
        c.items.push_back({weight(rng), v});
      }
    }
    in.classes.push_back(std::move(c));
  }
  return in;
}

} // namespace

TEST_CASE("mckp: optimal value equals brute force on 10,000 random instances") {
  std::mt19937_64 rng(20240601);
  for (int trial = 0; trial < 10000; ++trial) {
    auto in = random_instance(rng, false);
    auto r = solve_mckp(in);
    CAPTURE(trial);
    check_feasible(in, r);
    CHECK(r.value == doctest::Approx(brute_force_value(in)).epsilon(1e-12));
  }
}

TEST_CASE("mckp: concave fast path equals brute force on 10,000 random concave instances") {
  std::mt19937_64 rng(777);
  for (int trial = 0; trial < 10000; ++trial) {
    auto in = random_instance(rng, true);
    auto r = solve_mckp(in);
    CAPTURE(trial);
    check_feasible(in, r);
    CHECK(r.value == doctest::Approx(brute_force_value(in)).epsilon(1e-12));
  }
}

TEST_CASE("mckp: JCT-reduction classes with overheads equal brute force") {
  // Realistic classes: concave except where the scaling overhead makes the first worker
  // worth less than the second (those go through the DP).
  std::mt19937_64 rng(4242);
  throughput_model m;
  for (int trial = 0; trial < 2000; ++trial) {
    mckp_input in;
    in.capacity = {std::uniform_int_distribution<int>(0, 12)(rng)};
    int n = std::uniform_int_distribution<int>(1, 4)(rng);
    for (int i = 0; i < n; ++i) {
      scale_out_job j;
      j.requested = std::uniform_int_distribution<int>(1, 4)(rng);
      j.current_workers = j.requested;
      j.max_workers = j.requested + std::uniform_int_distribution<int>(0, 4)(rng);
      j.remaining_work = std::uniform_real_distribution<double>(0, 400)(rng);
      j.scale_overhead_s = 20;
      in.classes.push_back(scale_out_class(m, j));
    }
    auto r = solve_mckp(in);
    CAPTURE(trial);
    check_feasible(in, r);
    CHECK(r.value == doctest::Approx(brute_force_value(in)).epsilon(1e-12));
  }
}

TEST_CASE("mckp: optimal value equals the textbook DP on 2,000 medium random instances") {
  // 20-60 classes and up to 200 GPUs: large enough that the bound reduction fixes many
  // classes and leaves a DP core, with every shape mixed in.
  std::mt19937_64 rng(160);
  throughput_model m;
  throughput_model pow2;
  for (int w = 1; w <= 32; ++w) pow2.eff_table.push_back((w & (w - 1)) == 0 ? 1.0 : 0.8);
  for (int trial = 0; trial < 2000; ++trial) {
    mckp_input in;
    in.capacity = {std::uniform_int_distribution<int>(0, 200)(rng),
                   std::uniform_int_distribution<int>(0, 50)(rng)};
    int n = std::uniform_int_distribution<int>(20, 60)(rng);
    for (int i = 0; i < n; ++i) {
      int kind = std::uniform_int_distribution<int>(0, 2)(rng);
      mckp_class c;
      if (kind == 2) {
        int k = std::uniform_int_distribution<int>(0, 8)(rng);
        for (int j = 0; j < k; ++j)
          c.items.push_back({std::uniform_int_distribution<int>(1, 10)(rng),
                             std::round(std::uniform_real_distribution<double>(-20, 100)(rng))});
      } else {
        scale_out_job j;
        j.requested = 1 << std::uniform_int_distribution<int>(0, 3)(rng);
        j.current_workers = j.requested;
        j.max_workers = j.requested + std::uniform_int_distribution<int>(0, 12)(rng);
        j.remaining_work = std::uniform_real_distribution<double>(10, 20000)(rng);
        j.scale_overhead_s = 20;
        c = scale_out_class(kind == 0 ? m : pow2, j);
      }
      c.gpu_type = std::uniform_int_distribution<int>(0, 1)(rng);
      in.classes.push_back(std::move(c));
    }
    auto r = solve_mckp(in);
    CAPTURE(trial);
    check_feasible(in, r);
    CHECK(r.value == doctest::Approx(reference_dp_value(in)).epsilon(1e-12));
  }
}

TEST_CASE("mckp: a heavier item that is not more valuable is never chosen") {
  // Class items: 2 GPUs worth 5, 3 GPUs worth 5. Capacity 3. Both give 5; the 3-GPU item
  // is dominated, so the answer is item 0 with value 5.
  mckp_input in{{3}, {{{{2, 5.0}, {3, 5.0}}, 0}}};
  auto r = solve_mckp(in);
  CHECK(r.choice == std::vector<int>{0});
  CHECK(r.value == 5.0);
}

TEST_CASE("mckp: items of value <= 0 are never chosen") {
  // Only a negative and a zero item: choosing none (value 0) is best and preferred on ties.
  mckp_input in{{10}, {{{{1, -1.0}, {2, 0.0}}, 0}}};
  auto r = solve_mckp(in);
  CHECK(r.choice == std::vector<int>{-1});
  CHECK(r.value == 0.0);
}

TEST_CASE("mckp: concave classes take the largest marginal gains") {
  // A: 1,2,3 GPUs worth 10,16,17 (gains 10,6,1); B: worth 8,15,17 (gains 8,7,2).
  // Capacity 4: the four largest gains are 10,8,7,6 -> A takes 2 GPUs, B 2: 16 + 15 = 31.
  mckp_input in{{4},
                {{{{1, 10.0}, {2, 16.0}, {3, 17.0}}, 0}, {{{1, 8.0}, {2, 15.0}, {3, 17.0}}, 0}}};
  auto r = solve_mckp(in);
  CHECK(r.choice == std::vector<int>{1, 1});
  CHECK(r.value == 31.0);
}

TEST_CASE("mckp: a non-concave class is solved exactly, not greedily") {
  // A: 1 GPU worth 1, 2 GPUs worth 10 (gains 1 then 9: not concave). B: 1 GPU worth 6.
  // Capacity 2. Greedy on gains would take B (6) then A's first GPU (1) = 7; optimum is A's
  // 2-GPU item alone = 10.
  mckp_input in{{2}, {{{{1, 1.0}, {2, 10.0}}, 0}, {{{1, 6.0}}, 0}}};
  auto r = solve_mckp(in);
  CHECK(r.choice == std::vector<int>{1, -1});
  CHECK(r.value == 10.0);
}

TEST_CASE("mckp: each GPU type has its own capacity") {
  // Type 0 has 1 GPU, type 1 has 2. The type-0 class wants 2 GPUs (does not fit); the
  // type-1 class takes its 2-GPU item.
  mckp_input in{{1, 2}, {{{{2, 9.0}}, 0}, {{{1, 3.0}, {2, 5.0}}, 1}}};
  auto r = solve_mckp(in);
  CHECK(r.choice == std::vector<int>{-1, 1});
  CHECK(r.value == 5.0);
}

TEST_CASE("mckp: zero capacity chooses nothing") {
  mckp_input in{{0}, {{{{1, 9.0}}, 0}}};
  auto r = solve_mckp(in);
  CHECK(r.choice == std::vector<int>{-1});
  CHECK(r.value == 0.0);
}

TEST_CASE("mckp: equal totals go to the earlier class") {
  // Two identical classes, one GPU: greedy path (weights 1..k) and DP path (weight 2) both
  // keep the first class.
  mckp_input greedy{{1}, {{{{1, 5.0}}, 0}, {{{1, 5.0}}, 0}}};
  CHECK(solve_mckp(greedy).choice == std::vector<int>{0, -1});
  mckp_input dp{{2}, {{{{2, 5.0}}, 0}, {{{2, 5.0}}, 0}}};
  CHECK(solve_mckp(dp).choice == std::vector<int>{0, -1});
}

TEST_CASE("mckp: equal totals go to the solution with fewer GPUs") {
  // A: 3 GPUs worth 5; B: 2 GPUs worth 5; capacity 3: one of them fits; B uses fewer GPUs.
  mckp_input in{{3}, {{{{3, 5.0}}, 0}, {{{2, 5.0}}, 0}}};
  CHECK(solve_mckp(in).choice == std::vector<int>{-1, 0});
  // Same across the two paths: A (DP, 2 GPUs) vs B (greedy, 1 GPU).
  mckp_input mixed{{2}, {{{{2, 5.0}}, 0}, {{{1, 5.0}}, 0}}};
  CHECK(solve_mckp(mixed).choice == std::vector<int>{-1, 0});
}

TEST_CASE("mckp: malformed input is rejected with a message naming the class") {
  CHECK_THROWS_WITH_AS(solve_mckp({{4}, {{{{0, 1.0}}, 0}}}),
                       "mckp: class 0 item 0 has weight < 1", std::invalid_argument);
  CHECK_THROWS_WITH_AS(solve_mckp({{4}, {{{{1, 1.0}}, 1}}}),
                       "mckp: class 0 has gpu_type 1 without a capacity", std::invalid_argument);
  CHECK_THROWS_AS(solve_mckp({{-1}, {}}), std::invalid_argument);
  CHECK_THROWS_AS(solve_mckp({{4}, {{{{1, std::nan("")}}, 0}}}), std::invalid_argument);
}

TEST_CASE("mckp: a 300-job instance stays within capacity") {
  // 300 jobs on 1,000 GPUs with JCT values: checks the contract at scale.
  std::mt19937_64 rng(99);
  throughput_model m;
  mckp_input in;
  in.capacity = {1000};
  for (int i = 0; i < 300; ++i) {
    scale_out_job j;
    j.requested = 1 << std::uniform_int_distribution<int>(0, 3)(rng);
    j.current_workers = j.requested;
    j.max_workers = j.requested * 2;
    j.remaining_work = std::uniform_real_distribution<double>(10, 20000)(rng);
    j.scale_overhead_s = 20;
    in.classes.push_back(scale_out_class(m, j));
  }
  auto r = solve_mckp(in);
  check_feasible(in, r);
  CHECK(r.value > 0);
}

TEST_CASE("mckp: the shortcut for knapsacks that hold every best item equals the full solver on 20,000 random instances") {
  // Capacities drawn both tight and ample, so that both the shortcut and the full solver
  // answer; items with ties in value and weight, and out of weight order.
  std::mt19937_64 rng(31337);
  std::uniform_int_distribution<int> roomy(0, 2), extra_cap(0, 40);
  int shortcut = 0, full = 0;
  for (int i = 0; i < 20000; ++i) {
    mckp_input in = random_instance(rng, i % 3 == 0);
    if (roomy(rng) > 0)
      for (auto& c : in.capacity) c += extra_cap(rng);
    mckp_result fast{7.0, {5, 5}}, slow{-3.0, {1}};
    solve_mckp(in, fast);
    detail::solve_mckp_unshortened(in, slow);
    REQUIRE(fast.choice == slow.choice);
    REQUIRE(fast.value == slow.value);
    // Which path answered: the shortcut whenever each type holds every best item.
    std::vector<long> need(in.capacity.size(), 0);
    for (size_t k = 0; k < in.classes.size(); ++k) {
      double v = 0;
      int w = 0;
      for (auto& it : in.classes[k].items)
        if (it.value > 0 && it.weight <= in.capacity[in.classes[k].gpu_type] &&
            (it.value > v || (it.value == v && it.weight < w))) {
          v = it.value;
          w = it.weight;
        }
      need[in.classes[k].gpu_type] += w;
    }
    bool fits = true;
    for (size_t t = 0; t < need.size(); ++t) fits = fits && need[t] <= in.capacity[t];
    (fits ? shortcut : full)++;
  }
  CHECK(shortcut > 2000);
  CHECK(full > 1000);
}

TEST_CASE("mckp: the shortcut rejects malformed input with the full solver's message") {
  // The first error in class order, whichever path would have answered.
  mckp_input in{{4}, {{{{1, 1.0}}, 0}, {{{1, 2.0}, {0, 1.0}}, 0}, {{{1, 1.0}}, 3}}};
  CHECK_THROWS_WITH_AS(solve_mckp(in), "mckp: class 1 item 1 has weight < 1", std::invalid_argument);
  mckp_result r;
  CHECK_THROWS_WITH_AS(detail::solve_mckp_unshortened(in, r), "mckp: class 1 item 1 has weight < 1",
                       std::invalid_argument);
  in.classes[1].items[1].weight = 2;
  CHECK_THROWS_WITH_AS(solve_mckp(in), "mckp: class 2 has gpu_type 3 without a capacity", std::invalid_argument);
  in.classes[0].items[0].value = std::numeric_limits<double>::infinity();
  CHECK_THROWS_WITH_AS(solve_mckp(in), "mckp: class 0 item 0 has a non-finite value", std::invalid_argument);
}
