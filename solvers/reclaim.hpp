#pragma once
/// Choosing which loaned servers to give back to inference (docs/solvers.md).
///
/// Returning a set S of loaned servers removes every worker on them. A job that loses
/// workers and keeps fewer than min_workers is preempted (all its GPUs, on every server,
/// are freed); a job that loses workers but keeps at least min_workers is scaled in by the
/// number it lost. A job counts once however many of its servers are in S.
/// Objective, lexicographic: fewest preempted jobs, then fewest GPUs held by preempted
/// jobs, then fewest workers scaled in.
#include <compare>
#include <utility>
#include <vector>

namespace aryl {

struct reclaim_server {
  int id = 0;     ///< unique among loaned servers
  int gpus = 0;   ///< GPUs on the server, >= 0
};

struct reclaim_job {
  int id = 0;                ///< unique among jobs
  int min_workers = 1;       ///< >= 1
  int gpus_per_worker = 1;   ///< >= 1
  /// (server id, workers > 0). Servers that are not loaned are training servers: they
  /// are never returned, and their workers stay.
  std::vector<std::pair<int, int>> placement;
};

struct reclaim_input {
  std::vector<reclaim_server> loaned;
  std::vector<reclaim_job> jobs;
  int count = 0;  ///< servers to return, 0 <= count <= loaned.size()
};

/// The objective; compares lexicographically in declaration order (smaller is better).
struct reclaim_cost {
  int preempted_jobs = 0;
  long preempted_gpus = 0;     ///< all GPUs of the preempted jobs (workers x gpus_per_worker)
  long scaled_in_workers = 0;  ///< workers removed from jobs that keep running
  friend auto operator<=>(const reclaim_cost&, const reclaim_cost&) = default;
};

struct reclaim_result {
  std::vector<int> returned;                   ///< server ids, ascending; exactly count of them
  std::vector<int> preempted;                  ///< job ids, ascending
  std::vector<std::pair<int, int>> scaled_in;  ///< (job id, workers removed), by job id
  reclaim_cost cost;
};

/// Throws std::invalid_argument (one line naming the problem) when: count is outside
/// [0, loaned.size()], server or job ids repeat, gpus < 0, min_workers < 1,
/// gpus_per_worker < 1, a placement has workers <= 0 or names a server twice, or the
/// workers placed on a loaned server need more GPUs than it has.
void validate_reclaim(const reclaim_input& in);

/// Consequences of returning exactly the servers `returned` (ids of loaned servers; others
/// are ignored). Used by both solvers and by tests to recompute a result.
reclaim_result evaluate_reclaim(const reclaim_input& in, const std::vector<int>& returned);

/// The paper's greedy (the default). First the idle servers (no workers), lowest id first;
/// then, repeatedly, the server whose return adds the least cost given those already
/// chosen; ties: fewest busy GPUs, then lowest id. Not optimal in general: a server that is
/// cheap alone may make a later one expensive. Validates (see validate_reclaim).
reclaim_result reclaim_greedy(const reclaim_input& in);

/// Optimal: depth-first branch and bound over the loaned servers by ascending id (include
/// before exclude), pruning a branch when the cost of the servers chosen so far already
/// exceeds the best complete set (cost only grows as servers are added). The greedy answer
/// seeds the bound. Ties: among optimal sets, the one whose ascending id list is
/// lexicographically smallest. Exponential: refuses (std::invalid_argument) more than
/// max_exact_reclaim_servers loaned servers. Validates (see validate_reclaim).
reclaim_result reclaim_exact(const reclaim_input& in);

/// The largest loaned pool reclaim_exact takes: 20 equal busy servers, half returned, take
/// well under a second; 32 took about 10 s.
inline constexpr int max_exact_reclaim_servers = 20;

} // namespace aryl
