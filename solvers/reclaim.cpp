#include "solvers/reclaim.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace aryl {
namespace {

[[noreturn]] void fail(const std::string& what) {
  throw std::invalid_argument("reclaim: " + what);
}

/// The instance indexed for incremental cost updates: servers by position in `loaned`,
/// jobs by position in `jobs`.
struct reclaim_state {
  struct job_info {
    int total = 0;  ///< workers on all servers, loaned or not
    int min = 1;
    int gpw = 1;
    int lost = 0;   ///< workers on the servers returned so far
  };
  std::vector<job_info> jobs;
  std::vector<std::vector<std::pair<size_t, int>>> on_server;  ///< (job, workers) per server
  std::vector<long> busy;                                       ///< busy GPUs per server
  reclaim_cost cost;

  explicit reclaim_state(const reclaim_input& in) {
    std::unordered_map<int, size_t> pos;
    for (size_t s = 0; s < in.loaned.size(); ++s) pos.emplace(in.loaned[s].id, s);
    on_server.resize(in.loaned.size());
    busy.assign(in.loaned.size(), 0);
    jobs.resize(in.jobs.size());
    for (size_t j = 0; j < in.jobs.size(); ++j) {
      const auto& job = in.jobs[j];
      jobs[j].min = job.min_workers;
      jobs[j].gpw = job.gpus_per_worker;
      for (auto [server, workers] : job.placement) {
        jobs[j].total += workers;
        auto it = pos.find(server);
        if (it == pos.end()) continue;  // a training server: stays
        on_server[it->second].emplace_back(j, workers);
        busy[it->second] += static_cast<long>(workers) * job.gpus_per_worker;
      }
    }
  }

  /// Adds (sign = +1) or removes (sign = -1) the cost contribution of job j at lost = l.
  void account(size_t j, int l, int sign, reclaim_cost& c) const {
    if (l == 0) return;
    const auto& job = jobs[j];
    if (job.total - l < job.min) {
      c.preempted_jobs += sign;
      c.preempted_gpus += sign * static_cast<long>(job.total) * job.gpw;
    } else {
      c.scaled_in_workers += sign * l;
    }
  }

  /// Cost after also returning server s (without changing the state).
  reclaim_cost cost_with(size_t s) const {
    reclaim_cost c = cost;
    for (auto [j, w] : on_server[s]) {
      account(j, jobs[j].lost, -1, c);
      account(j, jobs[j].lost + w, +1, c);
    }
    return c;
  }

  /// Returns (sign = +1) or un-returns (sign = -1) server s.
  void apply(size_t s, int sign) {
    for (auto [j, w] : on_server[s]) {
      account(j, jobs[j].lost, -1, cost);
      jobs[j].lost += sign * w;
      account(j, jobs[j].lost, +1, cost);
    }
  }
};

reclaim_result make_result(const reclaim_input& in, const reclaim_state& st,
                           const std::vector<char>& chosen) {
  reclaim_result r;
  for (size_t s = 0; s < in.loaned.size(); ++s)
    if (chosen[s]) r.returned.push_back(in.loaned[s].id);
  std::sort(r.returned.begin(), r.returned.end());
  for (size_t j = 0; j < in.jobs.size(); ++j) {
    const auto& job = st.jobs[j];
    if (job.lost == 0) continue;
    if (job.total - job.lost < job.min)
      r.preempted.push_back(in.jobs[j].id);
    else
      r.scaled_in.emplace_back(in.jobs[j].id, job.lost);
  }
  std::sort(r.preempted.begin(), r.preempted.end());
  std::sort(r.scaled_in.begin(), r.scaled_in.end());
  r.cost = st.cost;
  return r;
}

/// Server positions by ascending id.
std::vector<size_t> by_id(const reclaim_input& in) {
  std::vector<size_t> order(in.loaned.size());
  for (size_t s = 0; s < order.size(); ++s) order[s] = s;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return in.loaned[a].id < in.loaned[b].id; });
  return order;
}

/// Depth-first branch and bound; see reclaim_exact.
struct exact_search {
  reclaim_state& st;
  const std::vector<size_t>& order;   ///< server positions by ascending id
  const reclaim_input& in;
  std::vector<size_t> current;         ///< chosen positions, ascending id
  std::vector<size_t> best;
  reclaim_cost best_cost;

  /// -1, 0, 1 as the id list of `a` compares with that of `b` over their first n entries.
  int compare_ids(const std::vector<size_t>& a, const std::vector<size_t>& b, size_t n) const {
    for (size_t i = 0; i < n; ++i) {
      int x = in.loaned[a[i]].id, y = in.loaned[b[i]].id;
      if (x != y) return x < y ? -1 : 1;
    }
    return 0;
  }

