#pragma once
/// Every setting of a run, with its defaults. Set from a YAML file (--config), then from
/// command-line flags and --set key=value; each key is one entry of the table of config keys
/// (config_keys.hpp), which parses it.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/inputs/fault_plan.hpp"
#include "solvers/planner_options.hpp"
#include "solvers/throughput.hpp"

namespace aryl {

struct cluster_config {
  int servers = 0;
  int gpus_per_server = 8;
  std::string gpu_type;
  /// Live inventory (serve --join): the servers' names as their agents registered them;
  /// empty: t0.. (training), i0.. (inference).
  std::vector<std::string> names;
  friend bool operator==(const cluster_config&, const cluster_config&) = default;
};

/// One tenant's keys (`tenants.<name>.*`, docs/config.md).
struct tenant_config {
  long quota = -1;       ///< guaranteed GPUs of training servers; -1: from the weight, or none
  double weight = 0;     ///< fair share; 0: not set (the quota's share, else 1)
  int borrow = -1;       ///< -1: tenants.borrow
  int lend = -1;         ///< -1: tenants.lend
  /// Live mode with identities: the users who may submit for it (docs/security.md, "Tenants
  /// bound to users"); empty: none named.
  std::vector<std::string> users;
  /// The highest priority class its jobs may ask for; unset: any.
  std::optional<int> max_priority;
  friend bool operator==(const tenant_config&, const tenant_config&) = default;
};

struct config {
  // --- scheduling
  std::string policy = "aryl";
  uint64_t seed = 1;
  /// The `scheduler.*` keys, and `placement` (scheduler.placement).
  planner_options scheduler;
  std::string reclaim_method = "greedy";

  // --- clusters
  cluster_config training{16, 8, "V100", {}};
  cluster_config inference{16, 8, "T4", {}};
  /// Training machines that joined a live run after it started, after the configured ones
  /// (ids follow theirs): restored from `aryl serve --state`, never read from a config file.
  struct joined_server {
    std::string name;
    std::string gpu_type;
    int gpus = 0;
    friend bool operator==(const joined_server&, const joined_server&) = default;
  };
  std::vector<joined_server> joined_servers;
  std::map<std::string, double> gpu_speed{{"V100", 1.0}, {"T4", 0.35}, {"A100", 2.0}};
  double eff_exponent = -0.05;
  /// Per-worker efficiency of a job spanning 2+ servers; 1 = no cross-server cost.
  double cross_server_eff = profiled_cross_server_eff;

  // --- training workload
  std::string trace_file;            ///< empty: synthetic workload
  std::string trace_format = "canonical";
  std::string trace_vc, trace_from, trace_to;
  bool skip_bad_rows = false;
  int synthetic_jobs = 1500;
  double synthetic_load = 0.9;

  // --- jobs
  double restart_overhead_s = 60;
  double scale_overhead_s = 20;
  double elastic_fraction = 0.5;
  double min_workers_fraction = 0.5;
  double max_workers_factor = 2;
  double mispredict_fraction = 0;
  double mispredict_error = 0.25;
  double unestimated_fraction = 0;   ///< share of jobs without a duration estimate (seeded)

  // --- checkpoints (jobs.*): a job checkpoints every interval of its run time and when its
  // workers are stopped; a stop takes checkpoint_s + checkpoint_per_gpu_s per worker, within
  // +-checkpoint_jitter of that (seeded).
  double checkpoint_interval_s = 1800;
  double checkpoint_s = 10;
  double checkpoint_per_gpu_s = 0.5;
  double checkpoint_jitter = 0.2;

  // --- faults
  std::string faults_file;           ///< a fault plan (runtime/inputs/fault_plan.hpp); empty: none
  random_fault_rates random_faults;
  double heartbeat_s = 10;           ///< simulated agents' heartbeat period
  int missed_heartbeats = 3;         ///< a server is lost after this many missed heartbeats
  int max_retries = 3;               ///< restarts after failures before a job ends as failed

  // --- inference cluster
  std::string inference_trace;       ///< empty: synthetic daily cycle
  std::string inference_format = "canonical";  ///< canonical | servegen
  double inference_peak_utilisation = 0.9;
  int64_t inference_interval_s = 300;
  double inference_headroom = 0.1;
  int64_t inference_grace_s = 120;

