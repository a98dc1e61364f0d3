#pragma once
/// The scheduler actor: holds the cluster ledger and the queue, runs one round per instant
/// (after every message of that instant), and negotiates reclaims with job actors.
#include <array>
#include <chrono>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "actors/actor_env.hpp"
#include "actors/node_orders.hpp"
#include "solvers/heartbeats.hpp"
#include "solvers/cluster_ledger.hpp"
#include "solvers/duration_estimate.hpp"
#include "solvers/job_queue_rules.hpp"
#include "solvers/round_planner.hpp"
#include "solvers/round/round_context.hpp"

namespace aryl {

/// Plain settings of the scheduler, decided before the run.
struct scheduler_setup {
  policy_spec policy;
  planner_options planner;
  ledger_params params;
  std::vector<std::string> type_names;    ///< GPU type id -> name
  std::vector<server_entry> servers;      ///< initial cluster, by id
  std::string reclaim_method = "greedy";  ///< greedy | exact
  bool check_invariants = false;
  worker_settings workers;                ///< live mode: jobs follow real workers
  uint32_t first_free_index = 0;          ///< jobs admitted while running are numbered from here
  double heartbeat_s = 10;                ///< agents' heartbeat period (loss detection)
  int missed_heartbeats = 3;
  int max_retries = 3;                    ///< restarts after faults before a job fails
  uint64_t seed = 0;                      ///< the run's: heartbeats lost on a lossy link
  checkpoint_settings checkpoints;        ///< handed to every job
  /// Tenants by index ([0]: jobs without one), with their quotas and weights; empty: only
  /// [0], and tenants named by jobs are added as they come, without quota.
  std::vector<tenant_entry> tenants;
  /// `aryl serve --state`: every job change and loan is journaled there; null: none.
  journal_actor journal;
  /// Servers an operator cordoned or drained, as the journal had them (a restarted scheduler).
  std::vector<node_hold> holds;
  /// The server actors by id, shared with whoever routes the machines' reports to them (live
  /// mode: the driver); null: the scheduler makes its own from the handles it is given.
  std::shared_ptr<server_directory> directory;
};

/// What a round must re-plan beyond starting queued jobs at their base: nothing, the sizes of
/// the elastic jobs it starts (one arrived with GPUs free to grow on), or every elastic job's
/// size (GPUs were freed that one could use, or the cluster changed).
enum class replan { none, starts, sizes };

struct scheduler_state {
  cluster_ledger ledger;
  round_context round;  ///< the rounds' working buffers, reused from one round to the next
  scheduler_setup setup;
  std::vector<job_actor> jobs;
  /// Trace name and recorded duration per job, for the job records only.
  std::vector<std::string> names;
  std::vector<double> durations;
  /// By job: 1 when its duration is the default estimate (job_spec::predicted false).
  std::vector<char> unpredicted;
  /// By GPU type id: GPUs of the configured training and inference servers (floor_cap's, built
  /// on first use).
  std::vector<std::array<long, 2>> pool_gpus;
  std::vector<server_actor> servers;
  job_env jenv;
  /// Learnt from the first loan offer. Weak: the inference-load actor holds the scheduler, and
  /// two strong handles would keep both alive for ever.
  caf::actor_addr inference;
  bool round_pending = false;
  /// The last round that re-planned elastic sizes (scale_period_s), and whether a timer for
  /// the next one is set.
  sim_time last_scale_round = sim_time::from_us(-sim_time::horizon().us);
  bool scale_timer = false;
  /// What the rounds asked for since the last full round must re-plan
  /// (scheduler.scale_rounds=capacity).
  replan wanted = replan::sizes;
  /// A job's end under a queue asked for sizes since the last full round, and waits for
  /// planner_options::end_scale_period_s.
  bool ends_waiting = false;
  /// What first asked for sizes since the last full round, and for a round since the last
  /// round (summary.json's full_rounds_by_cause).
  round_cause sizes_by = round_cause::first, round_by = round_cause::first;
  /// Wall clock when the pending round was asked for: round latency is measured, never used
  /// in a decision.
  std::chrono::steady_clock::time_point round_asked;
  latency_histogram rounds;
  uint32_t next_index = 0;  ///< the next admitted job's index
  bool drained = false;     ///< told to stop: every job ended, nothing more is taken
  bool away = false;        ///< crashed (a fault plan's scheduler_crash): messages wait
  // Faults: the world's truth (a crashed machine, a bad link) and what the scheduler knows
  // (mode down).
  struct server_truth {
    bool crashed = false;  ///< its machine is dead now
    /// A disconnect or link fault: until link_until what crosses the link is delay_s late;
    /// until fault_until (the agent heard again) another fault there is ignored.
    sim_time link_until;
    sim_time fault_until;
    double delay_s = 0;
    /// Of the latest fault: when its silences will be noticed, and the agent heard again.
    std::vector<silence> silences;
    /// Jobs moved away while it was lost with its machine alive: their workers still run there.
    std::vector<uint32_t> strays;
  };
  std::vector<server_truth> truth;  ///< by server id
  /// An operator's hold on a server (scheduler_drain.cpp), by server id: kind "" (none),
  /// cordon or drain; the drain's end logged once its last job left.
  struct hold {
    std::string kind, reason;
    bool drained_logged = false;
  };
  std::vector<hold> holds;
  int drains_unlogged = 0;          ///< holds of kind drain whose "drained" line is not out yet
  std::vector<int> retries;         ///< by job: restarts after faults so far
  /// A job's time limit and retries (job_spec's), and its attempts (scheduler_attempts.cpp).
  struct job_attempts {
    double time_limit_s = 0;
    int max_retries = -1;
    /// Seconds it had held workers when its current attempt began: its limit counts from there.
    double base_held_s = 0;
    int64_t start_us = -1;     ///< when the current attempt first got workers (-1: not yet)
    bool limit_timer = false;  ///< a check of its time limit is pending
    /// Live mode: how the current attempt's workers ended ("0:3"), and the failure in words.
    std::string exits, failure;
    std::vector<attempt_record> ended;  ///< the attempts before the current one
  };
  std::vector<job_attempts> attempts;  ///< by job
  /// By job, while journaling: the specs, for the journal's rows.
  std::vector<job_spec> specs;
  /// A round's messages to server actors, by server id, and the servers they go to in the
  /// order first changed (emptied as they are sent).
  struct server_changes {
    std::vector<uint32_t> removed, placed;
    std::vector<int> gpus;
  };
  std::vector<server_changes> round_batch;
  std::vector<int> round_servers;

