#include "solvers/reclaim.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <unordered_set>

#include "solvers/plural.hpp"

namespace aryl {
namespace {

[[noreturn]] void fail(const std::string& what) {
  throw std::invalid_argument("reclaim: " + what);
}

/// The instance indexed for incremental cost updates: servers by position in `loaned`,
/// jobs by position in `jobs`, adjacency in flat arrays. Building it validates the input
/// (see validate_reclaim).
struct reclaim_state {
  struct job_info {
    int total = 0;  ///< workers on all servers, loaned or not
    int min = 1;
    int gpw = 1;
    int lost = 0;   ///< workers on the servers returned so far
  };
  struct entry {
    uint32_t other;  ///< job (in a server's list) or server (in a job's list)
    int workers;
  };
  std::vector<job_info> jobs;
  std::vector<size_t> server_begin;  ///< server s's jobs: server_jobs[server_begin[s] ..)
  std::vector<entry> server_jobs;
  std::vector<size_t> job_begin;     ///< job j's loaned servers: job_servers[job_begin[j] ..)
  std::vector<entry> job_servers;
  std::vector<long> busy;            ///< busy GPUs per server
  reclaim_cost cost;

  explicit reclaim_state(const reclaim_input& in) {
    const size_t n = in.loaned.size();
    if (in.count < 0 || static_cast<size_t>(in.count) > n)
      fail("count " + std::to_string(in.count) + " is not between 0 and the " +
           std::to_string(n) + " loaned servers");
    // Server id -> position: a direct table when the ids are compact (the usual case),
    // else binary search over sorted (id, position) pairs.
    long lo = 0, hi = -1;
    for (size_t s = 0; s < n; ++s) {
      if (in.loaned[s].gpus < 0) fail("server " + std::to_string(in.loaned[s].id) + " has negative gpus");
      lo = s == 0 ? in.loaned[s].id : std::min<long>(lo, in.loaned[s].id);
      hi = s == 0 ? in.loaned[s].id : std::max<long>(hi, in.loaned[s].id);
    }
    const bool dense = hi - lo < 4 * static_cast<long>(n) + 64;
    std::vector<int32_t> table(dense ? static_cast<size_t>(hi - lo + 1) : 0, -1);
    std::vector<std::pair<int, uint32_t>> pos;  // sparse case only
    for (size_t s = 0; s < n; ++s) {
      const int id = in.loaned[s].id;
      if (dense) {
        int32_t& slot = table[static_cast<size_t>(id - lo)];
        if (slot >= 0) fail("server id " + std::to_string(id) + " repeats");
        slot = static_cast<int32_t>(s);
      } else {
        pos.emplace_back(id, static_cast<uint32_t>(s));
      }
    }
    std::sort(pos.begin(), pos.end());
    for (size_t i = 1; i < pos.size(); ++i)
      if (pos[i].first == pos[i - 1].first) fail("server id " + std::to_string(pos[i].first) + " repeats");
    auto position_of = [&](int id) -> long {  // -1: not loaned (a training server)
      if (dense) return id < lo || id > hi ? -1 : table[static_cast<size_t>(id - lo)];
      auto it = std::lower_bound(pos.begin(), pos.end(), std::pair<int, uint32_t>{id, 0});
      return it == pos.end() || it->first != id ? -1 : static_cast<long>(it->second);
    };
    std::vector<int> job_ids;
    for (const auto& j : in.jobs) job_ids.push_back(j.id);
    std::sort(job_ids.begin(), job_ids.end());
    for (size_t i = 1; i < job_ids.size(); ++i)
      if (job_ids[i] == job_ids[i - 1]) fail("job id " + std::to_string(job_ids[i]) + " repeats");

    jobs.resize(in.jobs.size());
    job_begin.assign(in.jobs.size() + 1, 0);
    busy.assign(n, 0);
    std::vector<size_t> per_server(n + 1, 0);
    size_t entries = 0;
    for (const auto& job : in.jobs) entries += job.placement.size();
    job_servers.reserve(entries);
    for (size_t j = 0; j < in.jobs.size(); ++j) {
      const auto& job = in.jobs[j];
      auto name = [&] { return "job " + std::to_string(job.id); };  // only built to fail
      if (job.min_workers < 1) fail(name() + " has min_workers < 1");
      if (job.gpus_per_worker < 1) fail(name() + " has gpus_per_worker < 1");
      jobs[j].min = job.min_workers;
      jobs[j].gpw = job.gpus_per_worker;
      job_begin[j] = job_servers.size();
      const auto& pl = job.placement;
      for (size_t k = 0; k < pl.size(); ++k) {
        auto [server, workers] = pl[k];
        if (workers <= 0) fail(name() + " has " + std::to_string(workers) + " workers on a server");
        for (size_t e = 0; e < k; ++e)  // placements are short: quadratic is cheapest
          if (pl[e].first == server) fail(name() + " names server " + std::to_string(server) + " twice");
        jobs[j].total += workers;
        const long at = position_of(server);
        if (at < 0) continue;  // a training server: stays
        const auto s = static_cast<size_t>(at);
        job_servers.push_back({static_cast<uint32_t>(s), workers});
        busy[s] += static_cast<long>(workers) * job.gpus_per_worker;
        ++per_server[s + 1];
      }
    }
    job_begin[in.jobs.size()] = job_servers.size();
    for (size_t s = 0; s < n; ++s)
      if (busy[s] > in.loaned[s].gpus)
        fail("workers on server " + std::to_string(in.loaned[s].id) + " need more than its " +
             gpus_text(in.loaned[s].gpus));
    // Transpose the job -> server lists into server -> job lists.
    for (size_t s = 0; s < n; ++s) per_server[s + 1] += per_server[s];
    server_begin = per_server;
    server_jobs.resize(job_servers.size());
    for (size_t j = 0; j < in.jobs.size(); ++j)
      for (size_t e = job_begin[j]; e < job_begin[j + 1]; ++e)
        server_jobs[per_server[job_servers[e].other]++] = {static_cast<uint32_t>(j), job_servers[e].workers};
  }

