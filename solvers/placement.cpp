#include "solvers/placement.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <numeric>

#include "solvers/small_sort.hpp"

namespace aryl {
namespace {

// The placement rules are written once (place_on_type below) against a "view" of the
// servers. linear_view scans the vector (place_one: one request, O(servers) anyway);
// indexed_view keeps servers bucketed by free GPUs (place_bfd: many requests, each
// answered without scanning every server). Both answer the same questions the same way,
// which tests check by comparing place_bfd with repeated place_one.

/// Questions the placement rules ask about the servers, answered by scanning.
class linear_view {
 public:
  explicit linear_view(std::vector<server_slot>& s) : s_(s) {}

  const server_slot& at(size_t p) const { return s_[p]; }

  /// Position of the first server with this id, or -1.
  long find(int id) const {
    for (size_t i = 0; i < s_.size(); ++i)
      if (s_[i].id == id) return static_cast<long>(i);
    return -1;
  }

  /// GPUs of the largest server of the type (0 if the type has none).
  int size_of_type(int type) const {
    int size = 0;
    for (const auto& x : s_)
      if (x.gpu_type == type) size = std::max(size, x.gpus);
    return size;
  }

  long total_free(int type) const {
    long total = 0;
    for (const auto& x : s_)
      if (x.gpu_type == type) total += x.free;
    return total;
  }

  /// Best fit: the server of the type with at least `gpus` free and the fewest free, ties
  /// lowest id (then lowest position). Position or -1.
  long best_fit(int type, int gpus) const {
    long best = -1;
    for (size_t i = 0; i < s_.size(); ++i) {
      const auto& x = s_[i];
      if (x.gpu_type != type || x.free < gpus) continue;
      if (best < 0) {
        best = static_cast<long>(i);
        continue;
      }
      const auto& b = s_[static_cast<size_t>(best)];
      if (x.free < b.free || (x.free == b.free && x.id < b.id)) best = static_cast<long>(i);
    }
    return best;
  }

  /// Servers of the type with every GPU free (and at least one), by ascending id.
  void fully_free_by_id(int type, std::vector<size_t>& out) const {
    out.clear();
    for (size_t i = 0; i < s_.size(); ++i)
      if (s_[i].gpu_type == type && s_[i].gpus > 0 && s_[i].free == s_[i].gpus) out.push_back(i);
    // Ids are unique: a total order, which std::sort keeps without a buffer.
    std::sort(out.begin(), out.end(), [&](size_t a, size_t b) { return s_[a].id < s_[b].id; });
  }

  /// Servers of the type with free GPUs, most free first, ties lowest id.
  void most_free_first(int type, std::vector<size_t>& out) const {
    out.clear();
    for (size_t i = 0; i < s_.size(); ++i)
      if (s_[i].gpu_type == type && s_[i].free > 0) out.push_back(i);
    std::sort(out.begin(), out.end(), [&](size_t a, size_t b) {
      if (s_[a].free != s_[b].free) return s_[a].free > s_[b].free;
      return s_[a].id < s_[b].id;
    });
  }

  /// Distinct GPU types, ascending.
  void types(std::vector<int>& out) const {
    out.clear();
    for (const auto& x : s_)
      if (std::find(out.begin(), out.end(), x.gpu_type) == out.end()) out.push_back(x.gpu_type);
    std::sort(out.begin(), out.end());
  }

  void add_free(size_t p, int delta) { s_[p].free += delta; }

 private:
  std::vector<server_slot>& s_;
};

/// The same questions answered from an index: per GPU type, one bitset of servers per
/// free-GPU count, bits in (id, position) order, so "fewest free >= g, lowest id" is the
/// first set bit of the first non-empty bucket from g up. Needs 0 <= free <= gpus <=
/// max_gpus for every server (place_bfd falls back to linear_view otherwise).
class indexed_view {
 public:
  static constexpr int max_gpus = 64;

  static bool applicable(const std::vector<server_slot>& s) {
    return std::all_of(s.begin(), s.end(), [](const server_slot& x) {
      return x.free >= 0 && x.free <= x.gpus && x.gpus <= max_gpus;
    });
  }