  void search(size_t next, size_t need) {
    // Cost never decreases as servers are added, so the partial cost bounds every completion.
    if (st.cost > best_cost) return;
    if (st.cost == best_cost && compare_ids(current, best, current.size()) > 0) return;
    if (need == 0) {
      if (st.cost < best_cost || compare_ids(current, best, current.size()) < 0) {
        best = current;
        best_cost = st.cost;
      }
      return;
    }
    if (order.size() - next < need) return;
    size_t s = order[next];
    st.apply(s, +1);
    current.push_back(s);
    search(next + 1, need - 1);
    current.pop_back();
    st.apply(s, -1);
    search(next + 1, need);
  }
};

} // namespace

void validate_reclaim(const reclaim_input& in) {
  if (in.count < 0 || static_cast<size_t>(in.count) > in.loaned.size())
    fail("count " + std::to_string(in.count) + " is not between 0 and the " +
         std::to_string(in.loaned.size()) + " loaned servers");
  std::unordered_map<int, long> capacity;
  for (const auto& s : in.loaned) {
    if (s.gpus < 0) fail("server " + std::to_string(s.id) + " has negative gpus");
    if (!capacity.emplace(s.id, s.gpus).second)
      fail("server id " + std::to_string(s.id) + " repeats");
  }
  std::unordered_set<int> job_ids;
  for (const auto& j : in.jobs) {
    const std::string name = "job " + std::to_string(j.id);
    if (!job_ids.insert(j.id).second) fail("job id " + std::to_string(j.id) + " repeats");
    if (j.min_workers < 1) fail(name + " has min_workers < 1");
    if (j.gpus_per_worker < 1) fail(name + " has gpus_per_worker < 1");
    std::unordered_set<int> seen;
    for (auto [server, workers] : j.placement) {
      if (workers <= 0) fail(name + " has " + std::to_string(workers) + " workers on a server");
      if (!seen.insert(server).second)
        fail(name + " names server " + std::to_string(server) + " twice");
      auto it = capacity.find(server);
      if (it != capacity.end()) it->second -= static_cast<long>(workers) * j.gpus_per_worker;
    }
  }
  for (const auto& s : in.loaned)
    if (capacity[s.id] < 0)
      fail("workers on server " + std::to_string(s.id) + " need more than its " +
           std::to_string(s.gpus) + " GPUs");
}

reclaim_result evaluate_reclaim(const reclaim_input& in, const std::vector<int>& returned) {
  reclaim_state st(in);
  std::unordered_set<int> ids(returned.begin(), returned.end());
  std::vector<char> chosen(in.loaned.size(), 0);
  for (size_t s = 0; s < in.loaned.size(); ++s)
    if (ids.count(in.loaned[s].id)) {
      chosen[s] = 1;
      st.apply(s, +1);
    }
  return make_result(in, st, chosen);
}

reclaim_result reclaim_greedy(const reclaim_input& in) {
  validate_reclaim(in);
  reclaim_state st(in);
  const auto order = by_id(in);
  std::vector<char> chosen(in.loaned.size(), 0);
  size_t left = static_cast<size_t>(in.count);
  // Idle servers cost nothing; taking them first also keeps busy ones for training.
  for (size_t s : order) {
    if (left == 0) break;
    if (st.on_server[s].empty()) {
      chosen[s] = 1;
      --left;
    }
  }
  for (; left > 0; --left) {
    size_t pick = 0;
    bool have = false;
    reclaim_cost pick_cost;
    for (size_t s : order) {  // ascending id, so a strict comparison keeps the lowest id
      if (chosen[s]) continue;
      reclaim_cost c = st.cost_with(s);
      if (!have || c < pick_cost || (c == pick_cost && st.busy[s] < st.busy[pick])) {
        pick = s;
        pick_cost = c;
        have = true;
      }
    }
    chosen[pick] = 1;
    st.apply(pick, +1);
  }
  return make_result(in, st, chosen);
}

reclaim_result reclaim_exact(const reclaim_input& in) {
  auto seed = reclaim_greedy(in);  // also validates
  reclaim_state st(in);
  const auto order = by_id(in);
  exact_search search{st, order, in, {}, {}, seed.cost};
  std::unordered_set<int> seed_ids(seed.returned.begin(), seed.returned.end());
  for (size_t s : order)
    if (seed_ids.count(in.loaned[s].id)) search.best.push_back(s);
  search.search(0, static_cast<size_t>(in.count));
  std::vector<char> chosen(in.loaned.size(), 0);
  for (size_t s : search.best) {
    chosen[s] = 1;
    st.apply(s, +1);
  }
  return make_result(in, st, chosen);
}

} // namespace aryl
