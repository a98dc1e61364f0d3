#pragma once
/// The steps of a round (docs/round.md, "The steps") and the rules they share. Each step reads
/// the ledger, the policy and the options (const) and writes only what its signature names:
/// the views of free GPUs, the round's plans (round_plans), step 1's walk state, the knapsack
/// (sizing_state) or its own scratch. Step 1's pieces (base placement, preemption, quota
/// reclaim, reservation) write several of them, so they take the round_context. Internal to
/// solvers/.
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "solvers/round/round_context.hpp"

namespace aryl::detail {

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

/// The GPU types a queued job tries, in order, into `types`: fastest first, or for a long
/// elastic job whose request that type's servers hold, the fastest alone
/// (planner_options::long_job_s).
inline void types_for(const cluster_ledger& l, const job_entry& j, const planner_options& o, std::vector<int>& types) {
  types_by_speed(l, j.gpu_type, types);
  if (!j.elastic || types.size() < 2) return;
  const double left = j.predicted_remaining();
  if (o.long_job_s > 0 && left >= o.long_job_s && l.type_gpus(types.front(), true) >= std::max(j.gpus, j.min_workers))
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

// ---- Step 1: the queue walk (queue_walk.cpp) and base placement (base_placement.cpp) ----

/// Step 1 of a full round: queued jobs' base demand in queue order after those that hold
/// servers (reserve_first), then with loaning and quotas on loaned servers, then the shadow
/// walk on held servers; the ledger's reserved servers are set for the next rounds.
void walk_for_bases(cluster_ledger& l, const policy_spec& p, const planner_options& o, sim_time now,
                    round_context& c, work_view& view, work_view& hard);

/// The views of a round: `view` counts every elastic job's extra workers free, `hard` only
/// the GPUs really free.
void build_views(const policy_spec& p, work_view& view, work_view& hard);
/// Room for queued job `id`'s base demand (placed, by its tenant's quota, or by preemption);
/// false if none.
bool find_room(const cluster_ledger& l, const policy_spec& p, const planner_options& o, uint32_t id, round_context& c,
               work_view& view, work_view& hard);
/// Its base on GPUs really free from the ledger's index alone (a local round's fast path).
std::optional<std::pair<allocation, int>> place_on_free(const cluster_ledger& l, const policy_spec& p,
                                                        const planner_options& o, const job_entry& j,
                                                        round_scratch& s);
/// With quotas and loaning, after step 1's walk: each queued job the walk passed over because
/// its quota does not admit it (tenant_round::passed, in walk order) starts at its base on free
/// GPUs of loaned servers alone, which lie outside every quota; booked against no quota.
void place_on_loaned(const cluster_ledger& l, const policy_spec& p, const planner_options& o, round_context& c,
                     work_view& view, work_view& hard);

// ---- Step 1: reservation and backfill (reservation.cpp) ----

/// Step 1's first walk: queued jobs past reserve_after_s or reserve_stretch (of the queue's
/// highest class) go first; the first that finds no room holds the servers that would hold it
/// soonest (their ids into `reserved_servers`, the job into `reserved_for`). Returns in how
/// many seconds those servers are predicted to hold it (0: none held; infinity: never).
double reserve_first(const cluster_ledger& l, const policy_spec& p, const planner_options& o, sim_time now,
                     round_context& c, work_view& view, work_view& hard, std::vector<int>& reserved_servers,
                     uint32_t& reserved_for);
/// EASY's shadow time, after the walk: a job that found no room may still start on the held
/// servers (`reserved_servers`) if it is predicted to end within `shadow_s`, before they would
/// hold the waiting job; they are held again after.
void shadow_backfill(const cluster_ledger& l, const policy_spec& p, const planner_options& o, round_context& c,
                     work_view& view, work_view& hard, const std::vector<int>& reserved_servers, double shadow_s);
/// Holding every GPU of a server for the rest of step 1.
void hold_server(int sid, walk_state& w, work_view& view, work_view& hard);
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
/// For queued job `j`, which found no room: holds the servers that would hold it soonest;
/// returns in how many seconds they are predicted to hold it (infinity: never).
double reserve_for(const cluster_ledger& l, const policy_spec& p, const planner_options& o, const job_entry& j,
                   round_context& c, work_view& view, work_view& hard);
/// Gives every held GPU back for the shadow walk.
void unhold_all(walk_state& w, work_view& view, work_view& hard);
/// After step 1, the held servers' GPUs of extra workers count again (they keep them).
void release_reserved(const walk_state& w, work_view& view);

// ---- Step 1: preemption (queue_preemption.cpp, quota_reclaim.cpp) ----

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
                 round_context& c, work_view& view, work_view& hard, int only_type = -1, double budget_s = -1);

/// Step 1's last fallback (queue_preemption.cpp, docs/tenants.md "Priorities"): running jobs
/// of a lower class than queued job `id`, each stopped for a class fewer than
/// ledger_params::priority_max_preemptions times and with more time left than its stop
/// costs, make room for it; false when classes are off or no such stop makes room.
bool priority_preempt_for(const cluster_ledger& l, const policy_spec& p, const planner_options& o, uint32_t id,
                          round_context& c, work_view& view, work_view& hard);

/// Step 1's quota reclaim for queued job `id` whose base demand is within its tenant's unused
/// quota but fits nowhere (quota_reclaim.cpp): stops the fewest jobs of borrowing tenants.
bool quota_reclaim_for(const cluster_ledger& l, const policy_spec& p, const planner_options& o, uint32_t id,
                       round_context& c, work_view& view, work_view& hard);

// ---- After step 1: the running jobs' plans (running_plans.cpp, quota_growth.cpp) ----

/// A full round's plans of the running elastic jobs, made after step 1 ahead of the plans of
/// the jobs it started. With `defer_frozen`, a job that freeze_in_cooldown would freeze
/// unless step 1 took GPUs of its extra workers gets none: it is listed in
/// made.frozen_unplanned instead.
void plan_running(const cluster_ledger& l, const policy_spec& p, const planner_options& o, sim_time now,
                  const work_view& view, const work_view& hard, bool defer_frozen, round_plans& made,
                  round_scratch& s);

/// Step 1b (docs/tenants.md "Tenants and quotas"), after plan_running: each running elastic
/// job on one training server below its requested size (at most the server), of a tenant
/// whose quota has room for its extra workers up to that size (its jobs' base and such extras
/// counted), grows to it in place, outside its cooldown and when the time it saves pays for
/// its change, the stops and the margin: on GPUs free or held by extra workers, else by
/// stopping the fewest jobs there of tenants that borrow (as quota_reclaim_for). Its plan is
/// frozen at that size; a victim's plan is dropped. Nothing when quotas or elasticity are off.
void own_quota_growth(const cluster_ledger& l, const policy_spec& p, const planner_options& o, sim_time now,
                      tenant_round& books, work_view& view, work_view& hard, round_plans& made);

// ---- Steps 2-4 of a full round ----

/// Step 2 (moves.cpp): elastic jobs on slower GPU types move to faster free ones when the move
/// pays for its restart, longest predicted remaining time first.
void move_to_faster(const cluster_ledger& l, const policy_spec& p, const planner_options& o, work_view& view,
                    work_view& hard, std::vector<elastic_plan>& plans, round_scratch& s);

/// Step 2b (consolidation.cpp): spread running elastic jobs move onto fewer servers when that
/// pays.
void consolidate(const cluster_ledger& l, const policy_spec& p, const planner_options& o, sim_time now,
                 work_view& view, work_view& hard, std::vector<elastic_plan>& plans, round_scratch& s);

/// Step 3 (sizing.cpp): a job within its cooldown whose extra workers all still have their
/// GPUs keeps them, taken from `view`, and is left out of the knapsack; in job order, the
/// planned ones and those of made.frozen_unplanned alike (one of those that lost GPUs gets
/// its plan here, where plan_running would have put it).
void freeze_in_cooldown(const cluster_ledger& l, const policy_spec& p, const planner_options& o, sim_time now,
                        work_view& view, round_plans& made, allocation& kept);
/// Step 3: the knapsack's classes, one per elastic plan that may change size, valued on the
/// GPUs of `kv`; then its solution, and for each job it changes at a loss to itself, what
/// the trade saves the others (elastic_plan::traded_s).
void value_sizes(const cluster_ledger& l, const policy_spec& p, const planner_options& o, sim_time now,
                 const work_view& kv, std::vector<elastic_plan>& plans, sizing_state& z);
void choose_sizes(const cluster_ledger& l, std::vector<elastic_plan>& plans, sizing_state& z);

/// Step 4 (extra_workers.cpp): each plan's final allocation, its base and the extra workers
/// the knapsack chose for it, taken from `kv`.
void place_extra_workers(const cluster_ledger& l, const policy_spec& p, const planner_options& o,
                         const sizing_state& z, work_view& kv, std::vector<elastic_plan>& plans, round_scratch& s);

// ---- Step 5: apply (apply.cpp) ----

/// Where this round's starts took GPUs of extra workers (servers `view` touched), those jobs
/// scale in: the shortest predicted remaining time first; their plans are frozen at that size.
void scale_in_losers(const cluster_ledger& l, const policy_spec& p, const work_view& view, round_plans& made,
                     round_scratch& s);
/// Applies a round to the ledger: its stops, the changed running jobs as one batch, then
/// its starts; each as a decision into `out`.
void apply_round(cluster_ledger& l, sim_time now, round_plans& made, round_scratch& s, std::vector<decision>& out,
                 const char* start_why);

} // namespace aryl::detail
