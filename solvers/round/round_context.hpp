#pragma once
/// A round's working state (round_context): what its steps decide and the buffers they keep
/// between rounds, owned by whoever runs rounds (the scheduler actor keeps one), and passed
/// to each step as the parts it writes. Internal to solvers/ but for the type itself, which
/// its owner holds.
#include <algorithm>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "solvers/extra_placement.hpp"
#include "solvers/mckp.hpp"
#include "solvers/round/work_view.hpp"
#include "solvers/spare.hpp"

namespace aryl {
namespace detail {

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
inline void extras_for(const elastic_plan& e, const job_entry& j, int extra, allocation& scratch, allocation& order,
                       extras_request& req) {
  req.gpus = extra;
  req.gpu_type = e.type;
  by_workers(e.base, scratch, req.home);
  scratch.clear();
  if (!e.started && e.type == j.alloc_type)
    for_each_extra(j.alloc, e.base, [&](int sid, int w) { scratch.emplace_back(sid, w); });

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

/// What a round decides, in the order apply() carries it out: the running jobs it stops, the
/// plans of the elastic jobs (running and started), and its starts.
struct round_plans {
  std::vector<elastic_plan> plans;
  std::vector<start> starts;
  std::vector<victim> victims;
  /// Jobs a local round started at once in the ledger (not in `starts`): no victims either.
  std::vector<uint32_t> started_now;
  /// Running jobs a full round gave no plan because they keep their allocation unless step 1
  /// takes GPUs of their extra workers (within their cooldown; running_plans.cpp), ascending
  /// by id: freeze_in_cooldown holds their extras, or plans those that lost some.
  std::vector<uint32_t> frozen_unplanned;
  /// Vectors of last round's plans, emptied, for this round's.
  std::vector<allocation> spare_allocs;

  bool started_now_has(uint32_t id) const {
    return std::find(started_now.begin(), started_now.end(), id) != started_now.end();
  }
  bool stopped(uint32_t id) const {
    return std::any_of(victims.begin(), victims.end(), [&](auto& v) { return v.job == id; });
  }
  allocation spare_alloc() { return take_spare(spare_allocs); }
};

/// What step 1 (the queue walk) keeps while it walks: the jobs tried first and the servers
/// held for one (reservation), and the bounds that let preemption skip its pass over the servers.
struct walk_state {
  /// planner_options::reserve_after_s: the jobs tried first, and the GPUs held for the one that
  /// found no room (server, held in the view with extras, of them really free).
  std::vector<uint32_t> promoted;
  std::vector<std::tuple<int, int, int>> reserved;
  std::vector<std::pair<double, uint32_t>> candidates;  ///< (-predicted remaining s, job)
  /// A server's share of a preemption: (victims' GPUs, -GPUs it gives, -the least time left
  /// of its victims, server), best first.
  std::vector<std::tuple<long, int, double, int>> preempt_options;
  std::vector<std::vector<uint32_t>> server_victims;  ///< by server id
  /// Over the running jobs preempt_for could stop (as of the round's first call): the longest
  /// predicted remaining time and the cheapest stop. A queued job for which even that pair
  /// fails the rule skips the pass over every server.
  bool preempt_bound_known = false;
  double preempt_longest_s = -1, preempt_cheapest_s = 0;
};

/// The knapsack of step 3 (sizing): its classes, which plan each is, its solution, and what
/// price_trades solves again; read by step 4 (extras).
struct sizing_state {
  mckp_input in;
  std::vector<size_t> class_plan;
  mckp_result sol;
  mckp_result alt_sol;                ///< price_trades' solve
  std::vector<mckp_item> held_items;  ///< ... and the items of the class it holds
  std::vector<double> hold_by_type;   ///< the ledger's holding-time estimate, this round
  /// Vectors of last round's knapsack classes, emptied, for this round's.
  std::vector<std::vector<mckp_item>> spare_items;

  std::vector<mckp_item> spare_item_list() { return take_spare(spare_items); }
};

/// Buffers a step fills and reads within one call; kept only so that their memory is reused.
struct round_scratch {
  std::vector<int> changed;
  std::vector<elastic_plan> started_plans;  ///< step 1's plans, aside while plan_running builds ahead of them
  std::vector<int> type_gpus;               ///< GPUs per type, all servers
  std::vector<signed char> share_fails;     ///< plan_running: by minimum, whether one more worker falls below the floor
  std::vector<uint32_t> losers;             ///< a local round's jobs with extra workers on one server
  std::vector<std::pair<size_t, int>> still_needed;   ///< step 4: (plan, extra workers)
  std::vector<std::pair<double, size_t>> slow;        ///< step 2's candidates
  std::vector<long> hard_type_free;                   ///< steps 2 and 2b: GPUs really free per type
  std::vector<std::vector<server_slot>> extra_slots;  ///< step 4's servers with GPUs left, by type
  std::vector<char> listed;                           ///< ... whether listed this round
  std::vector<server_slot> home_slots;                ///< step 4: a job's own servers, before any list
  extras_request extras;
  allocation placed, scratch, order;
  std::vector<cluster_ledger::reassignment> changes;
  std::vector<server_slot> slots;
  std::vector<int> types;
  allocation base, kept;
};

} // namespace detail

/// A round's working state, kept between rounds so that an instant does not allocate and free
/// arrays the size of the cluster and of the running jobs. No content outlives its round:
/// each round starts with recycle().
struct round_context {
  detail::view_storage view_mem;  ///< free GPUs counting extra workers' as free
  detail::view_storage hard_mem;  ///< GPUs really free
  detail::queue_walk walk;        ///< the tenants' books and the class order of the queue walks
  detail::round_plans made;
  detail::walk_state step1;
  detail::sizing_state sizing;
  detail::round_scratch scratch;
  /// Whether a full round leaves the jobs of round_plans::frozen_unplanned without a plan
  /// (the same decisions, less work); false plans every running job, as tests compare.
  bool defer_frozen = true;

  /// Empties what the last round decided, keeping the memory.
  void recycle() {
    step1.preempt_bound_known = false;
    step1.promoted.clear();
    step1.reserved.clear();
    made.started_now.clear();
    made.frozen_unplanned.clear();
    made.starts.clear();
    made.victims.clear();
    for (auto& e : made.plans) {
      made.spare_allocs.push_back(std::move(e.base));
      made.spare_allocs.push_back(std::move(e.final));
    }
    made.plans.clear();
    for (auto& c : sizing.in.classes) sizing.spare_items.push_back(std::move(c.items));
    sizing.in.classes.clear();
  }
};

} // namespace aryl
