#pragma once
/// The scheduler's view of the cluster: servers, jobs, queue. Plain data plus the state
/// transitions every scheduling decision goes through, so that a decision is applied to the
/// ledger in exactly one place. Pure: times are parameters.
#include <cstdint>
#include <array>
#include <set>
#include <string>
#include <vector>

#include "solvers/id_set.hpp"
#include "solvers/sim_time.hpp"
#include "solvers/job_progress.hpp"
#include "solvers/placement.hpp"
#include "solvers/throughput.hpp"

namespace aryl {

enum class server_home { training, inference };
/// training: a training server. serving -> loaned -> reclaiming -> serving: an inference one.
/// down: a training server whose machine was lost (until it registers again); holds no job.
/// cordoned: a training server an operator took out of placement (`aryl cordon` / `drain`):
/// no job is placed there; the jobs it holds keep their workers until they end or move.
enum class server_mode { training, serving, loaned, reclaiming, down, cordoned };

struct server_entry {
  int id = 0;
  std::string name;
  int gpu_type = 0;
  int gpus = 0;
  int free = 0;
  server_home home = server_home::training;
  server_mode mode = server_mode::training;
  /// Jobs with workers here (ids); a server is idle when empty.
  id_set jobs;
  /// GPUs here held by elastic jobs' workers beyond their min_workers (keep_on_fewest): what
  /// a queued job may take from them without stopping any job.
  int extra = 0;
  /// Elastic jobs with workers here and on another server: a full round may consolidate them
  /// away, freeing GPUs here (step 2b).
  int spread_elastic = 0;
};

enum class job_status { unsubmitted, queued, running, done };

struct job_entry {
  uint32_t index = 0;
  sim_time submit;
  int gpus = 1;           ///< requested workers (one GPU each)
  int min_workers = 1;
  int max_workers = 1;
  bool elastic = false;
  int gpu_type = -1;      ///< required type id, -1 = any
  double predicted_work = 0;  ///< work units the scheduler believes the job needs
  /// False: the job came without an estimate; predicted_work is re-estimated every round
  /// from ended jobs (solvers/duration_estimate.hpp).
  bool estimated = true;
  int tenant = 0;             ///< index into cluster_ledger::tenants (0: no tenant given)
  /// Its class (solvers/priorities.hpp): higher goes first; 0 by default.
  int priority = 0;
  /// Times it was stopped for a higher class (at most ledger_params::priority_max_preemptions).
  int priority_preemptions = 0;

  job_status status = job_status::unsubmitted;
  /// Queued but out of the queue a round walks (cluster_ledger::park): held, waiting for a
  /// dependency, or beyond its array's limit of tasks at once.
  bool parked = false;
  allocation alloc;       ///< (server id, workers)
  /// An elastic job's first min_workers of `alloc` on the fewest servers (keep_on_fewest):
  /// what it keeps when it shrinks to its minimum. Kept with `alloc`, since every round and
  /// the count of extra workers read it.
  allocation base;
  int workers = 0;
  int alloc_type = -1;    ///< GPU type of the current allocation
  job_progress progress;  ///< the scheduler's mirror of the job's progress (predicted)
  double attained_gpu_s = 0;  ///< GPU-seconds received so far (for LAS)
  sim_time attained_since;
  bool started_once = false;
  sim_time first_start;
  int preemptions = 0;
  int scale_ins = 0;
  int scale_outs = 0;
  int migrations = 0;     ///< moves to another GPU type (checkpoint-restart)
  /// Total seconds queued so far, and since when it is queued now.
  double queued_s = 0;
  sim_time queued_since;
  /// 0 = first dispatch; bumped on every allocation change so stale acks can be told apart.
  uint64_t generation = 0;
  /// Rate (work units/s) at its requested workers on one server of its home type (its required
  /// type, else the fastest training type): the speed its trace duration was measured at. Set
  /// at submit; besides measurement, only the starved-job bound reads it
  /// (planner_options::reserve_stretch: the job's predicted run at its request).
  double requested_rate = 1;
  /// Seconds running with any worker on an inference server; seconds and GPU-seconds running
  /// below `requested_rate` (fewer workers, a slower type, spread over servers, or paying a
  /// restart or scaling overhead). Measurement only.
  double on_loaned_s = 0;
  double below_speed_s = 0;
  double below_speed_gpu_s = 0;
  /// Speed of its home type (the type of `requested_rate`): set at submit. Measurement only.
  double home_speed = 1;
  /// Work efficiency's parts, by pool: training servers, and loaned inference servers (an
  /// interval with any worker on an inference server is loaned, as for on_loaned_s). GPU-seconds
  /// held; the same with each GPU-second weighted by its type's speed over `home_speed`; and the
  /// GPU-seconds the work progressed there needs at its requested size on its home type
  /// (work units x gpus / home_speed). Integrated with attained_gpu_s. Measurement only.
  double training_gpu_s = 0, loaned_gpu_s = 0;
  double training_speed_gpu_s = 0, loaned_speed_gpu_s = 0;
  double training_needed_gpu_s = 0, loaned_needed_gpu_s = 0;

