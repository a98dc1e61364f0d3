#pragma once
/// What `aryl serve --state FILE` keeps of a run so that a restarted scheduler can carry it
/// on: plain records, and the interface the journal actor writes them through. No CAF and no
/// SQLite here: the actors include this, runtime/live/state_journal.* stores it.
#include <array>
#include <cstddef>
#include <optional>
#include <string_view>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "actors/enum_names.hpp"
#include "solvers/job_spec.hpp"
#include "actors/run_records.hpp"

namespace aryl {

/// A worker found still running after a scheduler restart, as its agent listed it.
struct adopted_worker {
  int server = 0;     ///< server id
  uint32_t rank = 0;
  uint32_t gpu = 0;   ///< GPU index on that machine
};

/// Where a journaled job stands; the state file stores the names.
enum class saved_status { queued, running, ended };

inline constexpr std::array<std::string_view, 3> saved_status_names{"queued", "running", "ended"};

constexpr std::string_view to_string(saved_status s) { return saved_status_names[static_cast<size_t>(s)]; }

/// One job as last journaled.
struct saved_job {
  job_spec spec;                 ///< spec.submit: when the scheduler took it (simulated time)
  saved_status status = saved_status::queued;
  uint64_t generation = 0;       ///< its assignment's generation
  int workers = 0;
  std::string alloc;             ///< "t0:4 t1:2": server name and workers there
  int retries = 0;               ///< restarts after faults so far
  /// Work done (work-seconds at rate 1) as its rank 0 last reported; what its checkpoint
  /// holds at most. Only the journal's progress updates write it.
  double work_done = 0;
  /// Measurements so far (first start, queueing, GPU-seconds, preemptions, ...); once ended,
  /// the job's final record with its outcome.
  job_record record;
  /// Not journaled: set on a restart when every worker of the job still runs where the
  /// journal placed it; the restarted scheduler then adopts them instead of restarting it.
  std::vector<adopted_worker> adopt;
};

/// The run as a whole.
struct saved_run {
  /// The configured cluster, one "name gpu_type xN pool" per machine, as cluster_machines
  /// lists them: a state file is only carried on by the same cluster.
  std::vector<std::string> cluster;
  uint32_t trace_jobs = 0;       ///< jobs of the workload (trace) file
  double speedup = 1;
  int64_t start_unix_us = 0;     ///< wall clock (system) when the run started: simulated 0
  uint32_t next_index = 0;       ///< the next job a client submits gets this index
  uint32_t scheduler_restarts = 0;
  /// Jobs that were running when the scheduler went away and were restarted from their
  /// checkpoints (summed over every restart).
  uint64_t restarted_jobs = 0;
  /// Jobs whose workers the restarted scheduler adopted, still running (summed likewise).
  uint64_t adopted_jobs = 0;
};

/// A tenant's decayed fair-share usage (GPU-seconds, tenants.halflife_s) as of `at_us`
/// (simulated µs), journaled at each round's end so that a restarted scheduler orders the
/// tenants as it would have without the restart.
struct saved_tenant {
  std::string name;
  double usage_gpu_s = 0;
  int64_t at_us = 0;
};

/// A training machine that joined the run after it started (its agent registered a name the
/// cluster lacked): a restarted scheduler has it in its cluster again, with the same id.
struct saved_machine {
  std::string name;
  std::string gpu_type;
  int gpus = 0;
  friend bool operator==(const saved_machine&, const saved_machine&) = default;
};

struct saved_state {
  saved_run run;
  std::vector<saved_machine> joined;  ///< in the order they joined
  std::vector<saved_job> jobs;                                   ///< by index
  std::vector<std::pair<std::string, std::string>> server_modes; ///< inference servers not serving
  run_measures measures;  ///< as last journaled
  std::vector<saved_tenant> tenants;  ///< as last journaled (none: a journal from before)
};

/// Where the journal actor writes; each call is one small transaction.
struct state_sink {
  virtual ~state_sink() = default;
  virtual void put_job(const saved_job& j) = 0;
  /// A job a client submitted, with the next free index, in one transaction that is on disk
  /// when this returns: the client is told the job's id only after it.
  virtual void put_admitted(const saved_job& j, uint32_t next_index) = 0;
  /// An array's tasks a client submitted, likewise (a sink that cannot write them in one
  /// transaction writes them one by one).
  virtual void put_admitted_all(const std::vector<saved_job>& rows, uint32_t next_index) {
    for (auto& r : rows) put_admitted(r, next_index);
  }
  /// Folds the rows of ended jobs into the compact store of final records (all a restart
  /// needs of them). Returns how many were folded.
  virtual size_t compact() = 0;
  /// Rank 0's latest work_done per job, many jobs in one transaction.
  virtual void put_progress(const std::vector<std::pair<uint32_t, double>>& work_done) = 0;
  /// An inference server's mode (serving, loaned, reclaiming), or a training server's hold
  /// (cordon:REASON, drain:REASON; up: none). serving and up delete the server's row.
  virtual void put_server_mode(const std::string& server, const std::string& mode) = 0;
  virtual void put_next_index(uint32_t next) = 0;
  /// The run's measures so far (faults' costs, reclaims), replacing the last ones.
  virtual void put_measures(const run_measures& m) = 0;
  /// Every tenant's decayed usage, replacing the last ones.
  virtual void put_tenants(const std::vector<saved_tenant>& t) = 0;
  /// A machine that joined the running cluster, after those that joined before it.
  virtual void put_joined(const saved_machine& m) = 0;
  /// One line of the audit log (docs/security.md, "Audit"), after those before it.
  virtual void put_audit(const std::string& line) { (void)line; }
  /// A write failed (`what`: the error): the journal actor keeps what it could not write and
  /// tries again; the sink says so where an operator looks (a log line, a metric).
  virtual void trouble(const std::string& what) { (void)what; }
  /// Everything kept while writes failed is written.
  virtual void recovered() {}
  /// Empty while writes succeed, else the last failed write's error (any thread may ask).
  virtual std::string current_trouble() const { return {}; }
};

} // namespace aryl
