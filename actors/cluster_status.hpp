#pragma once
/// What the scheduler reports of the cluster now (`aryl status`): active jobs and servers.
/// Plain types: the driver and the live runtime include this without CAF.
#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "actors/job_outcome.hpp"

namespace aryl {

struct active_job {
  uint32_t job = 0;
  std::string name;
  bool running = false;  ///< else queued
  int workers = 0;
  std::string reason;    ///< queued: why it waits (queue_wait_reason); running: empty
  int gpus = 0;          ///< requested workers
  int min_workers = 0;
  int max_workers = 0;
  std::string gpu_type;  ///< required type; empty: any
  /// Simulated seconds since its first start; < 0: never started.
  double run_s = -1;
  std::string servers;   ///< running: "t0:4 t1:2"
  bool predicted = true; ///< false: its duration is the default estimate
  std::string tenant;    ///< who it runs for; empty: no tenant
  bool held = false;     ///< queued and held (`aryl hold`)
  int64_t array_job = -1;   ///< an array task: its array's id (-1: not a task)
  uint32_t array_task = 0;  ///< and its task id
};

/// What an operator holds a server to: nothing (up), cordoned, draining (jobs still there) or
/// drained (none left).
enum class hold_state : int32_t { up, cordoned, draining, drained };
inline constexpr std::array<std::string_view, 4> hold_state_names{"up", "cordoned", "draining", "drained"};
constexpr std::string_view to_string(hold_state h) { return hold_state_names[static_cast<size_t>(h)]; }

struct server_report {
  std::string name;
  std::string gpu_type;
  int gpus = 0;
  int free = 0;
  bool inference = false;  ///< home pool
  std::string mode;        ///< training | serving | loaned | reclaiming | down | cordoned (lost: free is 0)
  hold_state node_state = hold_state::up;  ///< an operator's hold, for node_reason
  std::string node_reason;
};

/// A tenant's GPUs of training servers now (docs/tenants.md, "Tenants and quotas"): its quota
/// (-1: none), base GPUs its jobs hold, those beyond its quota (borrowed), its idle quota that
/// others' borrowing occupies (lent; others' borrowing shared over the lenders' idle quota in
/// proportion), and its queued jobs.
struct tenant_report {
  std::string name;
  long quota = -1;
  long in_use = 0, borrowed = 0, lent = 0;
  int queued = 0;
};

/// The bucket of `s` among upper `bounds` (Prometheus' `le`): the first bound it does not
/// exceed, or one past the last for larger values.
template <size_t N>
constexpr size_t bucket_of(const double (&bounds)[N], double s) {
  size_t i = 0;
  while (i < N && s > bounds[i]) ++i;
  return i;
}
/// Wall-clock seconds from an event that asked for a scheduling round to the round's last
/// decision sent (Prometheus-style cumulative buckets are made from these counts).
struct latency_histogram {
  static constexpr double bounds[] = {0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1};
  std::vector<uint64_t> counts = std::vector<uint64_t>(std::size(bounds) + 1, 0);  ///< per bucket, last = over
  double sum_s = 0;
  uint64_t count = 0;
  void add(double s) {
    ++counts[bucket_of(bounds, s)];
    sum_s += s;
    ++count;
  }
};

/// What the scheduler did since this process started (a restarted `aryl serve` counts from 0
/// again, as a Prometheus counter does after a restart): decisions dispatched, by kind, and
/// inference servers loaned to training.
struct run_counts {
  uint64_t starts = 0, preemptions = 0, scale_ins = 0, scale_outs = 0;
  uint64_t loans = 0;
};
/// Ended jobs' queue wait and JCT (simulated seconds) for one tenant and outcome, in
/// Prometheus-style buckets (last = over the largest bound).
struct end_histogram {
  static constexpr double bounds[] = {60, 300, 900, 1800, 3600, 7200, 14400, 43200, 86400, 259200};
  std::string tenant;  ///< empty: jobs without a tenant
  job_outcome outcome = job_outcome::done;
  std::vector<uint64_t> wait = std::vector<uint64_t>(std::size(bounds) + 1, 0);
  std::vector<uint64_t> jct = std::vector<uint64_t>(std::size(bounds) + 1, 0);
  double wait_sum_s = 0, jct_sum_s = 0;
  uint64_t count = 0;
  void add(double wait_s, double jct_s) {
    ++wait[bucket_of(bounds, wait_s)];
    ++jct[bucket_of(bounds, jct_s)];
    wait_sum_s += wait_s;
    jct_sum_s += jct_s;
    ++count;
  }
};
struct cluster_status {
  int64_t t_us = 0;  ///< simulation time of the report
  std::vector<active_job> jobs;
  std::vector<server_report> servers;
  uint64_t jobs_finished = 0;  ///< ended, whatever the outcome
  uint64_t jobs_failed = 0;     ///< of those, failed (retries exhausted)
  uint64_t jobs_cancelled = 0;  ///< of those, cancelled (a client, or the run told to stop)
  /// Each completed reclaim: simulated seconds from the request to the servers' return.
  std::vector<double> reclaim_latency_s;
  uint64_t reclaim_slo_misses = 0;  ///< servers returned after their deadline
  int inference_needed = -1;        ///< inference servers demand needs now (headroom in); -1: none
  latency_histogram rounds;
  std::vector<tenant_report> tenants;  ///< governed tenants only (none: empty)
  run_counts counts;
  std::vector<end_histogram> ends;  ///< by (tenant, outcome), in the order first seen
};

} // namespace aryl