  /// A reclaim in negotiation: servers chosen, acknowledgements still awaited.
  struct reclaim_in_flight {
    std::vector<int> servers;
    /// Jobs whose ack is outstanding, with the generation that must be acknowledged (an ack
    /// of an older assignment says nothing of this one's stop).
    std::map<uint32_t, uint64_t> waiting;
    sim_time started;
    sim_time deadline;
  };
  std::deque<reclaim_in_flight> reclaims;
  /// Quota reclaims (a round's stops for quota owners): victims whose stop's checkpoint is
  /// still being written, and when the round stopped them.
  struct quota_reclaim_in_flight {
    std::map<uint32_t, uint64_t> waiting;
    sim_time started;
  };
  std::deque<quota_reclaim_in_flight> quota_reclaims;
  int reclaim_backlog = 0;
  sim_time reclaim_deadline;  ///< of the latest reclaim request  ///< servers requested but not yet chosen (none loaned yet)
  /// Ended jobs' durations, for the jobs that came without an estimate, and how many of
  /// those are active (0: no round re-estimates).
  duration_history history;
  size_t unestimated_active = 0;
  /// Tenant name -> index into ledger.tenants (0: no tenant); a name first seen is added.
  std::map<std::string, int> tenant_index;
  // For `status` (live mode's metrics):
  uint64_t jobs_finished = 0;
  uint64_t jobs_failed = 0, jobs_cancelled = 0;  ///< of jobs_finished, by outcome
  std::vector<double> reclaim_latency_s;
  run_counts counts;                ///< status_of reports them (the /metrics counters)
  std::vector<end_histogram> ends;  ///< ended jobs' queue wait and JCT, by tenant and outcome
  /// Holds, dependencies and arrays (scheduler_queue.cpp): by job, sized once a job has one.
  struct job_rules {
    bool held = false;
    std::string held_by;
    std::vector<job_dependency> after;    ///< as submitted or updated (arrays named by their id)
    std::vector<job_dependency> waiting;  ///< of `after`, per task, those whose job has not ended
    int64_t array_job = -1;               ///< an array task: its array's id
    uint32_t array_task = 0;
    bool counted = false;                 ///< takes one of its array's places (queued or running)
  };
  std::vector<job_rules> rules;
  struct array_entry {
    std::vector<uint32_t> tasks;  ///< job indices, in task order
    std::vector<uint32_t> ids;    ///< task ids, likewise
    uint32_t limit = 0;           ///< most tasks queued or running at once (0: all)
    uint32_t active = 0;          ///< tasks counted now
  };
  std::map<uint32_t, array_entry> arrays;  ///< by array id
  /// By job: the jobs whose dependencies wait for its end.
  std::map<uint32_t, std::vector<uint32_t>> dependents;
  /// By job: -1 active or unknown, 1 ended done, 0 ended otherwise (what dependencies read).
  std::vector<int8_t> ended_done;

  static inline const char* name = "scheduler";
};

scheduler_actor::behavior_type scheduler_behavior(scheduler_actor::stateful_pointer<scheduler_state> self,
                                                  scheduler_setup setup, std::vector<server_actor> servers,
                                                  recorder_actor recorder, timebase tb, throughput_model model);

} // namespace aryl
