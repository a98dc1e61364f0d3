#pragma once
/// Free GPUs as a round plans them (work_view) and the small helpers about GPU types and
/// allocations that every step of a round uses. Internal to solvers/.
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "solvers/round_planner.hpp"
#include "solvers/small_sort.hpp"

namespace aryl::detail {

/// A view's storage, kept between rounds so that a round does not allocate arrays the size
/// of the cluster: values and stamps by server id, the servers changed, the round's stamp.
struct view_storage {
  std::vector<int> vals;
  std::vector<uint32_t> stamp;
  std::vector<int> touched;
  uint32_t epoch = 0;
};

/// Adds `b`'s workers to `a`, which stays sorted by server.
inline void merge_into(allocation& a, const allocation& b) {
  for (auto& [sid, w] : b) {
    auto it = std::find_if(a.begin(), a.end(), [sid = sid](auto& p) { return p.first == sid; });
    if (it == a.end()) a.emplace_back(sid, w);
    else it->second += w;
  }
  // Mostly already in order (a job's extras on its own servers): a sort would not change it.
  // (The sort is out of line, so that this stays small enough to inline.)
  if (!std::is_sorted(a.begin(), a.end())) aryl::detail::sort_allocation(a);
}

/// Free GPUs per server as a round plans them. A view starts as the ledger has it (really
/// free GPUs, plus those of extra workers when `with_extras`) and records only the servers
/// the round changes, so that a round touching a few servers costs no pass over all of them.
/// The view of GPUs really free goes below zero where a start takes extra workers' GPUs:
/// that debt is paid first by GPUs the same round frees on the server (a victim's), as the
/// start can use those instead. Read through at(), total(), capacity() and best_fit(), a
/// server in debt has no free GPU.
struct work_view {
  const cluster_ledger& l;
  std::vector<int>& vals;        ///< by server id, where stamp == epoch
  std::vector<uint32_t>& stamp;  ///< by server id
  std::vector<int>& touched;     ///< servers changed this round, in the order changed
  uint32_t& epoch;               ///< this round's stamp (kept between rounds with the stamps)
  bool with_extras = false;

  /// A fresh view of the ledger as it is now.
  void reset(bool extras) {
    with_extras = extras;
    touched.clear();
    if (stamp.size() != l.servers.size()) {
      stamp.assign(l.servers.size(), 0);
      vals.assign(l.servers.size(), 0);
      epoch = 0;
    }
    if (++epoch == 0) {  // wrapped: no stamp may look current
      std::fill(stamp.begin(), stamp.end(), 0);
      epoch = 1;
    }
  }
  /// A server best_fit and capacity look at: of `type`, training, or loaned if `loaned`.
  static bool in_scope(const server_entry& s, int type, bool loaned) {
    return s.gpu_type == type && (s.mode == server_mode::training || (loaned && s.mode == server_mode::loaned));
  }
  int initial(size_t sid) const {
    auto& s = l.servers[sid];
    return s.free + (with_extras ? s.extra : 0);
  }
  int at(int sid) const {
    auto i = static_cast<size_t>(sid);
    return stamp[i] == epoch ? std::max(vals[i], 0) : initial(i);
  }
  int& at_mut(int sid) {
    auto i = static_cast<size_t>(sid);
    if (stamp[i] != epoch) {
      stamp[i] = epoch;
      vals[i] = initial(i);
      touched.push_back(sid);
    }
    return vals[i];
  }

  /// Free GPUs in this view over the servers in_scope(type, loaned): the ledger's total, with
  /// the servers this round changed as they are here. No pass over every server.
  long total(int type, bool loaned) const {
    long sum = l.capacity(type, loaned, with_extras);
    for (int sid : touched) {
      auto i = static_cast<size_t>(sid);
      if (in_scope(l.servers[i], type, loaned)) sum += std::max(vals[i], 0) - initial(i);
    }
    return sum;
  }

  /// The servers `j` may use (of `only_type` if set) with their free GPUs in this view, into
  /// `out`.
  std::vector<server_slot>& slots(const job_entry& j, const policy_spec& p, const planner_options& o,
                                  int only_type, std::vector<server_slot>& out) const {
    out.clear();
    for (auto& s : l.servers)
      if ((only_type < 0 || s.gpu_type == only_type) && usable_for(s, j, p, o))
        out.push_back({s.id, s.gpu_type, s.gpus, at(s.id)});
    return out;
  }
  /// What place_one's consolidated rule picks for a request of `gpus` that fits one server
  /// of `type` (the fewest free >= gpus, ties lowest id), from the ledger's index for the
  /// servers this round has not changed and a look at those it has.
  int best_fit(int type, int gpus, bool loaned) const {
    int best = l.best_fit_if(type, gpus, loaned, with_extras,
                             [&](int sid) { return stamp[static_cast<size_t>(sid)] == epoch; });
    std::pair<int, int> key{best >= 0 ? at(best) : 0, best};
    for (int sid : touched) {
      if (!in_scope(l.servers[static_cast<size_t>(sid)], type, loaned)) continue;
      std::pair<int, int> k{std::max(vals[static_cast<size_t>(sid)], 0), sid};
      if (k.first >= gpus && (key.second < 0 || k < key)) key = k;
    }
    return key.second;
  }
  /// Free GPUs of `type` in this view on the servers best_fit looks at.
  long capacity(int type, bool loaned) const {
    long c = l.capacity(type, loaned, with_extras);
    for (int sid : touched) {
      if (in_scope(l.servers[static_cast<size_t>(sid)], type, loaned))
        c += std::max(vals[static_cast<size_t>(sid)], 0) - initial(static_cast<size_t>(sid));
    }
    return c;
  }
  void take(const allocation& a) {
    for (auto& [sid, w] : a) at_mut(sid) -= w;
  }
  void give(const allocation& a) {
    for (auto& [sid, w] : a) at_mut(sid) += w;
  }
};

/// A view of the ledger kept in `m`.
inline work_view view_of(const cluster_ledger& l, view_storage& m) { return {l, m.vals, m.stamp, m.touched, m.epoch}; }

inline int type_of(const cluster_ledger& l, const allocation& a) {
  return l.servers.at(static_cast<size_t>(a.front().first)).gpu_type;
}

inline double speed(const cluster_ledger& l, int type) { return l.params.type_speed.at(static_cast<size_t>(type)); }

/// GPU types to try, fastest first (ties: lower id); just `required` when it is set; into `out`.
inline void types_by_speed(const cluster_ledger& l, int required, std::vector<int>& out) {
  out.clear();
  if (required >= 0) {
    out.push_back(required);
    return;
  }
  for (size_t i = 0; i < l.params.type_speed.size(); ++i) out.push_back(static_cast<int>(i));
  small_stable_sort(out.begin(), out.end(), [&](int a, int b) { return speed(l, a) > speed(l, b); });
}

/// Calls f(server, workers) for each server where `a` has workers beyond those in `base`.
template <class F>
inline void for_each_extra(const allocation& a, const allocation& base, F f) {
  for (auto [sid, w] : a) {
    for (auto& [bsid, bw] : base)
      if (bsid == sid) w -= bw;
    if (w > 0) f(sid, w);
  }
}

} // namespace aryl::detail