  // --- tenants (docs/tenants.md, "Tenants and quotas")
  std::map<std::string, tenant_config> tenants;
  /// Every tenant of the trace gets a quota in proportion to its jobs' GPU-seconds.
  bool tenants_from_demand = false;
  bool tenants_borrow = true, tenants_lend = true;
  bool tenants_fair_share = true;
  double tenants_halflife_s = 3600;
  double tenants_reclaim_grace_s = 120;
  // --- priorities (docs/tenants.md, "Priorities")
  /// A queued job's class rises by one per this many seconds of waiting (0: never).
  double priorities_aging_s = 1800;
  /// A job is stopped for a higher class at most this many times (0: classes never preempt).
  int priorities_max_preemptions = 1;

  // --- run
  std::string mode = "simulated";    ///< simulated | wallclock
  double speedup = 3600;             ///< wallclock: virtual seconds per real second
  bool check_invariants = false;
  bool progress = true;
  /// Stop with a state dump when no job has moved for this long while jobs remain (a job that
  /// waits for servers that are never lent would otherwise keep the run going for ever).
  double stall_limit_s = 30 * 86400.0;
  /// Wall clock: warn when a job's completion timer fires later than this (simulated s).
  double max_lag_s = 60;
  std::string out_dir = "out";

  // --- live mode
  /// argv of every job's workers, split on spaces; empty: the agents' emulated worker.
  std::vector<std::string> worker_command;
  /// serve --state: ended jobs between two compactions of the journal (their rows folded
  /// into compact final records); 0: only when serve starts.
  int state_compact_every = 100;
  /// serve's limits on connections (docs/protocol.md, "Connections"): hello within this many
  /// seconds of connecting; connections in all (at most what RLIMIT_NOFILE leaves); those not
  /// past hello yet, in all and from one peer address; closes before hello per peer address
  /// and second, past which such a connection is silenced rather than closed.
  double hello_timeout_s = 10;
  int max_connections = 4096;
  int max_before_hello = 1024;
  int max_before_hello_per_address = 256;
  double pre_hello_closes_per_s = 10;
  /// A submitted job without a run-time estimate gets this one (seconds at its requested
  /// workers) and is marked unpredicted.
  double default_estimate_s = 3600;
  /// serve's bounds on clients' submits (docs/config.md, `live.*`): jobs clients keep
  /// queued or running, in all and per client address; bytes of a submit's name, command and
  /// tenant; submits a second per address (bursts of twice that).
  int max_active_submits = 10000;
  int max_active_submits_per_address = 1000;
  int max_submit_bytes = 65536;
  double submits_per_s = 20;
  /// serve --identities: an identity named root may submit (its jobs run as root where the
  /// agent allows it too: agent --allow-root-jobs).
  bool allow_root_jobs = false;
  /// serve: the ports a launch's MASTER_PORT is chosen from, on its rank 0's machine.
  int master_port_first = 29500;
  int master_port_count = 500;
  /// serve: torchrun jobs' c10d rendezvous store, HOST:PORT, kept outside the jobs
  /// (scripts/rdzv_store.py); empty: each job's first server hosts it. And how long a formed
  /// quorum of nodes waits for more (torchrun's last_call_timeout), whole seconds.
  std::string rdzv_endpoint;
  int rdzv_last_call_s = 5;

  friend bool operator==(const config&, const config&) = default;
};

/// Sets one key from its text value. Throws input_error naming the key on an unknown key
/// or a bad value. `where` prefixes the message (e.g. "cfg.yaml:12" or "--set").
void set_config_key(config& c, const std::string& key, const std::string& value,
                    const std::string& where);

/// Applies "key=value".
void apply_override(config& c, const std::string& assignment);

/// Loads a YAML mapping (nested maps become dotted keys) on top of `c`.
void load_config_file(config& c, const std::string& path);

/// Checks cross-key consistency (e.g. a policy that exists); throws input_error.
void validate_config(const config& c);

/// All known keys, in the table's order; a family by its pattern (`gpu_speed.<TYPE>`).
std::vector<std::string> config_key_names();

} // namespace aryl
