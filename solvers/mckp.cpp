#include "solvers/mckp.hpp"
#include "solvers/spare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

namespace aryl {
namespace {

constexpr double neg_inf = -std::numeric_limits<double>::infinity();
constexpr uint16_t no_item = 0xffff;

struct kept_item {  // 16 bytes: 500 classes x 16 items stay small
  double value;
  int weight;
  int index;  ///< index in the caller's class
};

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
  /// Item the class must take when none of `items` is chosen (-1: none), after the bound
  /// reduction proved "no item" suboptimal; `items` are then upgrades relative to it.
  int base_index = -1;
};

/// A marginal gain of a concave class (solve_hybrid).
struct gain {
  double value;
  size_t cls;   ///< position in the classes solved
  int step;     ///< 1-based: the step-th worker of that class
};

/// The classes after bound reduction: forced choices applied, the rest left to solve.
struct reduction {
  int capacity = 0;  ///< what the forced items leave
  std::vector<prepared_class> classes;
  std::vector<std::pair<size_t, int>> forced;  ///< (class index in input, item index)
};

/// Working memory kept between calls (one set per thread): a scheduling round solves one
/// knapsack per instant, and allocating its arrays and every class's item list each time
/// was most of the round's heap traffic. No content outlives a call.
struct scratch_space {
  std::vector<std::vector<kept_item>> spare;  ///< emptied item lists, for reuse
  std::vector<std::vector<prepared_class>> by_type;
  reduction red;
  // reduce
  std::vector<double> grad, best;
  std::vector<int> seg_dw;
  std::vector<uint32_t> seg_cls, order;
  std::vector<int32_t> seg_to, hull, at;
  std::vector<size_t> first_seg, next;
  // solve_hybrid
  std::vector<gain> gains;
  std::vector<const prepared_class*> dp_classes;
  std::vector<double> greedy_value, prev, cur;
  std::vector<int64_t> arg;
  std::vector<std::vector<uint16_t>> choice;
  std::vector<int> his, steps;
  // all_best_fit
  std::vector<int> best_item;
  std::vector<long> type_need;