  explicit indexed_view(std::vector<server_slot>& s) : s_(s) {
    const size_t n = s.size();
    pos_of_rank_.resize(n);
    std::iota(pos_of_rank_.begin(), pos_of_rank_.end(), size_t{0});
    std::stable_sort(pos_of_rank_.begin(), pos_of_rank_.end(),
                     [&](size_t a, size_t b) { return s[a].id < s[b].id; });
    rank_of_.resize(n);
    for (size_t r = 0; r < n; ++r) rank_of_[pos_of_rank_[r]] = r;
    for (const auto& x : s) type_list_.push_back(x.gpu_type);
    std::sort(type_list_.begin(), type_list_.end());
    type_list_.erase(std::unique(type_list_.begin(), type_list_.end()), type_list_.end());
    top_ = 0;
    for (const auto& x : s) top_ = std::max(top_, x.gpus);
    words_ = (n + 63) / 64;
    const size_t t = type_list_.size();
    buckets_.assign(t * static_cast<size_t>(top_ + 1) * words_, 0);
    counts_.assign(t * static_cast<size_t>(top_ + 1), 0);
    full_.assign(t * words_, 0);
    size_.assign(t, 0);
    total_.assign(t, 0);
    for (size_t p = 0; p < n; ++p) {
      size_t ti = type_index(s[p].gpu_type);
      size_[ti] = std::max(size_[ti], s[p].gpus);
      insert(p);
    }
  }

  const server_slot& at(size_t p) const { return s_[p]; }

  long find(int id) const {
    auto it = std::lower_bound(pos_of_rank_.begin(), pos_of_rank_.end(), id,
                               [&](size_t p, int v) { return s_[p].id < v; });
    if (it == pos_of_rank_.end() || s_[*it].id != id) return -1;
    return static_cast<long>(*it);
  }

  int size_of_type(int type) const {
    long ti = find_type(type);
    return ti < 0 ? 0 : size_[static_cast<size_t>(ti)];
  }

  long total_free(int type) const {
    long ti = find_type(type);
    return ti < 0 ? 0 : total_[static_cast<size_t>(ti)];
  }

  long best_fit(int type, int gpus) const {
    long ti = find_type(type);
    if (ti < 0) return -1;
    for (int f = std::max(gpus, 0); f <= top_; ++f) {
      if (counts_[bucket(static_cast<size_t>(ti), f)] == 0) continue;
      const uint64_t* b = bits(static_cast<size_t>(ti), f);
      for (size_t w = 0; w < words_; ++w)
        if (b[w]) return static_cast<long>(pos_of_rank_[w * 64 + std::countr_zero(b[w])]);
    }
    return -1;
  }

  void fully_free_by_id(int type, std::vector<size_t>& out) const {
    out.clear();
    long ti = find_type(type);
    if (ti < 0) return;
    collect(&full_[static_cast<size_t>(ti) * words_], out);
  }

  void most_free_first(int type, std::vector<size_t>& out) const {
    out.clear();
    long ti = find_type(type);
    if (ti < 0) return;
    for (int f = top_; f >= 1; --f)
      if (counts_[bucket(static_cast<size_t>(ti), f)] > 0) collect(bits(static_cast<size_t>(ti), f), out);
  }

  void types(std::vector<int>& out) const { out = type_list_; }

  void add_free(size_t p, int delta) {
    erase(p);
    s_[p].free += delta;
    insert(p);
  }

 private:
  size_t type_index(int type) const {
    return static_cast<size_t>(std::lower_bound(type_list_.begin(), type_list_.end(), type) -
                               type_list_.begin());
  }
  long find_type(int type) const {
    size_t i = type_index(type);
    return i < type_list_.size() && type_list_[i] == type ? static_cast<long>(i) : -1;
  }
  size_t bucket(size_t ti, int f) const { return ti * static_cast<size_t>(top_ + 1) + static_cast<size_t>(f); }
  uint64_t* bits(size_t ti, int f) { return &buckets_[bucket(ti, f) * words_]; }
  const uint64_t* bits(size_t ti, int f) const { return &buckets_[bucket(ti, f) * words_]; }

  void collect(const uint64_t* b, std::vector<size_t>& out) const {
    for (size_t w = 0; w < words_; ++w)
      for (uint64_t x = b[w]; x; x &= x - 1) out.push_back(pos_of_rank_[w * 64 + std::countr_zero(x)]);
  }

  void set_bit(uint64_t* b, size_t r, bool on) {
    uint64_t m = uint64_t{1} << (r % 64);
    b[r / 64] = on ? (b[r / 64] | m) : (b[r / 64] & ~m);
  }

  void insert(size_t p) { update(p, true); }
  void erase(size_t p) { update(p, false); }
  void update(size_t p, bool on) {
    const auto& x = s_[p];
    size_t ti = type_index(x.gpu_type), r = rank_of_[p];
    set_bit(bits(ti, x.free), r, on);
    counts_[bucket(ti, x.free)] += on ? 1 : -1;
    if (x.gpus > 0 && x.free == x.gpus) set_bit(&full_[ti * words_], r, on);
    total_[ti] += on ? x.free : -x.free;
  }

