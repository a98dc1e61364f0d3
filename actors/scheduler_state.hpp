#pragma once
/// The scheduler actor's state, by concern: the job table, the loan negotiation with the
/// inference-load actor, the faults as the world has them, the operators' holds, the pacing
/// of rounds, and the run's metrics. Each section is a struct its own source file mostly
/// keeps: scheduler_jobs.cpp and scheduler_queue.cpp the job table, scheduler_loans.cpp the
/// loans, scheduler_faults.cpp the faults, scheduler_drain.cpp the holds, scheduler_round.cpp
/// the pacing.
#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "actors/actor_env.hpp"
#include "solvers/cluster_ledger.hpp"
#include "solvers/duration_estimate.hpp"
#include "solvers/heartbeats.hpp"
#include "solvers/job_queue_rules.hpp"
#include "solvers/round/round_context.hpp"
#include "solvers/round_planner.hpp"

namespace aryl {

/// How a job ended, as its dependents read it.
enum class ended_as : int8_t { not_yet, done, other };

// --- The job table -------------------------------------------------------------------------

/// What the scheduler keeps of each job beside the ledger's entry, by job index.
struct job_table {
  std::vector<job_actor> actors;  ///< null once the job ended
  /// Trace name and recorded duration, for the job records only.
  std::vector<std::string> names;
  std::vector<double> durations;
  /// 1 when its duration is the default estimate (job_spec::predicted false).
  std::vector<char> unpredicted;
  /// While journaling, or in live mode: the specs, for the journal's rows and a remade actor.
  std::vector<job_spec> specs;
  std::vector<int> retries;  ///< restarts after faults so far
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
  std::vector<job_attempts> attempts;
  /// Holds, dependencies and arrays (scheduler_queue.cpp): sized once a job has one.
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
  /// Submit keys (job_spec::key) by (user, key): the job's index or the array's id.
  std::map<std::pair<std::string, std::string>, uint32_t> keyed;
  /// Repeats of a keyed submit whose first is not journaled yet, by its id: answered with it.
  std::map<uint32_t, std::vector<caf::typed_response_promise<int64_t>>> key_waits;
  /// The jobs whose dependencies wait for a job's end, by that job.
  std::map<uint32_t, std::vector<uint32_t>> dependents;
  std::vector<ended_as> ended;  ///< what dependencies read; sized as jobs end
  uint32_t next_index = 0;      ///< the next admitted job's index
  /// Ended jobs' durations, for the jobs that came without an estimate, and how many of
  /// those are active (0: no round re-estimates).
  duration_history history;
  size_t unestimated_active = 0;
  /// Tenant name -> index into ledger.tenants (0: no tenant); a name first seen is added.
  std::map<std::string, int> tenant_index;
  /// By GPU type id: GPUs of the configured training and inference servers (floor_cap's,
  /// built on first use).
  std::vector<std::array<long, 2>> pool_gpus;
};

// --- The loan negotiation ------------------------------------------------------------------

/// Reclaims of loaned servers asked by the inference-load actor, and quota reclaims a round
/// starts: each waits for its jobs' acknowledgements.
struct loan_negotiation {
  /// Learnt from the first loan offer. Weak: the inference-load actor holds the scheduler, and
  /// two strong handles would keep both alive for ever.
  caf::actor_addr inference;
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
  int backlog = 0;    ///< servers requested but not yet chosen (none loaned yet)
  sim_time deadline;  ///< of the latest reclaim request
};

// --- Faults ----------------------------------------------------------------------------------

/// The world's truth of each server (a crashed machine, a bad link), beside what the
/// scheduler knows of it (the ledger's mode down).
struct fault_state {
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
};

// --- Operators' holds ----------------------------------------------------------------------

/// What holds a training server out of placement (scheduler_drain.cpp); none is "up".
enum class hold_kind { none, cordon, drain };

inline constexpr std::array<std::string_view, 3> hold_kind_names{"up", "cordon", "drain"};

constexpr std::string_view to_string(hold_kind k) { return hold_kind_names[static_cast<size_t>(k)]; }

/// The hold a journal's row names (cordon or drain); nothing for any other word.
constexpr std::optional<hold_kind> hold_named(std::string_view name) {
  if (name == to_string(hold_kind::cordon)) return hold_kind::cordon;
  if (name == to_string(hold_kind::drain)) return hold_kind::drain;
  return std::nullopt;
}

/// An operator's holds on servers, by server id; a drain's end is logged once its last job left.
struct server_holds {
  struct hold {
    hold_kind kind = hold_kind::none;
    std::string reason;
    bool drained_logged = false;
  };
  std::vector<hold> by_server;
  int drains_unlogged = 0;  ///< drains whose "drained" line is not out yet
};

// --- Pacing of rounds ------------------------------------------------------------------------

/// What a round must re-plan beyond starting queued jobs at their base: nothing, the sizes of
/// the elastic jobs it starts (one arrived with GPUs free to grow on), or every elastic job's
/// size (GPUs were freed that one could use, or the cluster changed).
enum class replan { none, starts, sizes };

/// When rounds run and what they re-plan (scheduler_round.cpp), and their working buffers.
struct round_pacing {
  round_context round;  ///< the rounds' working buffers, reused from one round to the next
  bool pending = false;
  /// The last round that re-planned elastic sizes (scale_period_s), and whether a timer for
  /// the next one is set, and for when.
  sim_time last_scale_round = sim_time::from_us(-sim_time::horizon().us);
  bool scale_timer = false;
  sim_time scale_timer_at = sim_time::from_us(0);
  /// The scale budget's bucket (planner_options::scale_budget_per_s): its tokens as of
  /// budget_at, full before the first full round.
  double budget_tokens = 0;
  sim_time budget_at = sim_time::from_us(0);
  bool budget_started = false;
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
  std::chrono::steady_clock::time_point asked;
  /// A round's messages to server actors, by server id, and the servers they go to in the
  /// order first changed (emptied as they are sent).
  struct server_changes {
    std::vector<uint32_t> removed, placed;
    std::vector<int> gpus;
  };
  std::vector<server_changes> batch;
  std::vector<int> batch_servers;
};

// --- Metrics ---------------------------------------------------------------------------------

/// What `status` reports (live mode's /metrics); never read by a decision.
struct run_metrics {
  uint64_t jobs_finished = 0;
  uint64_t jobs_failed = 0, jobs_cancelled = 0;  ///< of jobs_finished, by outcome
  std::vector<double> reclaim_latency_s;
  run_counts counts;                ///< the /metrics counters
  std::vector<end_histogram> ends;  ///< ended jobs' queue wait and JCT, by tenant and outcome
  latency_histogram rounds;         ///< from a round asked for to its end, wall clock
};

} // namespace aryl
