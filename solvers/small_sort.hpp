#pragma once
/// A stable sort for the few elements of an allocation or a list of GPU types.
/// std::stable_sort asks the heap for a buffer on every call; rounds sort such lists for
/// every job they look at.
#include <utility>

namespace aryl {

/// Stable insertion sort of [first, last) by `less`: O(n^2), no allocation.
template <class It, class Less>
void small_stable_sort(It first, It last, Less less) {
  if (first == last) return;
  for (It i = first + 1; i != last; ++i) {
    auto v = std::move(*i);
    It j = i;
    for (; j != first && less(v, *(j - 1)); --j) *j = std::move(*(j - 1));
    *j = std::move(v);
  }
}

} // namespace aryl