  std::vector<server_slot>& s_;
  std::vector<size_t> pos_of_rank_, rank_of_;
  std::vector<int> type_list_;
  int top_ = 0;       ///< largest server size: buckets 0..top_
  size_t words_ = 0;  ///< 64-bit words per bitset
  std::vector<uint64_t> buckets_, full_;
  std::vector<int> counts_;
  std::vector<int> size_;
  std::vector<long> total_;
};

/// A placement being built: applied as it goes so later steps see the GPUs already taken,
/// and undone if the request turns out not to fit.
template <class View>
struct tentative {
  View& view;
  std::vector<std::pair<size_t, int>> taken;  ///< (server position, GPUs)

  void take(size_t pos, int gpus) {
    view.add_free(pos, -gpus);
    taken.emplace_back(pos, gpus);
  }
  void undo() {
    for (auto& [pos, gpus] : taken) view.add_free(pos, gpus);
    taken.clear();
  }
  allocation result() const {
    allocation a;
    a.reserve(taken.size());
    for (auto& [pos, gpus] : taken) a.emplace_back(view.at(pos).id, gpus);
    std::sort(a.begin(), a.end());
    // The same server can be taken twice (a duplicated prefer id): merge.
    allocation merged;
    for (auto& p : a) {
      if (!merged.empty() && merged.back().first == p.first)
        merged.back().second += p.second;
      else
        merged.push_back(p);
    }
    return merged;
  }
};

/// The node-choice rule of consolidated placement, kept in one place so it can be changed
/// (e.g. to match a peer simulator): the server that hosts `gpus` (<= server size) GPUs on
/// one node. Currently best fit: fewest free GPUs that still fit, ties lowest id; leaving
/// big holes intact keeps room for later large jobs. A different rule needs a matching
/// query in both views (the place_bfd-equals-place_one test catches a mismatch).
template <class View>
long pick_consolidated_host(const View& v, int type, int gpus) {
  return v.best_fit(type, gpus);
}

/// Consolidated placement on one GPU type. Small requests (<= the largest server of the
/// type): one server, a preferred one if any fits (in prefer order), else the rule above.
/// Large requests: whole free servers (preferred first, then ascending id, each taken only
/// if its size <= the GPUs still needed), then the remainder on one more server chosen by
/// the rule above. Choice: the remainder is allowed, so a 12-GPU job on 8-GPU servers takes
/// one whole server plus 4 GPUs of a best-fit server instead of waiting for two.
template <class View>
bool place_consolidated(tentative<View>& t, const place_request& req, int type,
                        std::vector<size_t>& scratch) {
  const View& v = t.view;
  const int size = v.size_of_type(type);
  if (size == 0) return false;

  if (req.gpus <= size) {
    for (int id : req.prefer) {
      long p = v.find(id);
      if (p >= 0 && v.at(p).gpu_type == type && v.at(p).free >= req.gpus) {
        t.take(static_cast<size_t>(p), req.gpus);
        return true;
      }
    }
    long p = pick_consolidated_host(v, type, req.gpus);
    if (p < 0) return false;
    t.take(static_cast<size_t>(p), req.gpus);
    return true;
  }

  int remaining = req.gpus;
  auto take_whole = [&](size_t p) {
    const auto& s = v.at(p);
    if (s.gpu_type == type && s.gpus > 0 && s.free == s.gpus && s.gpus <= remaining) {
      remaining -= s.gpus;
      t.take(p, s.gpus);
    }
  };
  for (int id : req.prefer) {
    long p = v.find(id);
    if (p >= 0) take_whole(static_cast<size_t>(p));
  }
  v.fully_free_by_id(type, scratch);
  for (size_t p : scratch) {
    if (remaining == 0) break;
    take_whole(p);
  }
  if (remaining > 0) {
    long p = pick_consolidated_host(v, type, remaining);
    if (p < 0) {
      t.undo();
      return false;
    }
    t.take(static_cast<size_t>(p), remaining);
  }
  return true;
}

/// Count placement on one GPU type: any free GPUs. Preferred servers are drained first (in
/// prefer order); the rest goes on one best-fit server if it fits on one, else from the
/// servers with the most free GPUs first (fewest servers used), ties lowest id.
template <class View>
bool place_count(tentative<View>& t, const place_request& req, int type,
                 std::vector<size_t>& scratch) {
  const View& v = t.view;
  if (v.total_free(type) < req.gpus) return false;

  int remaining = req.gpus;
  for (int id : req.prefer) {
    if (remaining == 0) break;
    long p = v.find(id);
    if (p < 0 || v.at(p).gpu_type != type) continue;
    int n = std::min(v.at(p).free, remaining);
    if (n <= 0) continue;
    t.take(static_cast<size_t>(p), n);
    remaining -= n;
  }
  if (remaining == 0) return true;

  long p = v.best_fit(type, remaining);
  if (p >= 0) {
    t.take(static_cast<size_t>(p), remaining);
    return true;
  }
  v.most_free_first(type, scratch);
  for (size_t i : scratch) {
    if (remaining == 0) break;
    int n = std::min(v.at(i).free, remaining);
    t.take(i, n);
    remaining -= n;
  }
  return remaining == 0;  // always true: total >= gpus was checked
}

/// GPU types to try for a request, in order. A typed request: just its type. An untyped
/// one: the types of its preferred servers first (in prefer order), so a running job's
/// extra workers stay on the type it already uses, then the remaining types ascending.
template <class View>
void types_to_try(const View& v, const place_request& req, std::vector<int>& out,
                  std::vector<int>& all) {
  out.clear();
  if (req.gpu_type >= 0) {
    out.push_back(req.gpu_type);
    return;
  }
  for (int id : req.prefer) {
    long p = v.find(id);
    if (p >= 0 && std::find(out.begin(), out.end(), v.at(p).gpu_type) == out.end())
      out.push_back(v.at(p).gpu_type);
  }
  v.types(all);
  for (int ty : all)
    if (std::find(out.begin(), out.end(), ty) == out.end()) out.push_back(ty);
}

/// Reusable buffers, so placing many requests does not allocate per request.
struct scratch_space {
  std::vector<size_t> servers;
  std::vector<int> types, all_types;
};

template <class View>
std::optional<allocation> place_with(View& v, placement_mode mode, const place_request& req,
                                     scratch_space& sc) {
  if (req.gpus < 0) return std::nullopt;
  if (req.gpus == 0) return allocation{};
  types_to_try(v, req, sc.types, sc.all_types);
  for (int type : sc.types) {
    tentative<View> t{v, {}};
    bool ok = mode == placement_mode::consolidated ? place_consolidated(t, req, type, sc.servers)
                                                   : place_count(t, req, type, sc.servers);
    if (ok) return t.result();
  }
  return std::nullopt;
}

template <class View>
placement_result place_all(View& v, placement_mode mode, const std::vector<place_request>& requests) {
  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return requests[a].gpus > requests[b].gpus; });
  placement_result r;
  std::vector<size_t> unplaced;
  scratch_space sc;
  for (size_t i : order) {
    if (auto a = place_with(v, mode, requests[i], sc))
      r.placed.emplace_back(requests[i].id, std::move(*a));
    else
      unplaced.push_back(i);
  }
  std::sort(unplaced.begin(), unplaced.end());
  for (size_t i : unplaced) r.unplaced.push_back(requests[i].id);
  return r;
}

} // namespace

