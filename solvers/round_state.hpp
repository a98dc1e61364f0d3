#pragma once
/// The working state of an elastic round, shared by the files that plan one
/// (elastic_round.cpp, base_placement.cpp, queue_preemption.cpp and the other step files):
/// the round's views of free GPUs, its plans and its kept buffers, and the small helpers
/// every step uses. Internal to solvers/.
#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "solvers/extra_placement.hpp"
#include "solvers/mckp.hpp"
#include "solvers/round_planner.hpp"
#include "solvers/small_sort.hpp"

namespace aryl::detail {

/// Adds `b`'s workers to `a`, which stays sorted by server.
inline void merge_into(allocation& a, const allocation& b) {
  for (auto& [sid, w] : b) {
    auto it = std::find_if(a.begin(), a.end(), [sid = sid](auto& p) { return p.first == sid; });
    if (it == a.end()) a.emplace_back(sid, w);
    else it->second += w;
  }
  std::sort(a.begin(), a.end());
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

/// An elastic job in this round: its base allocation and where it stands.
struct elastic_plan {
  uint32_t job = 0;
  allocation base;
  int type = -1;
  int current = 0;      ///< workers now (min for a job started this round)
  bool started = false; ///< started this round
  allocation final;     ///< its allocation after this round
  bool frozen = false;  ///< keeps its allocation: within its cooldown and all its GPUs there
  /// What justified its change, for the decision's reason (seconds of predicted JCT): the
  /// net gain over keeping its size (after cost and margin), the cost (overhead and
  /// checkpoint; a move's restart), and the holding time the values assumed (0: to the end).
  /// `forced`: queued base demand took GPUs of its extra workers, so it changes anyway.
  double net_s = 0, cost_s = 0, hold_s = 0;
  /// A change the knapsack chose though it costs this job (net_s < 0): how much more the
  /// round's sizes save than the best that keeps its size; -1 otherwise.
  double traded_s = -1;
  bool forced = false;
  bool consolidated = false;  ///< moved onto fewer servers at its size (step 2b)
  bool quota_growth = false;  ///< grown to its requested size within its quota (step 1b)
};

/// Server ids of `a`, most workers first (ties: as listed, i.e. lowest id), into `out`.
inline void by_workers(const allocation& a, allocation& scratch, std::vector<int>& out) {
  scratch.assign(a.begin(), a.end());
  small_stable_sort(scratch.begin(), scratch.end(), [](auto& x, auto& y) { return x.second > y.second; });
  out.clear();
  for (auto& [sid, w] : scratch) out.push_back(sid);
}

/// Where `extra` workers of plan `e` may go, into `req`: filling its base servers spans
/// nothing new; among new servers, those its current extras are on (same type) keep workers
/// in place.
inline void extras_for(const elastic_plan& e, const job_entry& j, int extra, allocation& scratch, extras_request& req) {
  req.gpus = extra;
  req.gpu_type = e.type;
  by_workers(e.base, scratch, req.home);
  scratch.clear();
  if (!e.started && e.type == j.alloc_type)
    for_each_extra(j.alloc, e.base, [&](int sid, int w) { scratch.emplace_back(sid, w); });
  thread_local allocation order;
  by_workers(scratch, order, req.occupied);
}

struct start {
  uint32_t job;
  allocation alloc;
  long plan;  ///< its elastic plan, or -1
};

/// A running job preempted this round for a queued one, and why.
struct victim {
  uint32_t job;
  std::string why;
};

/// A round's working arrays, kept between rounds (one set per thread) so that an instant
/// does not allocate and free arrays the size of the cluster and of the running jobs. No
/// content outlives its round: every use starts from clear().
struct round_buffers {
  std::vector<int> free_view, free_hard, touched_view, touched_hard;
  std::vector<uint32_t> stamp_view, stamp_hard;
  uint32_t epoch_view = 0, epoch_hard = 0;
  std::vector<int> changed;
  std::vector<elastic_plan> plans;
  std::vector<elastic_plan> started_plans;  ///< step 1's plans, aside while plan_running builds ahead of them
  std::vector<int> type_gpus;               ///< GPUs per type, all servers
  std::vector<signed char> share_fails;     ///< plan_running: by minimum, whether one more worker falls below the floor
  std::vector<start> starts;
  std::vector<victim> victims;
  /// Jobs a local round started at once in the ledger (not in `starts`): no victims either.
  std::vector<uint32_t> started_now;
  bool started_now_has(uint32_t id) const {
    return std::find(started_now.begin(), started_now.end(), id) != started_now.end();
  }
  std::vector<std::pair<double, uint32_t>> candidates;  ///< (-predicted remaining s, job)
  /// A server's share of a preemption: (victims' GPUs, -GPUs it gives, -the least time left
  /// of its victims, server), best first.
  std::vector<std::tuple<long, int, double, int>> preempt_options;
  std::vector<std::vector<uint32_t>> server_victims;  ///< by server id
  /// Over the running jobs preempt_for could stop (as of the round's first call): the longest
  /// predicted remaining time and the cheapest stop. A queued job for which even that pair
  /// fails the rule skips the pass over every server.
  /// Per server, the ledger's summaries (cluster_ledger::stoppable).
  bool preempt_bound_known = false;
  double preempt_longest_s = -1, preempt_cheapest_s = 0;
  mckp_input in;
  std::vector<size_t> class_plan;
  std::vector<uint32_t> losers;  ///< a local round's jobs with extra workers on one server
  /// Requested-size protection (planner_options::protect_requested): running elastic jobs by
  /// predicted remaining time, the next to protect, and what step 1 holds back for them.
  std::vector<std::pair<double, uint32_t>> protect_order;
  size_t protect_next = 0;
  bool protect_built = false;
  std::vector<std::tuple<uint32_t, int, int>> protected_gpus;  ///< (job, server, GPUs)
  /// planner_options::reserve_after_s: the jobs tried first, and the GPUs held for the one that
  /// found no room (server, held in the view with extras, of them really free).
  std::vector<uint32_t> promoted;
  std::vector<std::tuple<int, int, int>> reserved;
  bool is_protected(uint32_t id) const {
    return std::any_of(protected_gpus.begin(), protected_gpus.end(), [&](auto& x) { return std::get<0>(x) == id; });
  }
  std::vector<std::pair<size_t, int>> still_needed;
  std::vector<std::pair<double, size_t>> slow;  ///< step 2's candidates
  /// price_trades' solve and the items of the class it holds.
  mckp_result alt_sol;
  std::vector<mckp_item> held_items;
  std::vector<long> hard_type_free, view_type_free;
  mckp_result sol;
  std::vector<std::vector<server_slot>> extra_slots;  ///< step 4's servers with GPUs left, by type
  std::vector<char> listed;                           ///< ... whether listed this round
  std::vector<server_slot> home_slots;                ///< step 4: a job's own servers, before any list
  extras_request extras;
  allocation placed, scratch;
  std::vector<cluster_ledger::reassignment> changes;
  std::vector<server_slot> slots;
  std::vector<int> types;
  std::vector<double> hold_by_type;  ///< the ledger's holding-time estimate, this round
  allocation base, kept;
  /// Vectors of last round's plans and knapsack classes, emptied, for this round's.
  std::vector<allocation> spare_allocs;
  std::vector<std::vector<mckp_item>> spare_items;

  allocation spare_alloc() {
    if (spare_allocs.empty()) return {};
    auto a = std::move(spare_allocs.back());
    spare_allocs.pop_back();
    a.clear();
    return a;
  }
  std::vector<mckp_item> spare_item_list() {
    if (spare_items.empty()) return {};
    auto v = std::move(spare_items.back());
    spare_items.pop_back();
    v.clear();
    return v;
  }
  void recycle() {
    preempt_bound_known = false;
    protect_built = false;
    protect_next = 0;
    protected_gpus.clear();
    promoted.clear();
    reserved.clear();
    started_now.clear();
    for (auto& e : plans) {
      spare_allocs.push_back(std::move(e.base));
      spare_allocs.push_back(std::move(e.final));
    }
    plans.clear();
    for (auto& c : in.classes) spare_items.push_back(std::move(c.items));
    in.classes.clear();
  }
};
/// One set of round buffers per thread, shared by the round's steps in every file.
inline thread_local round_buffers buffers;

/// Whether a full round runs step 2b, consolidation (consolidation.cpp).
inline bool consolidates(const policy_spec& p, const planner_options& o) {
  return o.consolidate && p.elastic && o.placement == placement_mode::consolidated;
}

/// Without elastic scaling (loan-only) a job's base is its whole allocation: it only moves.
inline int base_workers(const job_entry& j, const policy_spec& p) { return p.elastic ? j.min_workers : j.gpus; }

/// A running job's base allocation, into `out`: the ledger keeps it for elastic scaling.
inline void base_of(const job_entry& j, const policy_spec& p, allocation& out) {
  if (p.elastic && j.elastic) out.assign(j.base.begin(), j.base.end());
  else keep_on_fewest(j.alloc, base_workers(j, p), out);
}

/// The GPU types a queued job tries, in order, into `types`: fastest first, or slowest first
/// for a short elastic job (sum of JCTs is least when the longest jobs run fastest), or the
/// fastest alone for a long one whose request that type's servers hold (planner_options::long_job_s).
inline void types_for(const cluster_ledger& l, const job_entry& j, const planner_options& o, std::vector<int>& types) {
  types_by_speed(l, j.gpu_type, types);
  if (!j.elastic || types.size() < 2) return;
  const double left = j.predicted_remaining();
  if (left < o.short_job_s) std::reverse(types.begin(), types.end());
  else if (o.long_job_s > 0 && left >= o.long_job_s && l.type_gpus(types.front(), true) >= std::max(j.gpus, j.min_workers))
    types.erase(types.begin() + 1, types.end());
}

/// The servers of `type` a base demand of `demand` workers spans at least: one if it fits the
/// smallest, else as many of the smallest as hold it (the rate step 1 prices a start at).
inline int base_span(const cluster_ledger& l, int type, int demand) {
  const int smallest = std::max(l.smallest_server(type), 1);
  return demand <= smallest ? 1 : (demand + smallest - 1) / smallest;
}

/// GPUs an elastic job's base should find on one server of `type` so that it can grow there
/// (planner_options::base_room_to_grow): its maximum, at most a server; 0 for others.
inline int grow_room(const cluster_ledger& l, const policy_spec& p, const planner_options& o, const job_entry& j, int type) {
  if (!o.base_room_to_grow || !p.elastic || !j.elastic) return 0;
  return std::min(j.max_workers, l.smallest_server(type));
}

/// Step 1 (base_placement.cpp): the views of a round; room for queued job `id`'s base demand
/// (placed, by its tenant's quota, or by preemption), false if none; its base on GPUs really
/// free from the ledger's index alone (a local round's fast path); and after step 1, the GPUs
/// protect_requested held back counting free again.
void build_views(const policy_spec& p, work_view& view, work_view& hard);
bool find_room(const cluster_ledger& l, const policy_spec& p, const planner_options& o, uint32_t id, work_view& view,
               work_view& hard);
std::optional<std::pair<allocation, int>> place_on_free(const cluster_ledger& l, const policy_spec& p,
                                                        const planner_options& o, const job_entry& j);
void unprotect(work_view& view);
/// With quotas and loaning, after step 1's walk: each queued job the walk passed over because
/// its quota does not admit it (tenant_books.passed, in walk order) starts at its base on free
/// GPUs of loaned servers alone, which lie outside every quota; booked against no quota.
void place_on_loaned(const cluster_ledger& l, const policy_spec& p, const planner_options& o, work_view& view,
                     work_view& hard);

/// Step 2b of a full round: spread running elastic jobs move onto fewer servers when that
/// pays (consolidation.cpp).
void consolidate(const cluster_ledger& l, const policy_spec& p, const planner_options& o, sim_time now,
                 work_view& view, work_view& hard);

/// A full round's plans of the running elastic jobs, made after step 1 ahead of the plans of
/// the jobs it started (running_plans.cpp).
void plan_running(const cluster_ledger& l, const policy_spec& p, const planner_options& o, const work_view& view,
                  const work_view& hard);

/// planner_options::reserve_after_s (reservation.cpp): holding every GPU of a server for the
/// rest of step 1; holding, for queued job `j` that found no room, the servers that would
/// hold it soonest; and after step 1, giving back the held servers' GPUs of extra workers
/// (they keep them). unhold_all gives every held GPU back for the shadow walk.
void hold_server(int sid, work_view& view, work_view& hard);
/// Whether queued job `j` has waited long enough at `now` to go first and hold servers:
/// planner_options::reserve_after_s in all, or reserve_stretch times its predicted run at its
/// request (and reserve_stretch_min_s).
inline bool reserves(const job_entry& j, const planner_options& o, sim_time now) {
  const double waited = j.waited_s(now);
  if (o.reserve_after_s > 0 && waited >= o.reserve_after_s) return true;
  return o.reserve_stretch > 0 &&
         waited >= std::max(o.reserve_stretch_min_s, o.reserve_stretch * j.predicted_work / j.requested_rate);
}
/// The options the job that holds servers is placed with: it may stop jobs already stopped
/// max_preemptions times (docs/preemption.md, "Starved jobs").
inline planner_options holder_options(const planner_options& o) {
  planner_options h = o;
  h.max_preemptions = std::numeric_limits<int>::max();
  return h;
}
double reserve_for(const cluster_ledger& l, const policy_spec& p, const planner_options& o, const job_entry& j,
                   work_view& view, work_view& hard);
void unhold_all(work_view& view, work_view& hard);
void release_reserved(work_view& view);

/// Seconds queued job `q` would run at `demand` workers of GPU type `type` (its base on the
/// fewest servers that hold it): what the preemption rule weighs its victims' time against.
inline double base_run_s(const cluster_ledger& l, const job_entry& q, int demand, int type) {
  return q.predicted_remaining() / work_rate(l.params.model, q.gpus, demand, base_span(l, type, demand), speed(l, type));
}
/// What stopping running job `v` costs it besides its wait: its restart and checkpoint.
inline double stop_cost_s(const cluster_ledger& l, const job_entry& v) {
  return l.params.restart_overhead_s + l.checkpoint_time_s(v.workers);
}
/// The preemption rule (queue_preemption.cpp): whether running job `v`, `v_time` seconds from
/// its end at its rate, may be stopped for a queued job that runs `q_run` seconds: preempted
/// fewer than max_preemptions times, and with more than preempt_ratio x (q_run + its stop
/// cost) left.
inline bool preempt_eligible(const cluster_ledger& l, const planner_options& o, const job_entry& v, double v_time,
                             double q_run) {
  return v.preemptions < o.max_preemptions && v_time > o.preempt_ratio * (q_run + stop_cost_s(l, v));
}

/// Step 1's fallback for a queued job whose base demand fits nowhere (queue_preemption.cpp);
/// also, restricted to GPU type `only_type` and to victims who lose less than `budget_s` in
/// all, a queued job's way onto its faster type (planner_options::preempt_for_speed).
bool preempt_for(const cluster_ledger& l, const policy_spec& p, const planner_options& o, uint32_t id,
                 work_view& view, work_view& hard, int only_type = -1, double budget_s = -1);

/// Step 1's last fallback (queue_preemption.cpp, docs/tenants.md "Priorities"): running jobs
/// of a lower class than queued job `id`, each stopped for a class fewer than
/// ledger_params::priority_max_preemptions times and with more time left than its stop
/// costs, make room for it; false when classes are off or no such stop makes room.
bool priority_preempt_for(const cluster_ledger& l, const policy_spec& p, const planner_options& o, uint32_t id,
                          work_view& view, work_view& hard);

/// Step 1's quota reclaim for queued job `id` whose base demand is within its tenant's unused
/// quota but fits nowhere (quota_reclaim.cpp): stops the fewest jobs of borrowing tenants.
bool quota_reclaim_for(const cluster_ledger& l, const policy_spec& p, const planner_options& o, uint32_t id,
                       work_view& view, work_view& hard);

/// Step 1b (quota_growth.cpp, docs/tenants.md "Tenants and quotas"), after plan_running: each
/// running elastic job on one training server below its requested size (at most the server),
/// of a tenant whose quota has room for its extra workers up to that size (its jobs' base and
/// such extras counted), grows to it in place, outside its cooldown and when the time it saves
/// pays for its change, the stops and the margin: on GPUs free or held by extra workers, else
/// by stopping the fewest jobs there of tenants that borrow (as quota_reclaim_for). Its plan is
/// frozen at that size; a victim's plan is dropped. Nothing when quotas or elasticity are off.
void own_quota_growth(const cluster_ledger& l, const policy_spec& p, const planner_options& o, sim_time now,
                      work_view& view, work_view& hard);

} // namespace aryl::detail