  /// When its allocation last changed (start, rescale, move): elastic rounds leave a job's
  /// size alone for planner_options::rescale_cooldown_s after it.
  sim_time resized_at;
  /// Its current spell of extra workers (above min_workers): since when, on which GPU type
  /// (-1: none open). Feeds the ledger's holding-time estimate.
  sim_time extras_since;
  int extras_type = -1;

  double predicted_remaining() const { return std::max(0.0, predicted_work - progress.work_done); }
  /// Seconds queued in all at `now`, the open spell included while it is queued.
  double waited_s(sim_time now) const {
    return queued_s + (status == job_status::queued && now > queued_since ? (now - queued_since).seconds() : 0.0);
  }
};

struct ledger_params {
  throughput_model model;
  std::vector<double> type_speed;   ///< by GPU type id
  double restart_overhead_s = 60;
  double scale_overhead_s = 20;
  /// A stop's checkpoint: fixed seconds plus seconds per worker stopped (jobs.checkpoint_*).
  double checkpoint_s = 0;
  double checkpoint_per_gpu_s = 0;
  /// Holding-time estimate (hold_estimate): the prior mean spell of extra workers, and the
  /// half-life of older observations.
  double hold_prior_s = 3600;
  double hold_halflife_s = 6 * 3600;
  /// Tenants: quotas are enforced and reclaimed (else tenants only label jobs), and the
  /// queue is walked in fair-share order across tenants; the half-life of a tenant's usage
  /// and the deadline of a quota reclaim, seconds.
  bool quotas = false, fair_share = false;
  double tenant_halflife_s = 3600;
  double quota_grace_s = 120;
  /// Job classes (solvers/priorities.hpp): on once some job has a class other than 0. A
  /// queued job's class rises by one per priority_aging_s seconds of waiting (0: never); a
  /// job is stopped for a higher class at most priority_max_preemptions times.
  bool priorities = false;
  double priority_aging_s = 1800;
  int priority_max_preemptions = 1;
};

/// Spells of extra workers on one GPU type, as the ledger observed them: a spell runs from a
/// change that leaves a job with extra workers to its next change or its end, and is
/// *revoked* when that change takes workers away (a scale-in or a preemption). Ended spells
/// are weighted down by age (ledger_params::hold_halflife_s); open spells count as they stand.
struct hold_stats {
  double ended_s = 0;        ///< decayed sum of ended spells' lengths
  double revoked = 0;        ///< decayed count of revoked spells
  sim_time decayed_at;
  long open = 0;             ///< spells open now
  double open_since_s = 0;   ///< sum of their start times, seconds
};

/// A tenant: who jobs run for, its guaranteed share of the training servers and its fair
/// share (docs/tenants.md, "Tenants and quotas"). Index 0 is the jobs without a tenant.
struct tenant_entry {
  std::string name;
  /// Guaranteed GPUs of training servers for its jobs' base demand; -1: no quota (its jobs
  /// borrow for all they run). Governed only when cluster_ledger::quotas is set.
  long quota = -1;
  double weight = 1;   ///< fair share across tenants, > 0
  bool borrow = true;  ///< its base demand may run beyond its quota on GPUs others leave idle
  bool lend = true;    ///< its idle quota may run others' base demand until its jobs need it
  /// Kept by settle_tenant_usage (solvers/tenants.hpp) at every round's end: base GPUs its
  /// running jobs hold on training servers, all GPUs they hold, and GPU-seconds held,
  /// decayed by ledger_params::tenant_halflife_s, as of usage_at.
  long held_base = 0;
  long held_all = 0;
  double usage_gpu_s = 0;
  sim_time usage_at;
};

/// Servers and GPUs per mode, kept up to date by the ledger (the cluster snapshot's sums).
struct server_totals {
  static constexpr size_t modes = 6;  ///< server_mode values
  int servers[modes] = {};
  long gpus[modes] = {};
  long busy[modes] = {};  ///< GPUs held by jobs
  long inference_gpus = 0;  ///< GPUs of servers whose home is inference
};

class cluster_ledger {
public:
  ledger_params params;
  std::vector<server_entry> servers;   ///< by server id
  std::vector<job_entry> jobs;         ///< by job index
  std::set<uint32_t> queued;           ///< queued job indices
  std::vector<tenant_entry> tenants{tenant_entry{}};  ///< by tenant index; [0]: no tenant
  /// When the latest round was planned (plan_round sets it): the queue's aging reads it.
  sim_time round_at;
  id_set running;
  /// The running jobs that are elastic, in the same order: a full round plans only these.
  id_set running_elastic;
  /// Per job (by index): its server while it is elastic and runs at its minimum on one server
  /// (-1 otherwise), with its minimum and maximum; set at every take (only a running job's is
  /// read). Only such a job can be skipped by a full round (running_plans.cpp), which passes
  /// over every running elastic job: read from this small array, that pass touches no job
  /// entry for most of them.
  struct min_home_entry {
    int32_t server = -1;
    int32_t min_workers = 0, max_workers = 0;
  };
  std::vector<min_home_entry> min_home;
  /// planner_options::reserve_after_s: the servers whose GPUs the latest full or starts round
  /// held for queued job `reserved_for`; local rounds until the next one hold them too.
  std::vector<int> reserved_servers;
  uint32_t reserved_for = 0;
  /// The queued jobs again, in the orders non-preemptive rounds take them: by submit time and
  /// by predicted remaining work (ties: index). A queued job makes no progress, so both keys
  /// hold while it waits, and a round walks the queue without sorting it.
  std::set<std::pair<int64_t, uint32_t>> queued_by_submit;
  std::set<std::pair<double, uint32_t>> queued_by_remaining;