namespace detail {

int spanned_any_order(const allocation& a) {
  if (a.size() > 32) {  // a wide job: sort a copy
    std::vector<int> ids;
    for (auto& [sid, w] : a)
      if (w > 0) ids.push_back(sid);
    std::sort(ids.begin(), ids.end());
    return static_cast<int>(std::unique(ids.begin(), ids.end()) - ids.begin());
  }
  // Most jobs span a few servers: count without a copy.
  int n = 0;
  for (auto it = a.begin(); it != a.end(); ++it) {
    if (it->second <= 0) continue;
    auto same = [&](const auto& p) { return p.first == it->first && p.second > 0; };
    n += std::find_if(a.begin(), it, same) == it;
  }
  return n;
}

void sort_allocation(allocation& a) { std::sort(a.begin(), a.end()); }

} // namespace detail

int count_workers(const allocation& a) {
  int n = 0;
  for (auto& [sid, w] : a) n += w;
  return n;
}

void keep_on_fewest(const allocation& a, int n, allocation& out) {
  out.clear();
  if (a.size() == 1) {  // the common case
    out.emplace_back(a[0].first, std::min(a[0].second, n));
    return;
  }
  thread_local allocation order;
  order.assign(a.begin(), a.end());
  small_stable_sort(order.begin(), order.end(), [](auto& x, auto& y) { return x.second > y.second; });
  for (auto& [sid, w] : order) {
    if (n <= 0) break;
    int k = std::min(w, n);
    out.emplace_back(sid, k);
    n -= k;
  }
  std::sort(out.begin(), out.end());
}

std::optional<allocation> place_one(placement_mode mode, std::vector<server_slot>& servers,
                                    const place_request& req) {
  linear_view v(servers);
  // Rounds place one request at a time, many per instant: keep the buffers (one set per
  // thread; no content outlives the call).
  thread_local scratch_space sc;
  return place_with(v, mode, req, sc);
}

placement_result place_bfd(placement_mode mode, std::vector<server_slot>& servers,
                           const std::vector<place_request>& requests) {
  if (indexed_view::applicable(servers)) {
    indexed_view v(servers);
    return place_all(v, mode, requests);
  }
  linear_view v(servers);
  return place_all(v, mode, requests);
}

} // namespace aryl