  std::vector<kept_item> item_list() { return take_spare(spare); }
  void recycle(std::vector<prepared_class>& classes) {
    for (auto& pc : classes) spare.push_back(std::move(pc.items));
    classes.clear();
  }
};
thread_local scratch_space sc;

[[noreturn]] __attribute__((noinline, cold)) void bad_item(size_t cls, size_t item, const mckp_item& it) {
  throw std::invalid_argument("mckp: class " + std::to_string(cls) + " item " + std::to_string(item) +
                              (it.weight < 1 ? " has weight < 1" : " has a non-finite value"));
}

/// A class reduced to the items that can be in some optimum: value > 0 (else "none" is at
/// least as good), weight <= capacity, and not dominated (an item is dropped when a lighter
/// or equal-weight item is at least as valuable). Kept items have strictly increasing
/// weights and strictly increasing values.
/// Throws (bad_item) on an item of weight < 1 or a non-finite value: class `cls`'s.
std::vector<kept_item> undominated(const mckp_class& c, size_t cls, int capacity) {
  std::vector<kept_item> kept = sc.item_list();
  kept.reserve(c.items.size());
  for (size_t i = 0; i < c.items.size(); ++i) {
    const auto& it = c.items[i];
    if (it.weight < 1 || !std::isfinite(it.value)) bad_item(cls, i, it);
    if (it.value > 0 && it.weight <= capacity)
      kept.push_back({it.value, it.weight, static_cast<int>(i)});
  }
  auto lighter = [](const kept_item& a, const kept_item& b) {
    if (a.weight != b.weight) return a.weight < b.weight;
    if (a.value != b.value) return a.value > b.value;
    return a.index < b.index;
  };
  if (!std::is_sorted(kept.begin(), kept.end(), lighter))  // classes are usually built sorted
    std::sort(kept.begin(), kept.end(), lighter);
  // Sorted by weight, then value descending: an item survives only if it beats every
  // lighter survivor, which also drops every equal-weight item but the first.
  size_t n = 0;
  for (size_t i = 0; i < kept.size(); ++i)
    if (n == 0 || kept[i].value > kept[n - 1].value) kept[n++] = kept[i];
  kept.resize(n);
  return kept;
}

/// Four lanes of the DP layer (GCC/Clang vector extensions): one AVX2 register, or two SSE2
/// ones where the CPU has no AVX2. Written explicitly because the auto-vectoriser turns the
/// select into a conditional store, which SSE2 cannot vectorise.
using lanes_d = double __attribute__((vector_size(32)));
using lanes_i = int64_t __attribute__((vector_size(32)));
constexpr int lanes = 4;

/// One DP layer: cur[c] = max(prev[c], prev[c - w_j] + v_j) over the class's items, for
/// c in [0, hi]; arg[c] = the winning item's position or no_item. prev is -inf above
/// prev_hi. Items are visited by increasing weight and only a strictly better candidate
/// replaces the incumbent, so ties go to "none", then to the lighter item.
/// Compiled twice, for AVX2 and for the x86-64 baseline; the loader picks the one the CPU runs.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
void dp_layer(const double* prev, int prev_hi, double* cur, int hi, const kept_item* items,
              size_t n_items, int64_t* arg) {
  for (int c = 0; c <= hi; ++c) {
    cur[c] = c <= prev_hi ? prev[c] : neg_inf;
    arg[c] = no_item;
  }
  for (size_t j = 0; j < n_items; ++j) {
    const int w = items[j].weight;
    const double v = items[j].value;
    const int n = std::min(hi, prev_hi + w) - w + 1;  // c = w .. w + n - 1
    const int64_t jj = static_cast<int64_t>(j);
    double* out = cur + w;
    int64_t* who = arg + w;
    int c = 0;
    const lanes_d vv = {v, v, v, v};
    const lanes_i vj = {jj, jj, jj, jj};
    for (; c + lanes <= n; c += lanes) {
      lanes_d p, o;
      lanes_i h;
      std::memcpy(&p, prev + c, sizeof p);
      std::memcpy(&o, out + c, sizeof o);
      std::memcpy(&h, who + c, sizeof h);
      const lanes_d cand = p + vv;
      const lanes_i better = cand > o;  // all ones where strictly better
      o = (lanes_d)(((lanes_i)o & ~better) | ((lanes_i)cand & better));
      h = (h & ~better) | (vj & better);
      std::memcpy(out + c, &o, sizeof o);
      std::memcpy(who + c, &h, sizeof h);
    }
    for (; c < n; ++c) {
      const double cand = prev[c] + v;
      if (cand > out[c]) {
        out[c] = cand;
        who[c] = jj;
      }
    }
  }
}

/// Solves `classes` (all of one GPU type) with `capacity` GPUs exactly: the concave ones by
/// the marginal-gain greedy, the others by DP, the split between them by trying every
/// capacity for the DP part. Writes the chosen items into result.choice.
void solve_hybrid(int capacity, const std::vector<prepared_class>& classes, mckp_result& result) {
  long sum_max = 0;
  for (const auto& pc : classes)
    if (!pc.items.empty()) sum_max += pc.items.back().weight;
  // No optimum can use more GPUs than all classes' heaviest items together.
  const int cap = static_cast<int>(std::min<long>(capacity, sum_max));
  if (cap == 0) return;

  // Concave classes: their best joint value for g GPUs is the sum of the g largest marginal
  // gains (taken as per-class prefixes), computed once for all g.
  auto& gains = sc.gains;
  auto& dp_classes = sc.dp_classes;
  gains.clear();
  dp_classes.clear();
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
  auto& greedy_value = sc.greedy_value;
  greedy_value.assign(static_cast<size_t>(n_gains) + 1, 0.0);
  for (int g = 0; g < n_gains; ++g) greedy_value[g + 1] = greedy_value[g] + gains[g].value;

  // Exact DP over the other classes: dp[c] = best value using exactly c GPUs. The reachable
  // range grows by each class's heaviest item, so early layers are short.
  auto &prev = sc.prev, &cur = sc.cur;
  prev.assign(static_cast<size_t>(cap) + 1, neg_inf);
  cur.resize(prev.size());
  auto& arg = sc.arg;
  arg.resize(prev.size());
  auto& choice = sc.choice;  // inner vectors keep their memory between calls
  if (choice.size() < dp_classes.size()) choice.resize(dp_classes.size());
  auto& his = sc.his;
  his.assign(dp_classes.size(), 0);
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
  auto& steps = sc.steps;
  steps.assign(classes.size(), 0);
  const int taken = std::min(cap - best_c, n_gains);
  for (int g = 0; g < taken; ++g) steps[gains[g].cls] = std::max(steps[gains[g].cls], gains[g].step);
  for (size_t p = 0; p < classes.size(); ++p)
    if (steps[p] > 0) result.choice[classes[p].cls] = classes[p].items[steps[p] - 1].index;
}

/// The checks of the input as a whole and of class `i` but its items, whose checks
/// (bad_item) undominated makes as it reads them: one pass over the items, not two.
void validate_capacity(const mckp_input& in) {
  for (size_t t = 0; t < in.capacity.size(); ++t)
    if (in.capacity[t] < 0)
      throw std::invalid_argument("mckp: capacity of type " + std::to_string(t) + " is negative");
}

[[noreturn]] __attribute__((noinline, cold)) void bad_class(const mckp_input& in, size_t i) {
  const auto& c = in.classes[i];
  if (c.gpu_type < 0 || static_cast<size_t>(c.gpu_type) >= in.capacity.size())
    throw std::invalid_argument("mckp: class " + std::to_string(i) + " has gpu_type " +
                                std::to_string(c.gpu_type) + " without a capacity");
  throw std::invalid_argument("mckp: class " + std::to_string(i) + " has too many items");
}

inline void validate_class(const mckp_input& in, size_t i) {
  const auto& c = in.classes[i];
  if (c.gpu_type < 0 || static_cast<size_t>(c.gpu_type) >= in.capacity.size() || c.items.size() >= no_item)
    bad_class(in, i);
}

/// A hull segment's rank in the LP's fill order: gradient descending, then creation order
/// (class, then hull).
inline bool seg_before(const std::vector<double>& grad, uint32_t a, uint32_t b) {
  return grad[a] > grad[b] || (grad[a] == grad[b] && a < b);
}

/// The classes' upper concave hulls as segments, in sc's parallel arrays (compact for the
/// selection in lp_split): gradient, width, class, the item it ends at, and each class's first.
void build_hulls(const std::vector<prepared_class>& classes) {
  size_t n_items = 0;
  for (const auto& pc : classes) n_items += pc.items.size();
  auto& grad = sc.grad;
  auto& seg_dw = sc.seg_dw;
  auto& seg_cls = sc.seg_cls;
  auto& seg_to = sc.seg_to;  // the hull vertex (item position) a segment ends at
  auto& first_seg = sc.first_seg;
  grad.clear();
  seg_dw.clear();
  seg_cls.clear();
  seg_to.clear();
  first_seg.assign(classes.size() + 1, 0);
  grad.reserve(n_items);
  seg_dw.reserve(n_items);
  seg_cls.reserve(n_items);
  seg_to.reserve(n_items);
  auto& hull = sc.hull;
  for (size_t p = 0; p < classes.size(); ++p) {
    const auto& items = classes[p].items;
    first_seg[p] = grad.size();
    hull.clear();
    auto wt = [&](int32_t i) { return i < 0 ? 0 : items[i].weight; };
    auto val = [&](int32_t i) { return i < 0 ? 0.0 : items[i].value; };
    hull.push_back(-1);
    for (int32_t i = 0; i < static_cast<int32_t>(items.size()); ++i) {
      // Pop the last vertex while it lies on or below the chord from its predecessor to i.
      while (hull.size() >= 2) {
        int32_t a = hull[hull.size() - 2], b = hull.back();
        double lhs = (val(b) - val(a)) * (wt(i) - wt(a));
        double rhs = (val(i) - val(a)) * (wt(b) - wt(a));
        if (lhs > rhs) break;
        hull.pop_back();
      }
      hull.push_back(i);
    }
    for (size_t h = 1; h < hull.size(); ++h) {
      int dw = wt(hull[h]) - wt(hull[h - 1]);
      grad.push_back((val(hull[h]) - val(hull[h - 1])) / dw);
      seg_dw.push_back(dw);
      seg_cls.push_back(static_cast<uint32_t>(p));
      seg_to.push_back(hull[h]);
    }
  }
  first_seg[classes.size()] = grad.size();
}

/// The LP takes segments in rank order until one does not fit: the split, -1 when every
/// segment fits. Found by weighted quickselect (expected linear) rather than by sorting
/// every segment.
long lp_split(int capacity) {
  const auto& grad = sc.grad;
  const auto& seg_dw = sc.seg_dw;
  auto before = [&grad](uint32_t a, uint32_t b) { return seg_before(grad, a, b); };
  auto& order = sc.order;
  order.resize(grad.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  size_t lo = 0, hi = order.size();
  long room = capacity;
  long split = -1;
  while (lo < hi) {
    uint32_t a = order[lo], b = order[lo + (hi - lo) / 2], c = order[hi - 1];
    uint32_t pivot = before(a, b) ? (before(b, c) ? b : (before(a, c) ? c : a))
                                  : (before(a, c) ? a : (before(b, c) ? c : b));
    auto first = order.begin() + static_cast<long>(lo), last = order.begin() + static_cast<long>(hi);
    auto mid = std::partition(first, last, [&](uint32_t x) { return before(x, pivot); });
    long w = 0;
    for (auto it = first; it != mid; ++it) w += seg_dw[*it];
    if (w > room) {  // the split ranks before the pivot
      hi = static_cast<size_t>(mid - order.begin());
      continue;
    }
    room -= w;
    std::iter_swap(mid, std::find(mid, last, pivot));
    if (seg_dw[pivot] > room) {
      split = pivot;
      break;
    }
    room -= seg_dw[pivot];
    lo = static_cast<size_t>(mid - order.begin()) + 1;
  }
  return split;
}

/// The lower bound's solution, into sc.at (each class's item, -1: none): the LP solution
/// rounded down (every segment ranked before `split`), then topped up by repeatedly taking
/// the best-ranked next hull segment of any class that still fits (what continuing the LP's
/// fill past the split would take). Fewer than one segment's width is left, so this loops
/// only a few times.
void lp_rounded(int capacity, size_t n_classes, long split) {
  const auto& grad = sc.grad;
  const auto& seg_dw = sc.seg_dw;
  const auto& seg_cls = sc.seg_cls;
  const auto& seg_to = sc.seg_to;
  const auto& first_seg = sc.first_seg;
  auto before = [&grad](uint32_t a, uint32_t b) { return seg_before(grad, a, b); };
  auto& at = sc.at;
  at.assign(n_classes, -1);
  auto& next = sc.next;  // per class
  next.assign(first_seg.begin(), first_seg.end() - 1);
  long left = capacity;
  for (uint32_t i = 0; i < grad.size(); ++i)
    if (before(i, static_cast<uint32_t>(split))) {
      at[seg_cls[i]] = std::max(at[seg_cls[i]], seg_to[i]);
      next[seg_cls[i]] = std::max(next[seg_cls[i]], size_t{i} + 1);
      left -= seg_dw[i];
    }
  while (left > 0) {
    long pick = -1;
    for (size_t p = 0; p < n_classes; ++p) {
      size_t i = next[p];
      if (i < first_seg[p + 1] && seg_dw[i] <= left &&
          (pick < 0 || before(static_cast<uint32_t>(i), static_cast<uint32_t>(pick))))
        pick = static_cast<long>(i);
    }
    if (pick < 0) break;
    const size_t p = seg_cls[static_cast<size_t>(pick)];
    at[p] = seg_to[static_cast<size_t>(pick)];
    next[p] = static_cast<size_t>(pick) + 1;
    left -= seg_dw[static_cast<size_t>(pick)];
  }
}

/// Exact problem reduction by a Lagrangian bound (docs/solvers.md). The LP relaxation
/// (classes' upper concave hulls filled by decreasing gradient) gives the multiplier
/// lambda = gradient of the segment that does not fit; UB = lambda * capacity +
/// sum_j max(0, max_k v_jk - lambda * w_jk) bounds every solution, and the LP solution
/// rounded down (then greedily topped up) is a feasible lower bound LB. Forcing class j to
/// option k lowers the bound by loss_jk = best_j - (v_jk - lambda w_jk); if loss_jk exceeds
/// UB - LB no optimum uses that option, so it is dropped. A class left with one option is
/// fixed; one that lost "none" must take an item: its lightest survivor becomes a base and
/// the others upgrades on top of it. Fills `r`; false when there is nothing to reduce.
bool reduce(int capacity, const std::vector<prepared_class>& classes, reduction& r) {
  build_hulls(classes);
  const long split = lp_split(capacity);
  if (split < 0) return false;  // everything fits: nothing to bound
  const double lambda = sc.grad[static_cast<size_t>(split)];
  lp_rounded(capacity, classes.size(), split);
  const auto& at = sc.at;
  double lb = 0, ub = lambda * capacity;
  auto& best = sc.best;
  best.assign(classes.size(), 0.0);
  for (size_t p = 0; p < classes.size(); ++p) {
    if (at[p] >= 0) lb += classes[p].items[at[p]].value;
    for (const auto& it : classes[p].items) best[p] = std::max(best[p], it.value - lambda * it.weight);
    ub += best[p];
  }
  // Only options provably worse than LB are dropped; the tolerance absorbs rounding in
  // the sums so that no optimum is ever cut.
  const double slack = (ub - lb) + 1e-9 * (1.0 + std::abs(ub));

  sc.recycle(r.classes);
  r.forced.clear();
  r.capacity = capacity;
  for (size_t p = 0; p < classes.size(); ++p) {
    const auto& items = classes[p].items;
    bool none_ok = best[p] <= slack;
    auto alive = sc.item_list();
    for (const auto& it : items)
      if (best[p] - (it.value - lambda * it.weight) <= slack) alive.push_back(it);
    if (alive.empty()) {  // only "none" survives
      sc.spare.push_back(std::move(alive));
      continue;
    }
    if (none_ok) {
      r.classes.push_back({classes[p].cls, std::move(alive), -1});
      continue;
    }
    const kept_item base = alive.front();
    r.capacity -= base.weight;
    if (alive.size() == 1) {
      r.forced.emplace_back(classes[p].cls, base.index);
      sc.spare.push_back(std::move(alive));
      continue;
    }
    // Upgrades relative to the base, in place (each reads only its own, later slot).
    for (size_t i = 1; i < alive.size(); ++i)
      alive[i - 1] = {alive[i].value - base.value, alive[i].weight - base.weight, alive[i].index};
    alive.pop_back();
    r.classes.push_back({classes[p].cls, std::move(alive), base.index});
  }
  return r.capacity >= 0;  // cannot be negative with exact bounds; stay safe
}

/// Solves the classes of one GPU type with `capacity` GPUs; writes result.choice.
void solve_type(int capacity, const std::vector<prepared_class>& classes, mckp_result& result) {
  long sum_max = 0;
  for (const auto& pc : classes) sum_max += pc.items.back().weight;
  if (sum_max <= capacity) {  // every class gets its best item (values increase with weight)
    for (const auto& pc : classes) result.choice[pc.cls] = pc.items.back().index;
    return;
  }
  auto& r = sc.red;
  if (!reduce(capacity, classes, r)) {
    solve_hybrid(capacity, classes, result);
    return;
  }
  for (auto [cls, item] : r.forced) result.choice[cls] = item;
  for (const auto& pc : r.classes) result.choice[pc.cls] = pc.base_index;
  solve_hybrid(r.capacity, r.classes, result);
}

/// The common case, answered without preparing a class: each type's capacity holds every
/// class's most valuable item (solve_type's first branch for every type). That item is the
/// last one undominated keeps: of the items of value > 0 that fit the capacity, the most
/// valuable, then the lightest, then the first. Checks the input as it reads it (class
/// order, as solve_prepared). Writes result.choice only when it answers (true).
bool all_best_fit(const mckp_input& in, mckp_result& result) {
  auto& best = sc.best_item;
  auto& need = sc.type_need;
  need.assign(in.capacity.size(), 0);
  best.resize(in.classes.size());
  for (size_t i = 0; i < in.classes.size(); ++i) {
    validate_class(in, i);
    const auto& c = in.classes[i];
    const int capacity = in.capacity[static_cast<size_t>(c.gpu_type)];
    const mckp_item* items = c.items.data();
    const size_t n = c.items.size();
    int b = -1;
    double bv = 0;
    int bw = 0;
    for (size_t j = 0; j < n; ++j) {
      const double v = items[j].value;
      const int w = items[j].weight;
      if (w < 1 || !std::isfinite(v)) bad_item(i, j, items[j]);
      if (!(v > 0 && w <= capacity)) continue;
      if (b >= 0 && !(v > bv || (v == bv && w < bw))) continue;
      b = static_cast<int>(j);
      bv = v;
      bw = w;
    }
    best[i] = b;
    if (b >= 0) need[static_cast<size_t>(c.gpu_type)] += bw;
  }
  for (size_t t = 0; t < need.size(); ++t)
    if (need[t] > in.capacity[t]) return false;
  result.choice.assign(best.begin(), best.end());
  return true;
}

/// The solver proper: each class reduced to its undominated items, then each type solved.
void solve_prepared(const mckp_input& in, mckp_result& result) {
  auto& by_type = sc.by_type;
  for (auto& classes : by_type) sc.recycle(classes);
  by_type.resize(in.capacity.size());
  // The input is checked as it is read, class by class in order (the first error thrown),
  // before `result` is written.
  for (size_t i = 0; i < in.classes.size(); ++i) {
    validate_class(in, i);
    const auto& c = in.classes[i];
    auto items = undominated(c, i, in.capacity[c.gpu_type]);
    if (!items.empty()) by_type[c.gpu_type].push_back({i, std::move(items), -1});
    else sc.spare.push_back(std::move(items));
  }
  result.choice.assign(in.classes.size(), -1);
  for (size_t t = 0; t < by_type.size(); ++t)
    solve_type(in.capacity[t], by_type[t], result);
}

/// Reported value is the plain sum of the chosen items, in class order.
void sum_value(const mckp_input& in, mckp_result& result) {
  result.value = 0;
  for (size_t i = 0; i < in.classes.size(); ++i)
    if (result.choice[i] >= 0) result.value += in.classes[i].items[result.choice[i]].value;
}

} // namespace

namespace detail {

void solve_mckp_unshortened(const mckp_input& in, mckp_result& result) {
  validate_capacity(in);
  solve_prepared(in, result);
  sum_value(in, result);
}

} // namespace detail

mckp_result solve_mckp(const mckp_input& in) {
  mckp_result result;
  solve_mckp(in, result);
  return result;
}

void solve_mckp(const mckp_input& in, mckp_result& result) {
  validate_capacity(in);
  // Most knapsacks of a round fit every class's best item: nothing to prepare or solve.
  if (!all_best_fit(in, result)) solve_prepared(in, result);
  sum_value(in, result);
}

} // namespace aryl
