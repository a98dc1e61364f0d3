#pragma once
/// Tenants (docs/tenants.md, "Tenants and quotas"): each tenant's decayed usage, the
/// fair-share order in which a round takes queued jobs across tenants, quota admission, and
/// the choice of borrowed jobs to stop when a quota's owner needs it back. Pure.
///
/// Quotas count base demand (an elastic job's minimum, a rigid job's workers) on training
/// servers: extra workers are always lent (queued base demand takes them first, whoever owns
/// it), and loaned inference servers lie outside every quota.
#include <cstdint>
#include <vector>

#include "solvers/cluster_ledger.hpp"
#include "solvers/policy.hpp"

namespace aryl {

/// Folds the GPU-seconds each tenant held since the last call into its usage (decayed by
/// ledger_params::tenant_halflife_s) and records what its jobs hold now (held_base,
/// held_all) under policy `p`. Call after every round's decisions: between two rounds
/// holdings do not change.
void settle_tenant_usage(cluster_ledger& l, const policy_spec& p, sim_time now);

/// Base GPUs a running job holds under policy `p`: its minimum if elastic under an elastic
/// policy (its extra workers are always lent), else all its workers.
long base_held(const job_entry& j, const policy_spec& p);

/// A running job a quota reclaim may stop.
struct quota_candidate {
  uint32_t job = 0;
  int tenant = 0;     ///< index into quota_reclaim_input::borrowed
  int frees = 0;      ///< GPUs its stop frees where the owner's job needs them (>= 0)
  int gpus = 0;       ///< base GPUs it holds: what its tenant's usage drops by (>= 1)
  double cost_s = 0;  ///< its restart overhead and stop's checkpoint, seconds
};

struct quota_reclaim_input {
  long need = 0;  ///< GPUs to free, >= 1
  std::vector<quota_candidate> jobs;
  /// By tenant: base GPUs it holds beyond its quota. A job of a tenant may be stopped only
  /// while the tenant still holds more than its quota: taken one by one with the largest last,
  /// a tenant's victims G satisfy sum(G) - max(G) < borrowed.
  std::vector<long> borrowed;
  long budget = 100000;  ///< search steps before the answer falls back to greedy
};

struct quota_reclaim_result {
  bool ok = false;                ///< the need is met
  std::vector<uint32_t> victims;  ///< job ids, ascending
  long frees = 0, gpus = 0;
  double cost_s = 0;
  bool exact = true;  ///< false: the search ran out of budget; a greedy choice
};

/// Objective, lexicographic: fewest victims, then fewest GPUs stopped, then least cost, then
/// the smallest ids. Exact (depth-first search over victims by size, pruned by the largest
/// GPUs still available) within the budget; beyond it, largest frees first while valid.
quota_reclaim_result choose_quota_victims(const quota_reclaim_input& in);

/// Whether `victims` (job ids of in.jobs) meet the need and the borrowed rule: for tests.
bool quota_victims_valid(const quota_reclaim_input& in, const std::vector<uint32_t>& victims);

namespace detail {

/// A round's books of the tenants, set up by begin_tenant_round and kept as jobs start.
struct tenant_round {
  std::vector<long> held;     ///< base GPUs on training servers, by tenant, this round's starts in
  std::vector<long> reserve;  ///< unused quota kept for its owner: all of it if the owner does
                              ///< not lend, else what its queued base demand needs
  std::vector<double> key;    ///< fair-share key: (usage + held x mean life) / weight
  long lendable = 0;          ///< training GPUs no tenant holds as base or keeps
  double mean_life_s = 0;     ///< the usage decay's mean life (half-life / ln 2)
  /// Queued jobs the walk passed over because quotas do not admit them, in walk order (with
  /// loaning, place_on_loaned offers them the loaned servers, outside every quota).
  std::vector<uint32_t> passed;
  /// While a job its quota does not admit looks for room by stopping lower-class jobs of its
  /// own tenant (which leaves the tenant's holding no larger): that tenant; -1: none.
  /// find_room and priority_preempt_for read it.
  int own_victims_only = -1;
  /// The fair-share walk's queued jobs by tenant and the next of each (kept for their memory).
  std::vector<std::vector<uint32_t>> queues;
  std::vector<size_t> next;
};

/// A queued job's base demand under the policy: its minimum if elastic under an elastic
/// policy, else its GPUs.
inline int base_demand(const job_entry& j, const policy_spec& p) { return p.elastic && j.elastic ? j.min_workers : j.gpus; }

/// Sets up `books` from the ledger: what each tenant's running jobs hold now, its usage
/// as settled at the last round's end.
void begin_tenant_round(const cluster_ledger& l, const policy_spec& p, tenant_round& books);
/// Whether quotas let `demand` GPUs of job `j` start: within its tenant's unused quota, and
/// for the rest (if it may borrow) on GPUs no owner keeps.
bool quota_admits(const cluster_ledger& l, const tenant_round& books, const job_entry& j, int demand);
/// Whether `demand` is within the unused quota of `j`'s tenant: a reclaim may make room.
bool quota_entitled(const cluster_ledger& l, const tenant_round& books, const job_entry& j, int demand);
/// Books `demand` GPUs of `j` as started this round.
void quota_took(tenant_round& books, const job_entry& j, int demand);
/// By tenant, base GPUs held beyond quota this round (<= 0: not borrowing).
std::vector<long> borrowed_now(const cluster_ledger& l, const tenant_round& books);

/// Calls `f(id)` for queued jobs in `index` order (the policy's), interleaved across tenants
/// by fair share when it is on (the next job from the tenant whose key, counting the jobs
/// this round took from it, is lowest; ties lower tenant index), until `f` returns false.
/// With quotas, a job quotas do not admit is passed over. `f` returns true when it placed the
/// job (or, backfilling, when the walk goes on).
template <class Index, class F>
void walk_tenants(const cluster_ledger& l, const policy_spec& p, tenant_round& books, const Index& index, F f) {
  begin_tenant_round(l, p, books);
  auto visit = [&](uint32_t id) {
    auto& j = l.jobs[id];
    const int demand = base_demand(j, p);
    if (l.params.quotas && !quota_admits(l, books, j, demand)) {
      // A class still ranks within its tenant's share: room made by stopping the tenant's own
      // lower-class jobs keeps the tenant where it was, so the quota need not admit it.
      if (l.params.priorities && j.priority > 0) {
        books.own_victims_only = j.tenant;
        const bool started = f(id);
        books.own_victims_only = -1;
        if (started) return true;
      }
      if (p.loaning) books.passed.push_back(id);
      return true;
    }
    if (!f(id)) return false;
    if (l.params.quotas) quota_took(books, j, demand);
    auto t = static_cast<size_t>(j.tenant);
    books.key[t] += demand * books.mean_life_s / l.tenants[t].weight;
    return true;
  };
  if (!l.params.fair_share) {
    for (auto it = index.begin(); it != index.end();) {
      auto id = (it++)->second;  // advanced first: starting the job erases its entry
      if (!visit(id)) return;
    }
    return;
  }
  auto& queues = books.queues;
  auto& next = books.next;
  queues.resize(l.tenants.size());
  for (auto& q : queues) q.clear();
  for (auto& [key, id] : index) queues[static_cast<size_t>(l.jobs[id].tenant)].push_back(id);
  next.assign(queues.size(), 0);
  for (;;) {
    size_t best = queues.size();
    for (size_t t = 0; t < queues.size(); ++t)
      if (next[t] < queues[t].size() && (best == queues.size() || books.key[t] < books.key[best])) best = t;
    if (best == queues.size()) return;
    if (!visit(queues[best][next[best]++])) return;
  }
}

} // namespace detail
} // namespace aryl
