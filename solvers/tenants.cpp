#include "solvers/tenants.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace aryl {
namespace {

bool on_training(const cluster_ledger& l, const job_entry& j) {
  return !j.alloc.empty() && l.servers[static_cast<size_t>(j.alloc.front().first)].home == server_home::training;
}

} // namespace

long base_held(const job_entry& j, const policy_spec& p) {
  return p.elastic && j.elastic && !j.base.empty() ? count_workers(j.base) : j.workers;
}

namespace {

} // namespace

void settle_tenant_usage(cluster_ledger& l, const policy_spec& p, sim_time now) {
  const double halflife = l.params.tenant_halflife_s;
  for (auto& t : l.tenants) {
    double dt = (now - t.usage_at).seconds();
    if (dt > 0) {
      // Exact for holdings constant over dt: U e^{-k dt} + G (1 - e^{-k dt}) / k.
      if (halflife > 0) {
        double k = std::log(2.0) / halflife, d = std::exp(-k * dt);
        t.usage_gpu_s = t.usage_gpu_s * d + static_cast<double>(t.held_all) * (1 - d) / k;
      } else {
        t.usage_gpu_s += static_cast<double>(t.held_all) * dt;
      }
    }
    t.usage_at = now;
    t.held_base = t.held_all = 0;
  }
  for (auto id : l.running) {
    auto& j = l.jobs[id];
    auto& t = l.tenants[static_cast<size_t>(j.tenant)];
    t.held_all += j.workers;
    if (on_training(l, j)) t.held_base += base_held(j, p);
  }
}

bool quota_victims_valid(const quota_reclaim_input& in, const std::vector<uint32_t>& victims) {
  long frees = 0;
  std::vector<long> sum(in.borrowed.size(), 0), max(in.borrowed.size(), 0);
  for (auto id : victims) {
    auto it = std::find_if(in.jobs.begin(), in.jobs.end(), [&](auto& c) { return c.job == id; });
    if (it == in.jobs.end()) return false;
    auto t = static_cast<size_t>(it->tenant);
    frees += it->frees;
    sum[t] += it->gpus;
    max[t] = std::max<long>(max[t], it->gpus);
  }
  for (size_t t = 0; t < sum.size(); ++t)
    if (sum[t] > 0 && sum[t] - max[t] >= in.borrowed[t]) return false;
  return frees >= in.need;
}

quota_reclaim_result choose_quota_victims(const quota_reclaim_input& in) {
  quota_reclaim_result best;
  // Candidates that free something, of tenants that borrow, largest frees first (ties: id).
  std::vector<size_t> order;
  for (size_t i = 0; i < in.jobs.size(); ++i) {
    auto& c = in.jobs[i];
    if (c.frees > 0 && c.tenant >= 0 && static_cast<size_t>(c.tenant) < in.borrowed.size() &&
        in.borrowed[static_cast<size_t>(c.tenant)] > 0)
      order.push_back(i);
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    auto &x = in.jobs[a], &y = in.jobs[b];
    return x.frees != y.frees ? x.frees > y.frees : x.job < y.job;
  });
  // suffix[i]: frees of order[i..], to prune branches that cannot meet the need.
  std::vector<long> suffix(order.size() + 1, 0);
  for (size_t i = order.size(); i-- > 0;) suffix[i] = suffix[i + 1] + in.jobs[order[i]].frees;
  if (in.need <= 0) {
    best.ok = true;
    return best;
  }
  if (suffix[0] < in.need) return best;

  std::vector<long> sum(in.borrowed.size(), 0), max(in.borrowed.size(), 0);
  auto fits = [&](const quota_candidate& c) {
    auto t = static_cast<size_t>(c.tenant);
    long s = sum[t] + c.gpus, m = std::max<long>(max[t], c.gpus);
    return s - m < in.borrowed[t];
  };
  std::vector<uint32_t> chosen;
  long steps = 0;
  bool out_of_budget = false;
  struct key {
    size_t n;
    long gpus;
    double cost;
  };
  auto better = [&](const key& k, const std::vector<uint32_t>& ids) {
    if (!best.ok) return true;
    if (k.n != best.victims.size()) return k.n < best.victims.size();
    if (k.gpus != best.gpus) return k.gpus < best.gpus;
    if (k.cost != best.cost_s) return k.cost < best.cost_s;
    return ids < best.victims;
  };
  long frees = 0, gpus = 0;
  double cost = 0;
  // Depth-first over candidates in order; a branch stops once the need is met (adding more
  // only makes it worse) or when it cannot beat the best count.
  auto dfs = [&](auto& self, size_t from) -> void {
    if (++steps > in.budget) {
      out_of_budget = true;
      return;
    }
    if (frees >= in.need) {
      auto ids = chosen;
      std::sort(ids.begin(), ids.end());
      if (better({chosen.size(), gpus, cost}, ids)) {
        best.ok = true;
        best.victims = std::move(ids);
        best.frees = frees;
        best.gpus = gpus;
        best.cost_s = cost;
      }
      return;
    }
    if (best.ok && chosen.size() + 1 > best.victims.size()) return;
    for (size_t i = from; i < order.size() && !out_of_budget; ++i) {
      if (frees + suffix[i] < in.need) return;
      // Fewer victims need the largest: with k left to choose, the k largest from i on.
      if (best.ok) {
        long top = 0;
        size_t left = best.victims.size() - chosen.size();
        for (size_t k = i; k < order.size() && k < i + left; ++k) top += in.jobs[order[k]].frees;
        if (frees + top < in.need) return;
      }
      auto& c = in.jobs[order[i]];
      if (!fits(c)) continue;
      auto t = static_cast<size_t>(c.tenant);
      long old_max = max[t];
      sum[t] += c.gpus;
      max[t] = std::max<long>(max[t], c.gpus);
      chosen.push_back(c.job);
      frees += c.frees;
      gpus += c.gpus;
      cost += c.cost_s;
      self(self, i + 1);
      cost -= c.cost_s;
      gpus -= c.gpus;
      frees -= c.frees;
      chosen.pop_back();
      max[t] = old_max;
      sum[t] -= c.gpus;
    }
  };
  dfs(dfs, 0);
  if (out_of_budget && !best.ok) {
    // Greedy: largest frees first, while valid.
    std::fill(sum.begin(), sum.end(), 0);
    std::fill(max.begin(), max.end(), 0);
    quota_reclaim_result g;
    for (size_t i : order) {
      if (g.frees >= in.need) break;
      auto& c = in.jobs[i];
      if (!fits(c)) continue;
      auto t = static_cast<size_t>(c.tenant);
      sum[t] += c.gpus;
      max[t] = std::max<long>(max[t], c.gpus);
      g.victims.push_back(c.job);
      g.frees += c.frees;
      g.gpus += c.gpus;
      g.cost_s += c.cost_s;
    }
    std::sort(g.victims.begin(), g.victims.end());
    g.ok = g.frees >= in.need;
    best = std::move(g);
  }
  best.exact = !out_of_budget;
  return best;
}

