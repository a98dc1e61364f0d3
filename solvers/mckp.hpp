#pragma once
/// Multiple-choice knapsack for elastic scale-out (docs/elastic.md, "What a change of size must pay").
///
/// One class per elastic job; item k of a class = "add some workers", weight = GPUs
/// (>= 1), value = JCT reduction in seconds (any real, may be negative). At most one item
/// per class, or none (value 0, weight 0). Maximise total value within each GPU type's
/// capacity; every class belongs to one type and types are solved independently.
///
/// Exact. See docs/solvers.md for the algorithm, the concave fast path and its proof.
#include <vector>

namespace aryl {

struct mckp_item {
  int weight = 1;      ///< GPUs, >= 1
  double value = 0;    ///< JCT reduction (seconds); finite, may be negative
};

struct mckp_class {
  std::vector<mckp_item> items;
  int gpu_type = 0;    ///< index into mckp_input::capacity
};

struct mckp_input {
  std::vector<int> capacity;         ///< free GPUs per GPU type, each >= 0
  std::vector<mckp_class> classes;
};

struct mckp_result {
  double value = 0;          ///< total value of the chosen items (0 if none chosen)
  std::vector<int> choice;   ///< per class: index into its items, or -1 for none
};

/// Solves the multiple-choice knapsack exactly.
/// Guarantees: for every type, the chosen weights sum to at most capacity[type]; at most
/// one item per class; the value is optimal (up to floating-point rounding of sums).
/// Tie-breaks (deterministic, same input -> same output): an item is taken only if it
/// strictly improves the total, so items of value <= 0 are never chosen; of two items of a
/// class with equal weight the more valuable, then the lower index, survives; a heavier
/// item that is not strictly more valuable than a lighter one is never chosen; between
/// equal totals the one found with fewer GPUs is kept.
/// Throws std::invalid_argument (message naming the class/item) on a weight < 1, a
/// non-finite value, a negative capacity, a gpu_type outside capacity, or a class with
/// more than 65,534 items.
mckp_result solve_mckp(const mckp_input& in);
/// The same into `out`, whose vector is reused (a round solves one per instant).
void solve_mckp(const mckp_input& in, mckp_result& out);

namespace detail {
/// solve_mckp without its shortcut for an input whose every type holds each class's most
/// valuable item: every class prepared and solved. The same result; tests compare the two.
void solve_mckp_unshortened(const mckp_input& in, mckp_result& out);
} // namespace detail

} // namespace aryl