  bool idle(size_t s) const { return server_begin[s] == server_begin[s + 1]; }

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

  /// Change in cost if server s were also returned (the state is not changed). Depends
  /// only on the jobs on s.
  reclaim_cost delta_of(size_t s) const {
    reclaim_cost c;
    for (size_t e = server_begin[s]; e < server_begin[s + 1]; ++e) {
      auto [j, w] = server_jobs[e];
      account(j, jobs[j].lost, -1, c);
      account(j, jobs[j].lost + w, +1, c);
    }
    return c;
  }

  /// Returns (sign = +1) or un-returns (sign = -1) server s.
  void apply(size_t s, int sign) {
    for (size_t e = server_begin[s]; e < server_begin[s + 1]; ++e) {
      auto [j, w] = server_jobs[e];
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

void validate_reclaim(const reclaim_input& in) { reclaim_state check(in); }

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
  reclaim_state st(in);  // validates
  const auto order = by_id(in);
  const size_t n = in.loaned.size();
  std::vector<char> chosen(n, 0);
  size_t left = static_cast<size_t>(in.count);
  // Idle servers cost nothing; taking them first also keeps busy ones for training.
  for (size_t s : order) {
    if (left == 0) break;
    if (st.idle(s)) {
      chosen[s] = 1;
      --left;
    }
  }
  // A server's marginal cost depends only on its own jobs, so after each pick only the
  // servers sharing a job with it are recomputed.
  std::vector<reclaim_cost> delta(n);
  for (size_t s = 0; s < n; ++s)
    if (!chosen[s]) delta[s] = st.delta_of(s);
  std::vector<uint32_t> touched;
  for (; left > 0; --left) {
    size_t pick = 0;
    bool have = false;
    for (size_t s : order) {  // ascending id, so a strict comparison keeps the lowest id
      if (chosen[s]) continue;
      if (!have || delta[s] < delta[pick] ||
          (delta[s] == delta[pick] && st.busy[s] < st.busy[pick])) {
        pick = s;
        have = true;
      }
    }
    chosen[pick] = 1;
    st.apply(pick, +1);
    touched.clear();
    for (size_t e = st.server_begin[pick]; e < st.server_begin[pick + 1]; ++e) {
      size_t j = st.server_jobs[e].other;
      for (size_t f = st.job_begin[j]; f < st.job_begin[j + 1]; ++f) touched.push_back(st.job_servers[f].other);
    }
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    for (uint32_t s : touched)
      if (!chosen[s]) delta[s] = st.delta_of(s);
  }
  return make_result(in, st, chosen);
}

reclaim_result reclaim_exact(const reclaim_input& in) {
  if (in.loaned.size() > static_cast<size_t>(max_exact_reclaim_servers))
    throw std::invalid_argument("reclaim: the exact solver takes at most " +
                                std::to_string(max_exact_reclaim_servers) + " loaned servers (got " +
                                std::to_string(in.loaned.size()) + "); use greedy");
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
