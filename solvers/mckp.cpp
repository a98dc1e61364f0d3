#include "solvers/mckp.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

namespace aryl {
namespace {

constexpr double neg_inf = -std::numeric_limits<double>::infinity();
constexpr uint16_t no_item = 0xffff;

struct kept_item {
  int weight;
  double value;
  int index;  ///< index in the caller's class
};

/// A class reduced to the items that can be in some optimum: value > 0 (else "none" is at
/// least as good), weight <= capacity, and not dominated (an item is dropped when a lighter
/// or equal-weight item is at least as valuable). Kept items have strictly increasing
/// weights and strictly increasing values.
std::vector<kept_item> undominated(const mckp_class& c, int capacity) {
  std::vector<kept_item> all;
  for (size_t i = 0; i < c.items.size(); ++i) {
    const auto& it = c.items[i];
    if (it.value > 0 && it.weight <= capacity)
      all.push_back({it.weight, it.value, static_cast<int>(i)});
  }
  std::sort(all.begin(), all.end(), [](const kept_item& a, const kept_item& b) {
    if (a.weight != b.weight) return a.weight < b.weight;
    if (a.value != b.value) return a.value > b.value;
    return a.index < b.index;
  });
  std::vector<kept_item> kept;
  // Sorted by weight, then value descending: an item survives only if it beats every
  // lighter survivor, which also drops every equal-weight item but the first.
  for (const auto& it : all)
    if (kept.empty() || it.value > kept.back().value) kept.push_back(it);
  return kept;
}

/// The concave fast path applies to a class whose kept items have weights exactly 1..k and
/// whose marginal gains v(1)-0, v(2)-v(1), ... are non-increasing (docs/solvers.md).
bool is_concave_unit(const std::vector<kept_item>& items) {
  double prev_value = 0;
  double prev_gain = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].weight != static_cast<int>(i) + 1) return false;
    double gain = items[i].value - prev_value;
    if (gain > prev_gain) return false;
    prev_gain = gain;
    prev_value = items[i].value;
  }
  return true;
}

struct prepared_class {
  size_t cls;  ///< index in mckp_input::classes
  std::vector<kept_item> items;
};

/// One DP layer: cur[c] = max(prev[c], prev[c - w_j] + v_j) over the class's items, for
/// c in [0, hi]; choice[c] = the winning item's position or no_item. prev is -inf above
/// prev_hi. Items are visited by increasing weight and only a strictly better candidate
/// replaces the incumbent, so ties go to "none", then to the lighter item.
/// The inner loop is branch-free so the compiler vectorises it.
void dp_layer(const double* prev, int prev_hi, double* cur, int hi, const kept_item* items,
              size_t n_items, int64_t* arg) {
  for (int c = 0; c <= hi; ++c) {
    cur[c] = c <= prev_hi ? prev[c] : neg_inf;
    arg[c] = no_item;
  }
  for (size_t j = 0; j < n_items; ++j) {
    const int w = items[j].weight;
    const double v = items[j].value;
    const int end = std::min(hi, prev_hi + w);
    const double* src = prev - w;
    const int64_t jj = static_cast<int64_t>(j);
    for (int c = w; c <= end; ++c) {
      double cand = src[c] + v;
      bool better = cand > cur[c];
      cur[c] = better ? cand : cur[c];
      arg[c] = better ? jj : arg[c];
    }
  }
}