  /// Brings a job in (status queued).
  void submit(uint32_t index, sim_time now);
  /// Starts (or restarts) a queued job on `alloc` of GPU type `type`.
  void start(uint32_t index, const allocation& alloc, int type, sim_time now);
  /// Stops a running job and requeues it with its progress kept.
  void preempt(uint32_t index, sim_time now);
  /// Changes a running job's allocation (scale in or out).
  void rescale(uint32_t index, const allocation& alloc, sim_time now);
  /// One running job's new allocation within a batch (reassign).
  struct reassignment {
    uint32_t job = 0;
    allocation alloc;
    int type = -1;          ///< GPU type of `alloc`; a change of type is a checkpoint-restart
  };
  /// Changes several running jobs' allocations at one instant: every changed job's GPUs are
  /// released before any is taken, so a batch may move GPUs from one job to another. A
  /// change of GPU type pays the restart overhead, any other change the scaling overhead.
  void reassign(const std::vector<reassignment>& changes, sim_time now);
  /// Sets a job's predicted work (re-keying it in the queue if queued).
  void set_predicted_work(uint32_t index, double work);
  /// Takes a queued job out of the queue rounds walk (`queued` and its orders) without ending
  /// its wait: no round starts it until unpark puts it back under the same keys, where it was.
  void park(uint32_t index);
  void unpark(uint32_t index);
  /// The parked jobs (status queued, not in `queued`).
  std::set<uint32_t> parked;
  /// Marks a job done and frees its GPUs. A job may finish while queued when its own
  /// completion crossed a preemption in flight (live mode): its work is done all the same.
  void finish(uint32_t index, sim_time now);

