#include "solvers/extra_placement.hpp"

#include <algorithm>

namespace aryl {
namespace {

bool contains(const std::vector<int>& ids, int id) { return std::find(ids.begin(), ids.end(), id) != ids.end(); }

/// Distinct ids in a job's few home servers (no copy: called for every job of a round).
int distinct(const std::vector<int>& ids) {
  int n = 0;
  for (auto it = ids.begin(); it != ids.end(); ++it) n += std::find(ids.begin(), it, *it) == it;
  return n;
}

/// Sorts positions `pos` of servers `s` by free GPUs descending, ties lowest id. Rounds call
/// this on hundreds of servers whose free counts are small, listed by id: a stable counting
/// sort by free count gives the order in linear time; other inputs are sorted by comparison.
void sort_most_free_first(const std::vector<server_slot>& s, std::vector<size_t>& pos) {
  int top = 0;
  bool by_id = true;
  for (size_t k = 0; k < pos.size(); ++k) {
    top = std::max(top, s[pos[k]].free);
    if (k > 0 && s[pos[k]].id < s[pos[k - 1]].id) by_id = false;
  }
  if (!by_id || top > 4096) {
    std::sort(pos.begin(), pos.end(), [&](size_t a, size_t b) {
      return s[a].free != s[b].free ? s[a].free > s[b].free : s[a].id < s[b].id;
    });
    return;
  }
  thread_local std::vector<size_t> start, sorted;
  start.assign(static_cast<size_t>(top) + 2, 0);
  for (size_t i : pos) ++start[static_cast<size_t>(top - s[i].free) + 1];
  for (size_t k = 1; k < start.size(); ++k) start[k] += start[k - 1];
  sorted.resize(pos.size());
  for (size_t i : pos) sorted[start[static_cast<size_t>(top - s[i].free)]++] = i;
  pos.swap(sorted);
}

/// Positions of the type's servers outside `home` with free GPUs, most free first, ties
/// lowest id: the order in which the fewest new servers are counted.
void others_most_free_first(const std::vector<server_slot>& s, const extras_request& req, std::vector<size_t>& out) {
  out.clear();
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i].gpu_type == req.gpu_type && s[i].free > 0 && !contains(req.home, s[i].id)) out.push_back(i);
  sort_most_free_first(s, out);
}

long home_free(const std::vector<server_slot>& s, const extras_request& req) {
  long total = 0;
  for (auto& x : s)
    if (x.gpu_type == req.gpu_type && contains(req.home, x.id)) total += x.free;
  return total;
}

} // namespace

std::vector<server_slot> most_free_first(const std::vector<server_slot>& servers, int gpu_type) {
  std::vector<server_slot> out;
  most_free_first(servers, gpu_type, out);
  return out;
}

void most_free_first(const std::vector<server_slot>& servers, int gpu_type, std::vector<server_slot>& out) {
  thread_local std::vector<size_t> pos;
  pos.clear();
  for (size_t i = 0; i < servers.size(); ++i)
    if (servers[i].gpu_type == gpu_type && servers[i].free > 0) pos.push_back(i);
  sort_most_free_first(servers, pos);
  out.clear();
  for (size_t i : pos) out.push_back(servers[i]);
}

void spans_from_ranking(const std::vector<server_slot>& ranking, long home_free, const extras_request& req,
                        int max_extra, std::vector<int>& out) {
  out.assign(static_cast<size_t>(std::max(max_extra, 0)) + 1, -1);
  const int home_span = distinct(req.home);
  long room = home_free;
  int used = 0;
  auto next = ranking.begin();
  for (int k = 0; k <= max_extra; ++k) {
    // The fewest new servers that hold what the home servers cannot: the largest ones.
    while (room < k && next != ranking.end()) {
      if (next->gpu_type == req.gpu_type && !contains(req.home, next->id)) {
        room += next->free;
        ++used;
      }
      ++next;
    }
    if (room < k) break;
    out[static_cast<size_t>(k)] = home_span + used;
  }
}

std::vector<int> spans_with_extras(const std::vector<server_slot>& servers, const extras_request& req,
                                   int max_extra) {
  std::vector<int> out;
  spans_from_ranking(most_free_first(servers, req.gpu_type), home_free(servers, req), req, max_extra, out);
  return out;
}

std::optional<allocation> place_extras(std::vector<server_slot>& servers, const extras_request& req) {
  allocation out;
  if (!place_extras(servers, req, out)) return std::nullopt;
  return out;
}

bool place_extras(std::vector<server_slot>& servers, const extras_request& req, allocation& out) {
  out.clear();
  if (req.gpus < 0) return false;
  if (req.gpus == 0) return true;
  long total = 0;
  for (auto& x : servers)
    if (x.gpu_type == req.gpu_type) total += x.free;
  if (total < req.gpus) return false;

  int remaining = req.gpus;
  auto take = [&](server_slot& s, int n) {
    s.free -= n;
    out.emplace_back(s.id, n);
    remaining -= n;
  };
  for (int id : req.home)
    for (auto& s : servers)
      if (remaining > 0 && s.id == id && s.gpu_type == req.gpu_type && s.free > 0) take(s, std::min(s.free, remaining));

  // Most rounds' extras fit on their job's own servers: no other server need be ranked.
  thread_local std::vector<size_t> left;
  if (remaining == 0) left.clear();
  else
    others_most_free_first(servers, req, left);
  // Picks left: the fewest new servers that hold the rest. Each pick below keeps the rest
  // within the picks that remain, so the count never grows past this.
  int picks = 0;
  for (long room = 0; room < remaining; ++picks) room += servers[left[static_cast<size_t>(picks)]].free;
  while (remaining > 0) {
    // Could the rest fit with `c` picked now and picks - 1 of the others (the largest)?
    auto keeps_fit = [&](size_t c) {
      long room = servers[c].free;
      int more = picks - 1;
      for (size_t i = 0; i < left.size() && more > 0; ++i) {
        if (left[i] == c) continue;
        room += servers[left[i]].free;
        --more;
      }
      return room >= remaining;
    };
    long pick = -1;
    for (int id : req.occupied)
      for (size_t c : left)
        if (pick < 0 && servers[c].id == id && keeps_fit(c)) pick = static_cast<long>(c);
    if (pick < 0)
      for (size_t c : left) {
        if (servers[c].free < remaining) continue;
        if (pick >= 0) {
          auto& best = servers[static_cast<size_t>(pick)];
          if (servers[c].free > best.free || (servers[c].free == best.free && servers[c].id > best.id)) continue;
        }
        pick = static_cast<long>(c);
      }
    if (pick < 0) pick = static_cast<long>(left.front());
    auto& s = servers[static_cast<size_t>(pick)];
    take(s, std::min(s.free, remaining));
    left.erase(std::find(left.begin(), left.end(), static_cast<size_t>(pick)));
    --picks;
  }
  std::sort(out.begin(), out.end());
  // A home id listed twice is taken twice: one entry per server.
  size_t n = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (n > 0 && out[n - 1].first == out[i].first) out[n - 1].second += out[i].second;
    else out[n++] = out[i];
  }
  out.resize(n);
  return true;
}

} // namespace aryl