/// Solves the classes of one GPU type with `capacity` GPUs; writes result.choice.
void solve_type(int capacity, const std::vector<prepared_class>& classes, mckp_result& result) {
  long sum_max = 0;
  for (const auto& pc : classes)
    if (!pc.items.empty()) sum_max += pc.items.back().weight;
  // No optimum can use more GPUs than all classes' heaviest items together.
  const int cap = static_cast<int>(std::min<long>(capacity, sum_max));
  if (cap == 0) return;

  // Concave classes: their best joint value for g GPUs is the sum of the g largest marginal
  // gains (taken as per-class prefixes), computed once for all g.
  struct gain {
    double value;
    size_t cls;   ///< position in `classes`
    int step;     ///< 1-based: the step-th worker of that class
  };
  std::vector<gain> gains;
  std::vector<const prepared_class*> dp_classes;
  for (size_t p = 0; p < classes.size(); ++p) {
    const auto& items = classes[p].items;
    if (items.empty()) continue;
    if (is_concave_unit(items)) {
      double prev = 0;
      for (size_t i = 0; i < items.size(); ++i) {
        gains.push_back({items[i].value - prev, p, static_cast<int>(i) + 1});
        prev = items[i].value;
      }
    } else {
      dp_classes.push_back(&classes[p]);
    }
  }
  // Ties: class order, then step order, which keeps each class's selection a prefix.
  std::sort(gains.begin(), gains.end(), [](const gain& a, const gain& b) {
    if (a.value != b.value) return a.value > b.value;
    if (a.cls != b.cls) return a.cls < b.cls;
    return a.step < b.step;
  });
  const int n_gains = static_cast<int>(std::min<size_t>(gains.size(), static_cast<size_t>(cap)));
  std::vector<double> greedy_value(static_cast<size_t>(n_gains) + 1, 0.0);
  for (int g = 0; g < n_gains; ++g) greedy_value[g + 1] = greedy_value[g] + gains[g].value;

  // Exact DP over the other classes: dp[c] = best value using exactly c GPUs. The reachable
  // range grows by each class's heaviest item, so early layers are short.
  std::vector<double> prev(static_cast<size_t>(cap) + 1, neg_inf), cur(prev.size());
  std::vector<int64_t> arg(prev.size());
  std::vector<std::vector<uint16_t>> choice(dp_classes.size());
  std::vector<int> his(dp_classes.size());
  prev[0] = 0;
  int hi = 0;
  for (size_t i = 0; i < dp_classes.size(); ++i) {
    const auto& items = dp_classes[i]->items;
    int new_hi = std::min(cap, hi + items.back().weight);
    dp_layer(prev.data(), hi, cur.data(), new_hi, items.data(), items.size(), arg.data());
    choice[i].resize(static_cast<size_t>(new_hi) + 1);
    for (int c = 0; c <= new_hi; ++c) choice[i][c] = static_cast<uint16_t>(arg[c]);
    his[i] = new_hi;
    hi = new_hi;
    std::swap(prev, cur);
  }

  // Combine: c GPUs to the DP classes, the rest (up to the gains available) to the greedy.
  // Ascending c with a strict comparison keeps the total with the fewest GPUs on ties.
  double best = neg_inf;
  int best_c = 0;
  for (int c = 0; c <= hi; ++c) {
    if (prev[c] == neg_inf) continue;
    double total = prev[c] + greedy_value[std::min(cap - c, n_gains)];
    if (total > best) {
      best = total;
      best_c = c;
    }
  }

  int c = best_c;
  for (size_t i = dp_classes.size(); i-- > 0;) {
    uint16_t j = choice[i][c];
    if (j == no_item) continue;
    const auto& it = dp_classes[i]->items[j];
    result.choice[dp_classes[i]->cls] = it.index;
    c -= it.weight;
  }
  std::vector<int> steps(classes.size(), 0);
  const int taken = std::min(cap - best_c, n_gains);
  for (int g = 0; g < taken; ++g) steps[gains[g].cls] = std::max(steps[gains[g].cls], gains[g].step);
  for (size_t p = 0; p < classes.size(); ++p)
    if (steps[p] > 0) result.choice[classes[p].cls] = classes[p].items[steps[p] - 1].index;
}

void validate(const mckp_input& in) {
  for (size_t t = 0; t < in.capacity.size(); ++t)
    if (in.capacity[t] < 0)
      throw std::invalid_argument("mckp: capacity of type " + std::to_string(t) + " is negative");
  for (size_t i = 0; i < in.classes.size(); ++i) {
    const auto& c = in.classes[i];
    if (c.gpu_type < 0 || static_cast<size_t>(c.gpu_type) >= in.capacity.size())
      throw std::invalid_argument("mckp: class " + std::to_string(i) + " has gpu_type " +
                                  std::to_string(c.gpu_type) + " without a capacity");
    if (c.items.size() >= no_item)
      throw std::invalid_argument("mckp: class " + std::to_string(i) + " has too many items");
    for (size_t j = 0; j < c.items.size(); ++j) {
      if (c.items[j].weight < 1)
        throw std::invalid_argument("mckp: class " + std::to_string(i) + " item " +
                                    std::to_string(j) + " has weight < 1");
      if (!std::isfinite(c.items[j].value))
        throw std::invalid_argument("mckp: class " + std::to_string(i) + " item " +
                                    std::to_string(j) + " has a non-finite value");
    }
  }
}

} // namespace

mckp_result solve_mckp(const mckp_input& in) {
  validate(in);
  mckp_result result;
  result.choice.assign(in.classes.size(), -1);
  std::vector<std::vector<prepared_class>> by_type(in.capacity.size());
  for (size_t i = 0; i < in.classes.size(); ++i) {
    const auto& c = in.classes[i];
    auto items = undominated(c, in.capacity[c.gpu_type]);
    if (!items.empty()) by_type[c.gpu_type].push_back({i, std::move(items)});
  }
  for (size_t t = 0; t < by_type.size(); ++t)
    solve_type(in.capacity[t], by_type[t], result);
  // Reported value is the plain sum of the chosen items, in class order.
  for (size_t i = 0; i < in.classes.size(); ++i)
    if (result.choice[i] >= 0) result.value += in.classes[i].items[result.choice[i]].value;
  return result;
}

} // namespace aryl
