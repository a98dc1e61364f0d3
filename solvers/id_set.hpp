#pragma once
/// A small set of ids kept as a sorted vector: what the ledger holds per server (the jobs with
/// workers there, at most its GPUs) and for the running jobs (hundreds). Every round walks
/// them, and a rescale changes them; a sorted vector does both without a node allocation per
/// change or a pointer chase per step. Iterates in ascending order, as std::set did.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace aryl {

class id_set {
public:
  using const_iterator = std::vector<uint32_t>::const_iterator;

  /// Adds `id`; false if it was there.
  bool insert(uint32_t id) {
    auto it = std::lower_bound(ids_.begin(), ids_.end(), id);
    if (it != ids_.end() && *it == id) return false;
    ids_.insert(it, id);
    return true;
  }
  /// Removes `id`; how many were removed (0 or 1).
  size_t erase(uint32_t id) {
    auto it = std::lower_bound(ids_.begin(), ids_.end(), id);
    if (it == ids_.end() || *it != id) return 0;
    ids_.erase(it);
    return 1;
  }
  size_t count(uint32_t id) const { return std::binary_search(ids_.begin(), ids_.end(), id) ? 1 : 0; }
  size_t size() const { return ids_.size(); }
  bool empty() const { return ids_.empty(); }
  void clear() { ids_.clear(); }
  const_iterator begin() const { return ids_.begin(); }
  const_iterator end() const { return ids_.end(); }

private:
  std::vector<uint32_t> ids_;
};

} // namespace aryl
