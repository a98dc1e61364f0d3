#pragma once
/// Runs one simulation: builds the cluster from the config, spawns the actors, drives time
/// (simulated or wall clock) until every job has finished, and returns the summary.
/// Free of CAF types so that the command line and tests include it cheaply.
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "actors/cluster_status.hpp"
#include "actors/node_link.hpp"
#include "actors/job_orders.hpp"
#include "actors/node_orders.hpp"
#include "actors/worker_settings.hpp"
#include "runtime/inputs/config.hpp"
#include "runtime/inputs/fault_plan.hpp"
#include "runtime/inputs/inference_demand.hpp"
#include "solvers/job_spec.hpp"
#include "actors/run_records.hpp"
#include "actors/state_records.hpp"

namespace aryl {

struct run_inputs {
  std::vector<job_spec> jobs;          ///< sorted by submit time, index = position
  std::vector<demand_point> demand;    ///< inference demand (servers needed)
  std::vector<fault_event> faults;     ///< sorted by time (simulated time only)
};

/// One machine of the configured cluster. Ids are dense: training servers t0.. first, then
/// inference servers i0.., then the machines that joined a live run (config::joined_servers);
/// the same ids every run of one config.
struct machine {
  int id = 0;
  std::string name;
  std::string gpu_type;
  int gpus = 0;
  bool inference = false;
};
std::vector<machine> cluster_machines(const config& c);

struct submit_result {
  int64_t job = -1;    ///< the submitted job's index, -1 if refused
  std::string error;   ///< why it was refused, naming the job
  std::string note;    ///< taken, but the config overrides part of it: what and why (else empty)
  /// A repeat of a keyed submit: `job` is the first one's, which it took no job beside.
  bool repeat = false;
};

/// Routes what a machine's workers report to the actor of that server; callable from any
/// thread while the run lasts.
struct worker_router {
  std::function<void(int server, uint32_t job, uint32_t rank, double work_done)> progress;
  /// A worker's exit; `reason`: why it could not start (the agent's words), else empty.
  std::function<void(int server, uint32_t job, uint32_t rank, int code, int signal, const std::string& reason)> exit;
  /// The server's agent stayed away for the detection grace: the scheduler's lost-server
  /// path (its jobs roll back to their checkpoints and are reassigned).
  std::function<void(int server)> lost;
  /// The scheduler's view now (blocks for its answer, at most 2 s).
  std::function<cluster_status()> status;
  /// Inference servers needed from now on, pushed by a client (replaces the demand trace).
  std::function<void(int servers)> demand;
  /// A job from a client (its index is chosen here), without blocking: `reply` is called
  /// once, from another thread, with the job's index or why it is refused (the scheduler not
  /// answering within 2 s among the reasons), or not at all if the run ends first.
  std::function<void(job_spec job, std::function<void(submit_result)> reply)> submit;
  /// Ends a queued or running job as cancelled, without blocking: `reply` is called as
  /// submit's, with "" or why it cannot (naming the job).
  std::function<void(uint32_t job, std::function<void(std::string)> reply)> cancel;
  /// The server's agent registered again: the scheduler may use the server again.
  std::function<void(int server)> back;
  /// The workers (jobs[i], ranks[i]) that agent runs now, and how many of the server's
  /// launches the gateway had taken by then: the server actor gives up the ones it launched
  /// that are missing and stops those of jobs no longer placed there.
  std::function<void(int server, std::vector<uint32_t> jobs, std::vector<uint32_t> ranks, uint64_t launches)>
      reconcile;
  /// The scheduler's view, without blocking: `reply` is called once, from another thread,
  /// with the answer (empty if the scheduler did not answer within 2 s) or not at all if the
  /// run ends first.
  std::function<void(std::function<void(cluster_status)> reply)> status_async;
  /// A training machine whose agent registered after the run started: its server actor is
  /// spawned (reaching the machine through `link`) and the scheduler takes it into the
  /// cluster. Without blocking: `reply` is called as submit's, with its server id, or -1 and
  /// why not (the scheduler not answering within 2 s among the reasons).
  std::function<void(node_join machine, std::shared_ptr<node_link> link, std::function<void(join_answer)> reply)> join;
  /// An operator's cordon, drain or resume of a server, without blocking: `reply` is called
  /// as submit's, with the scheduler's answer (not ok, saying so, if it did not answer within
  /// 2 s).
  std::function<void(node_order order, std::function<void(node_answer)> reply)> node;
  /// A line of the audit log, journaled after those before it (`serve --state`; else dropped).
  std::function<void(std::string line)> audit;
  /// A client's hold, release, update or array task cancel, without blocking: `reply` is
  /// called as node's, with the scheduler's answer.
  std::function<void(job_order order, std::function<void(node_answer)> reply)> job{};
};

/// Live mode: the machines behind the server actors, and the way in for their reports.
struct live_world {
  std::vector<std::shared_ptr<node_link>> nodes;  ///< by server id: training, then inference
  worker_settings workers;
  /// Called with a router once the actors exist, and with an empty one when they are gone.
  std::function<void(worker_router)> on_ready;
  /// Serve until told to stop, not only until every known job is done.
  bool until_stopped = false;
  /// Polled by the run: true once it is told to stop (a signal). Every active job then ends
  /// as cancelled, trace jobs not yet submitted are dropped, and the outputs are written.
  std::function<bool()> stop_requested;
  /// `aryl serve --state`: every job change is journaled here (null: nowhere).
  std::shared_ptr<state_sink> journal;
  /// A run carried on after a scheduler restart: the journal's jobs (run_inputs then holds
  /// only the trace jobs it lacks), given to the scheduler before anything else; the
  /// simulated time the run starts at; the next free job index; the restart counters for
  /// summary.json.
  std::vector<saved_job> restored;
  /// Inference servers lent to training when the scheduler went away (by name): lent still.
  std::vector<std::string> loaned;
  /// Servers an operator cordoned or drained, as the journal had them: held still.
  std::vector<node_hold> holds;
  int64_t start_at_us = 0;
  /// `--state`: when the run first started (unix microseconds, as journaled); summary.json's
  /// sim_wall_s counts from it. 0: from this process's start of the run.
  int64_t run_start_unix_us = 0;
  uint32_t first_free_index = 0;
  uint32_t scheduler_restarts = 0;
  uint64_t restarted_jobs = 0;
  uint64_t adopted_jobs = 0;
  /// After a restart: the run's measures as journaled, and whether the outputs the killed
  /// process left (events.log, timeline.csv) are carried on rather than started again.
  run_measures measures;
  bool carry_on_outputs = false;
  /// After a restart: each tenant's decayed usage as journaled, restored before the first round.
  std::vector<saved_tenant> tenants;
  /// Each event and each job's final record as the outputs get them (live mode's job book).
  std::function<void(const event_record&)> on_event;
  std::function<void(const job_record&)> on_job;
};

struct run_outcome {
  bool ok = false;
  /// Why the run stopped early: an invariant violation or a deadlock, with a state dump, or
  /// an input error found while running (one line).
  std::string error;
  /// The process exit code: 0 ok, 2 input error, 3 run stopped, 4 internal error.
  int exit_code = 3;
  /// Something the user should know about a successful run (wall clock falling behind).
  std::string warning;
  run_summary summary;
};

/// Throws input_error, naming the job by `label`, for a job no state of the cluster could run
/// (the check run_simulation makes of its jobs): a GPU type the cluster lacks, more GPUs than
/// it may use, a run that would outlast the simulation horizon.
void check_runnable(const config& c, const std::vector<job_spec>& jobs,
                    const std::function<std::string(const job_spec&)>& label);

/// Throws input_error for inputs that can never run (a job larger than the cluster, a GPU
/// type the cluster lacks, a job that would outlast the simulation horizon) and for output
/// files that cannot be written. `progress` gets a progress line now and then on long runs.
/// `live`: run against real machines (config run.mode must be wallclock); null: simulate.
/// `on_job`: a simulation's jobs' final records as jobs.csv gets them (`simulate --db`); it
/// only looks, the run decides the same without it (live mode: live_world::on_job).
run_outcome run_simulation(const config& c, run_inputs in, std::ostream* progress, const live_world* live = nullptr,
                           std::function<void(const job_record&)> on_job = {});

} // namespace aryl
