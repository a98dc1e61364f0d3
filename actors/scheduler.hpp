#pragma once
/// The scheduler actor: holds the cluster ledger and the queue, runs one round per instant
/// (after every message of that instant), and negotiates reclaims with job actors.
#include <memory>
#include <string>
#include <vector>

#include "actors/actor_env.hpp"
#include "actors/node_orders.hpp"
#include "actors/reclaim_method.hpp"
#include "actors/scheduler_state.hpp"

namespace aryl {

/// Plain settings of the scheduler, decided before the run.
struct scheduler_setup {
  policy_spec policy;
  planner_options planner;
  ledger_params params;
  std::vector<std::string> type_names;    ///< GPU type id -> name
  std::vector<server_entry> servers;      ///< initial cluster, by id
  reclaim_method reclaim = reclaim_method::greedy;
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

/// The actor's state: the ledger, its setup and handles, and a section per concern
/// (actors/scheduler_state.hpp). Away: its behaviour (actors/scheduler_behavior.cpp).
struct scheduler_state {
  cluster_ledger ledger;
  scheduler_setup setup;
  std::vector<server_actor> servers;
  /// What every job actor is spawned with: shared, not copied into each of thousands of jobs.
  std::shared_ptr<const job_env> jenv;
  job_table jobs;
  loan_negotiation loans;
  fault_state faults;
  server_holds holds;
  round_pacing pacing;
  run_metrics metrics;
  bool drained = false;  ///< told to stop: every job ended, nothing more is taken

  static inline const char* name = "scheduler";
};

scheduler_actor::behavior_type scheduler_behavior(scheduler_actor::stateful_pointer<scheduler_state> self,
                                                  scheduler_setup setup, std::vector<server_actor> servers,
                                                  recorder_actor recorder, timebase tb, throughput_model model);

} // namespace aryl
