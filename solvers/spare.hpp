#pragma once
/// Vectors kept for their memory between uses (a round's plans and knapsack classes).
#include <utility>
#include <vector>

namespace aryl {

/// The last of `spares`, emptied with its memory kept, or a new one when there is none.
template <class T>
T take_spare(std::vector<T>& spares) {
  if (spares.empty()) return {};
  T v = std::move(spares.back());
  spares.pop_back();
  v.clear();
  return v;
}

} // namespace aryl
