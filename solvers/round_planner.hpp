#pragma once
/// One scheduling round (docs/round.md, "The steps"): phase 1 places base demand in queue-policy
/// order; phase 2 shares the GPUs left over among elastic jobs. Pure: every decision is
/// applied to the ledger here and returned, for the scheduler actor to send out.
#include <string>
#include <vector>

#include "solvers/cluster_ledger.hpp"
#include "solvers/planner_options.hpp"
#include "solvers/policy.hpp"
#include "solvers/priorities.hpp"
#include "solvers/tenants.hpp"

namespace aryl {

struct decision {
  enum class kind { start, preempt, rescale };
  kind what = kind::start;
  uint32_t job = 0;
  allocation alloc;   ///< the job's whole allocation after the decision (empty for preempt)
  allocation before;  ///< its allocation before (empty for start)
  int gpu_type = -1;
  std::string why;
};

/// What a round may change. A `local` round changes only what the event needs: queued jobs
/// start at their base demand, on free GPUs first, else on GPUs of extra workers, whose jobs
/// scale in; no job grows or moves. It is the round between two full rounds
/// (planner_options::scale_period_s). Policies without elasticity or loaning plan the same
/// round for both.
/// A `starts` round is a local round whose started elastic jobs are sized by the knapsack on
/// the GPUs really free (running jobs are not re-planned): the round after an elastic job
/// arrives with room to grow (scheduler.scale_rounds=capacity).
enum class round_scope { full, local, starts };

/// Whether a round's scope changes what `p` plans: elastic or loaning, not preemptive.
inline bool plans_by_scope(const policy_spec& p) { return (p.elastic || p.loaning) && !p.preemptive; }

/// A round's working state (solvers/round/round_context.hpp), owned by the caller so that
/// its buffers are reused from one round to the next.
struct round_context;

/// Runs one round at `now` with `context`'s buffers and returns the decisions in the order
/// they were made. The decisions depend only on the ledger, the policy, the options, `now`
/// and `scope`: a context carries no state from one round to the next.
std::vector<decision> plan_round(cluster_ledger& ledger, const policy_spec& policy,
                                 const planner_options& opts, sim_time now, round_context& context,
                                 round_scope scope = round_scope::full);
/// The same with a context of its own (one-off rounds and tests).
std::vector<decision> plan_round(cluster_ledger& ledger, const policy_spec& policy,
                                 const planner_options& opts, sim_time now,
                                 round_scope scope = round_scope::full);

/// Whether GPUs freed on `servers` (a job ended) may let a full round change a size, move or
/// spread that a local round would not (scheduler.scale_rounds=capacity): a queued elastic job
/// could start above its minimum, or a running elastic job could grow onto them (one on those
/// servers below its maximum, or any whose size spanning one more server still passes the
/// efficiency floor), move onto them (on a slower type), or consolidate (spread now).
bool freed_may_resize(const cluster_ledger& ledger, const policy_spec& policy, const planner_options& opts,
                      const allocation& servers);

namespace detail {
/// Rounds of non-preemptive policies with elastic scaling or loaning (round/elastic_round.cpp).
/// `starts_only`: the round of round_scope::starts.
void plan_elastic(cluster_ledger& ledger, const policy_spec& policy, const planner_options& opts, sim_time now,
                  round_context& c, std::vector<decision>& out, bool starts_only = false);
/// The local round of those policies (round/local_round.cpp).
void plan_local(cluster_ledger& ledger, const policy_spec& policy, const planner_options& opts, sim_time now,
                round_context& c, std::vector<decision>& out);
/// The quota reclaim of rounds without elastic scaling or loaning (round/quota_reclaim.cpp): stops
/// the fewest jobs of borrowing tenants for queued job `id`, within its tenant's unused quota
/// (as `books` has it this round), and starts it; false if no such stop makes room.
bool quota_reclaim_rigid(cluster_ledger& l, const policy_spec& p, const planner_options& o, uint32_t id, sim_time now,
                         tenant_round& books, std::vector<decision>& out, const char* start_why);
/// The servers job `j` may use under the policy.
bool usable_for(const server_entry& s, const job_entry& j, const policy_spec& p, const planner_options& o);
/// Queued or running job ids ranked by the policy (ties: job index).
std::vector<uint32_t> ranked(const cluster_ledger& l, const std::vector<uint32_t>& ids, const policy_spec& p,
                             const planner_options& o, sim_time now);

/// A queue walk's state: the tenants' books (set up by each walk, read by the round's steps
/// until the next walk) and the class order's buffers.
struct queue_walk {
  tenant_round books;
  class_order classes;
};

/// Calls `f(id)` for the queued jobs in the non-preemptive policy's order until it returns
/// false. The queue is read from the ledger's index for that order, so a round that stops
/// early costs nothing for the jobs behind. With tenants governed, walk_tenants's order and
/// quota admission (solvers/tenants.hpp). With job classes, higher effective classes first
/// (solvers/priorities.hpp), the policy's order within one. `f` may start the job it is
/// given, no other (and may stop running jobs for it, which then queue).
template <class F>
void walk_queue(const cluster_ledger& l, const policy_spec& p, queue_walk& w, F f) {
  auto walk = [&](const auto& index) {
    if (l.params.priorities) {
      auto& order = by_class(l, index, w.classes);
      if (l.params.quotas || l.params.fair_share) return walk_tenants(l, p, w.books, order, f);
      for (auto& [rank, id] : order)
        if (!f(id)) return;
      return;
    }
    if (l.params.quotas || l.params.fair_share) return walk_tenants(l, p, w.books, index, f);
    for (auto it = index.begin(); it != index.end();) {
      auto id = (it++)->second;  // advanced first: starting the job erases its entry
      if (!f(id)) return;
    }
  };
  if (p.order == queue_order::fifo) walk(l.queued_by_submit);
  else walk(l.queued_by_remaining);
}
} // namespace detail

/// Why queued job `job` is not running, as the ledger stands between rounds: one line for
/// `aryl status`. Facts of the ledger, checked in this order: no server the job may use could
/// hold its base demand even empty ("no fit on training servers"), or only with loaned servers,
/// which it may not use ("loaned servers are for elastic jobs"), or only with servers an
/// operator drained or cordoned ("drained: ..."; also when their free GPUs would make the
/// difference now); under a strict queue order (a
/// non-preemptive policy without backfill) a job ahead of it waits ("behind job N in queue
/// order"); its base demand exceeds the GPUs it could take now (free, and for elastic policies
/// held by extra workers), or they are not placeable together; else it fits now (a
/// preemptive policy ranks it behind the jobs that run). Base demand: min_workers for an
/// elastic job under an elastic policy, else gpus.
/// `type_names`: GPU type names by type id, for the text.
std::string queue_wait_reason(const cluster_ledger& ledger, const policy_spec& policy, const planner_options& opts,
                              uint32_t job, const std::vector<std::string>& type_names);

/// The policy's rank of a job at `now` (smaller first); ties are broken by job index.
double priority_key(const job_entry& j, const policy_spec& policy,
                    const planner_options& opts, sim_time now);

} // namespace aryl
