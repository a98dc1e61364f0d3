#include "solvers/placement.hpp"

#include <algorithm>
#include <numeric>

namespace aryl {
namespace {

/// A placement being built: applied to `servers` as it goes so later steps see the
/// GPUs already taken, and undone if the request turns out not to fit.
struct tentative {
  std::vector<server_slot>& servers;
  std::vector<std::pair<size_t, int>> taken;  ///< (server position, GPUs)

  void take(size_t pos, int gpus) {
    servers[pos].free -= gpus;
    taken.emplace_back(pos, gpus);
  }
  void undo() {
    for (auto& [pos, gpus] : taken) servers[pos].free += gpus;
    taken.clear();
  }
  allocation result() const {
    allocation a;
    a.reserve(taken.size());
    for (auto& [pos, gpus] : taken) a.emplace_back(servers[pos].id, gpus);
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

/// Best fit: among servers of `type` with at least `gpus` free, the one with the fewest
/// free GPUs, ties lowest id. Leaving big holes intact keeps room for later large jobs.
/// Returns the position, or -1 when none fits.
long best_fit_host(const std::vector<server_slot>& servers, int type, int gpus) {
  long best = -1;
  for (size_t i = 0; i < servers.size(); ++i) {
    const auto& s = servers[i];
    if (s.gpu_type != type || s.free < gpus) continue;
    if (best < 0) {
      best = static_cast<long>(i);
      continue;
    }
    const auto& b = servers[static_cast<size_t>(best)];
    if (s.free < b.free || (s.free == b.free && s.id < b.id)) best = static_cast<long>(i);
  }
  return best;
}

/// The node-choice rule of consolidated placement, kept in one place so it can be changed
/// (e.g. to match a peer simulator) without touching the rest: the server that hosts a
/// request of `gpus` (<= server size) GPUs on a single node. Currently best fit.
long pick_consolidated_host(const std::vector<server_slot>& servers, int type, int gpus) {
  return best_fit_host(servers, type, gpus);
}

long find_server(const std::vector<server_slot>& servers, int id) {
  for (size_t i = 0; i < servers.size(); ++i)
    if (servers[i].id == id) return static_cast<long>(i);
  return -1;
}

/// Consolidated placement on one GPU type. Small requests (<= the largest server of the
/// type): one server, a preferred one if any fits (in prefer order), else the rule above.
/// Large requests: whole free servers (preferred first, then ascending id, each taken only
/// if its size <= the GPUs still needed), then the remainder on one more server chosen by
/// the rule above. Choice: the remainder is allowed, so a 12-GPU job on 8-GPU servers takes
/// one whole server plus 4 GPUs of a best-fit server instead of waiting for two.
bool place_consolidated(tentative& t, const place_request& req, int type) {
  auto& servers = t.servers;
  int size = 0;
  for (const auto& s : servers)
    if (s.gpu_type == type) size = std::max(size, s.gpus);
  if (size == 0) return false;

  if (req.gpus <= size) {
    for (int id : req.prefer) {
      long p = find_server(servers, id);
      if (p >= 0 && servers[p].gpu_type == type && servers[p].free >= req.gpus) {
        t.take(static_cast<size_t>(p), req.gpus);
        return true;
      }
    }
    long p = pick_consolidated_host(servers, type, req.gpus);
    if (p < 0) return false;
    t.take(static_cast<size_t>(p), req.gpus);
    return true;
  }

  int remaining = req.gpus;
  auto take_whole = [&](size_t p) {
    const auto& s = servers[p];
    if (s.gpu_type == type && s.gpus > 0 && s.free == s.gpus && s.gpus <= remaining) {
      remaining -= s.gpus;
      t.take(p, s.gpus);
    }
  };
  for (int id : req.prefer) {
    long p = find_server(servers, id);
    if (p >= 0) take_whole(static_cast<size_t>(p));
  }
  std::vector<size_t> by_id(servers.size());
  std::iota(by_id.begin(), by_id.end(), size_t{0});
  std::sort(by_id.begin(), by_id.end(),
            [&](size_t a, size_t b) { return servers[a].id < servers[b].id; });
  for (size_t p : by_id) {
    if (remaining == 0) break;
    take_whole(p);
  }
  if (remaining > 0) {
    long p = pick_consolidated_host(servers, type, remaining);
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
bool place_count(tentative& t, const place_request& req, int type) {
  auto& servers = t.servers;
  long total = 0;
  for (const auto& s : servers)
    if (s.gpu_type == type) total += s.free;
  if (total < req.gpus) return false;

  int remaining = req.gpus;
  for (int id : req.prefer) {
    if (remaining == 0) break;
    long p = find_server(servers, id);
    if (p < 0 || servers[p].gpu_type != type) continue;
    int n = std::min(servers[p].free, remaining);
    if (n <= 0) continue;
    t.take(static_cast<size_t>(p), n);
    remaining -= n;
  }
  if (remaining == 0) return true;

  long p = best_fit_host(servers, type, remaining);
  if (p >= 0) {
    t.take(static_cast<size_t>(p), remaining);
    return true;
  }
  std::vector<size_t> order;
  for (size_t i = 0; i < servers.size(); ++i)
    if (servers[i].gpu_type == type && servers[i].free > 0) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (servers[a].free != servers[b].free) return servers[a].free > servers[b].free;
    return servers[a].id < servers[b].id;
  });
  for (size_t i : order) {
    if (remaining == 0) break;
    int n = std::min(servers[i].free, remaining);
    t.take(i, n);
    remaining -= n;
  }
  return remaining == 0;  // always true: total >= gpus was checked
}

/// GPU types to try for a request, in order. A typed request: just its type. An untyped
/// one: the types of its preferred servers first (in prefer order), so a running job's
/// extra workers stay on the type it already uses, then the remaining types ascending.
std::vector<int> types_to_try(const std::vector<server_slot>& servers, const place_request& req) {
  if (req.gpu_type >= 0) return {req.gpu_type};
  std::vector<int> types;
  for (int id : req.prefer) {
    long p = find_server(servers, id);
    if (p >= 0 && std::find(types.begin(), types.end(), servers[p].gpu_type) == types.end())
      types.push_back(servers[p].gpu_type);
  }
  std::vector<int> all;
  for (const auto& s : servers) all.push_back(s.gpu_type);
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  for (int ty : all)
    if (std::find(types.begin(), types.end(), ty) == types.end()) types.push_back(ty);
  return types;
}

} // namespace

std::optional<allocation> place_one(placement_mode mode, std::vector<server_slot>& servers,
                                    const place_request& req) {
  if (req.gpus < 0) return std::nullopt;
  if (req.gpus == 0) return allocation{};
  for (int type : types_to_try(servers, req)) {
    tentative t{servers, {}};
    bool ok = mode == placement_mode::consolidated ? place_consolidated(t, req, type)
                                                   : place_count(t, req, type);
    if (ok) return t.result();
  }
  return std::nullopt;
}

placement_result place_bfd(placement_mode mode, std::vector<server_slot>& servers,
                           const std::vector<place_request>& requests) {
  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return requests[a].gpus > requests[b].gpus; });
  placement_result r;
  std::vector<size_t> unplaced;
  for (size_t i : order) {
    if (auto a = place_one(mode, servers, requests[i]))
      r.placed.emplace_back(requests[i].id, std::move(*a));
    else
      unplaced.push_back(i);
  }
  std::sort(unplaced.begin(), unplaced.end());
  for (size_t i : unplaced) r.unplaced.push_back(requests[i].id);
  return r;
}

} // namespace aryl