namespace detail {

void begin_tenant_round(const cluster_ledger& l, const policy_spec& p, tenant_round& b) {
  const size_t n = l.tenants.size();
  b.passed.clear();
  b.held.assign(n, 0);
  b.reserve.assign(n, 0);
  b.key.assign(n, 0);
  b.mean_life_s = l.params.tenant_halflife_s > 0 ? l.params.tenant_halflife_s / std::log(2.0) : 0;
  // What tenants hold now: jobs may have ended or been stopped since the last round settled.
  std::vector<long> all(n, 0);
  for (auto id : l.running) {
    auto& j = l.jobs[id];
    auto t = static_cast<size_t>(j.tenant);
    all[t] += j.workers;
    if (on_training(l, j)) b.held[t] += base_held(j, p);
  }
  for (size_t t = 0; t < n; ++t) {
    auto& e = l.tenants[t];
    b.key[t] = (e.usage_gpu_s + static_cast<double>(all[t]) * b.mean_life_s) / e.weight;
  }
  if (!l.params.quotas) return;
  // A lender keeps only what its queued base demand needs of its unused quota.
  std::vector<long> queued(n, 0);
  for (auto id : l.queued) {
    auto& j = l.jobs[id];
    queued[static_cast<size_t>(j.tenant)] += base_demand(j, p);
  }
  // Extra workers up to a job's requested size are its tenant's own within the quota (quota
  // growth, quota_growth.cpp): not lent, else a borrower's job would take them and be stopped
  // for them the next round.
  std::vector<long> grown(n, 0);
  if (p.elastic)
    for (auto id : l.running) {
      auto& j = l.jobs[id];
      if (j.elastic && on_training(l, j))
        grown[static_cast<size_t>(j.tenant)] += std::max(0L, std::min(j.workers, j.gpus) - base_held(j, p));
    }
  long pool = 0, held = 0, kept = 0;
  // A held (cordoned or drained) server's busy GPUs are in the pool, as its jobs' base GPUs
  // are in `held`; its free ones are not lent: otherwise its jobs would count twice.
  for (auto& s : l.servers)
    if (s.home == server_home::training && s.mode == server_mode::training) pool += s.gpus;
    else if (s.home == server_home::training && s.mode == server_mode::cordoned) pool += s.gpus - s.free;
  for (size_t t = 0; t < n; ++t) {
    auto& e = l.tenants[t];
    const long own = e.quota > 0 ? std::min(grown[t], std::max(0L, e.quota - b.held[t])) : 0;
    long unused = e.quota > 0 ? std::max(0L, e.quota - b.held[t] - own) : 0;
    b.reserve[t] = e.lend ? std::min(unused, queued[t]) : unused;
    held += b.held[t] + own;
    kept += b.reserve[t];
  }
  b.lendable = pool - held - kept;
}

bool quota_entitled(const cluster_ledger& l, const tenant_round& books, const job_entry& j, int demand) {
  auto t = static_cast<size_t>(j.tenant);
  auto& e = l.tenants[t];
  return e.quota >= 0 && books.held[t] + demand <= e.quota;
}

bool quota_admits(const cluster_ledger& l, const tenant_round& b, const job_entry& j, int demand) {
  auto t = static_cast<size_t>(j.tenant);
  auto& e = l.tenants[t];
  long own = std::min<long>(demand, b.reserve[t]);
  if (own >= demand) return true;
  return e.borrow && demand - own <= b.lendable;
}

void quota_took(tenant_round& b, const job_entry& j, int demand) {
  auto t = static_cast<size_t>(j.tenant);
  long own = std::min<long>(demand, b.reserve[t]);
  b.reserve[t] -= own;
  b.lendable -= demand - own;
  b.held[t] += demand;
}

std::vector<long> borrowed_now(const cluster_ledger& l, const tenant_round& books) {
  std::vector<long> out(l.tenants.size(), 0);
  for (size_t t = 0; t < out.size(); ++t)
    out[t] = books.held[t] - std::max(0L, l.tenants[t].quota);
  return out;
}

} // namespace detail
} // namespace aryl