  /// Changes a server's mode. Every change after the first round goes through here: the
  /// free-GPU index and the totals follow it.
  void set_mode(int server, server_mode mode);
  /// Best fit among training servers (and loaned ones if `loaned`) of `type`: the fewest
  /// free GPUs >= `gpus`, ties lowest id; the server id or -1. What place_one's consolidated
  /// rule picks for a request that fits one server, from an index instead of a scan. With
  /// `with_extras`, a server's GPUs held by extra workers count as free (a round's view).
  int best_fit(int type, int gpus, bool loaned, bool with_extras = false) const;
  /// The same, among the servers for which `skip(id)` is false.
  template <class Skip>
  int best_fit_if(int type, int gpus, bool loaned, bool with_extras, Skip skip) const;
  /// Free GPUs of `type` on the servers best_fit looks at (with `with_extras`, counting extra
  /// workers' GPUs free): no placement there can take more.
  long capacity(int type, bool loaned, bool with_extras) const;
  /// GPUs of `type` on servers that run training now (with `loaned`, loaned ones too), held or not.
  long type_gpus(int type, bool loaned) const;
  /// The smallest server of `type` (0 if none).
  int smallest_server(int type) const;
  /// The most GPUs of any server, of any type and mode (0 if none).
  int widest_server() const;
  const server_totals& totals() const;
  /// Expected seconds a job keeps extra workers of GPU type `type` before some are taken
  /// back, at `now`: the exponential lifetime's maximum-likelihood mean over the spells
  /// observed (ended ones decayed by age, open ones censored), with the prior as
  /// one revoked pseudo-spell of hold_prior_s.
  double hold_estimate(int type, sim_time now) const;
  /// Seconds of a stop's checkpoint of `workers` workers (its expected value).
  double checkpoint_time_s(int workers) const {
    return params.checkpoint_s + params.checkpoint_per_gpu_s * workers;
  }

  /// Rate of a job on `alloc` (its workers and the servers they span) of GPU type `type`:
  /// the rate its job actor runs at for the same allocation.
  double rate(const job_entry& j, const allocation& alloc, int type) const;

  /// Per server, what the preemption rule's bound reads of the jobs there that it could stop
  /// (queue_preemption.cpp): the longest predicted remaining time, the cheapest stop, their
  /// GPUs there. Kept between rounds: only servers whose jobs changed since (a take, a release,
  /// a running job's new prediction) are read again, as a job's remaining time and rate are
  /// the ledger's settled mirror and do not move between those. `key`: the options it was
  /// read for; any change of them reads every server again.
  struct stoppable_summary {
    double longest_s = -1;  ///< -1: none
    double cheapest_s = 0;
    int gpus = 0;
  };
  mutable std::vector<stoppable_summary> stoppable;
  /// Per GPU type, (-longest_s, server) of its servers with a job the rule could stop; and
  /// those servers' cheapest_s.
  using stoppable_index = std::set<std::pair<double, int>>;
  mutable std::vector<stoppable_index> stoppable_by_type;
  mutable std::multiset<double> stoppable_cheapest;
  mutable std::vector<int> stoppable_stale;      ///< server ids to read again
  mutable std::vector<char> stoppable_is_stale;  ///< by server id
  mutable std::array<double, 5> stoppable_key{};
  mutable bool stoppable_known = false;

private:
  void enqueue(job_entry& j);
  void dequeue(const job_entry& j);
  void take(uint32_t index, const allocation& alloc);
  void release(uint32_t index);
  int extra_on(const job_entry& j, const allocation& alloc, int sid, int w) const;
  std::vector<int> workers_before_;  ///< reassign()'s scratch
  void settle_attained(job_entry& j, sim_time now);
  void stoppable_changed(int sid) const;
  /// Ends a job's open spell of extra workers (revoked if `revoked`) and opens a new one
  /// if it now holds extra workers.
  void track_extras(job_entry& j, sim_time now, bool revoked);
  hold_stats& holds(int type, sim_time now);
  std::vector<hold_stats> holds_;  ///< by GPU type
  /// Servers, their free GPUs or their modes changed: keep the index and the totals.
  void unindex(const server_entry& s) const;
  void index(const server_entry& s) const;
  void count(const server_entry& s, bool add) const;
  void ensure_indexed() const;
  void flush_index() const;
  /// Built on first use (servers are set up by assignment), then kept by take, release and
  /// set_mode. By GPU type: (free, id) of training servers and of loaned ones with free GPUs,
  /// and (free + extra, id) of those with either.
  mutable size_t indexed_ = 0;
  mutable std::vector<std::set<std::pair<int, int>>> free_training_, free_loaned_, room_training_, room_loaned_;
  /// Index nodes taken out, for reuse. A copy of the ledger starts without any.
  using index_node = std::set<std::pair<int, int>>::node_type;
  struct node_pool : std::vector<index_node> {
    node_pool() = default;
    node_pool(const node_pool&) : std::vector<index_node>() {}
    node_pool(node_pool&&) = default;
    node_pool& operator=(const node_pool&) { return *this; }
    node_pool& operator=(node_pool&&) = default;
  };
  mutable node_pool spare_nodes_;
  /// What each server is indexed under, and the servers changed since the index was read.
  struct index_key {
    int type = 0;
    server_mode mode = server_mode::training;
    int free = 0, room = 0;
    bool indexed = false, dirty = false;
  };
  mutable std::vector<index_key> keys_;
  mutable std::vector<int> dirty_;
  mutable std::vector<int> smallest_;
  mutable int widest_ = 0;
  /// By GPU type: free GPUs, and free plus extra workers' GPUs, of training servers [0] and
  /// loaned ones [1].
  struct type_capacity {
    long free[2] = {};
    long room[2] = {};
    long gpus[2] = {};
  };
  mutable std::vector<type_capacity> capacity_;
  mutable server_totals totals_;
  mutable double home_speed_ = 0;  ///< the fastest training type's speed (home_speed)
};

template <class Skip>
int cluster_ledger::best_fit_if(int type, int gpus, bool loaned, bool with_extras, Skip skip) const {
  ensure_indexed();
  flush_index();
  if (type < 0 || static_cast<size_t>(type) >= free_training_.size()) return -1;
  auto t = static_cast<size_t>(type);
  auto first = [&](const std::set<std::pair<int, int>>& idx) {
    for (auto it = idx.lower_bound({std::max(gpus, 1), -1}); it != idx.end(); ++it)
      if (!skip(it->second)) return *it;
    return std::pair<int, int>{-1, -1};
  };
  auto a = first(with_extras ? room_training_[t] : free_training_[t]);
  if (loaned) {
    auto b = first(with_extras ? room_loaned_[t] : free_loaned_[t]);
    if (b.second >= 0 && (a.second < 0 || b < a)) a = b;
  }
  return a.second;
}

} // namespace aryl
