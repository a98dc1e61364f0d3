#pragma once
/// A user's or an admin's change to a queued job (`aryl hold`, `release`, `update`, and
/// `cancel` of one array task): plain data, so the driver and the live runtime include this
/// without CAF. The scheduler answers with a node_answer (actors/node_orders.hpp).
#include <cstdint>
#include <string>

namespace aryl {

struct job_order {
  uint32_t job = 0;
  /// One task of the array `job` (its task id); -1: the job itself, or a whole array.
  int64_t task = -1;
  /// hold | release | update | cancel
  std::string action;
  /// Who asks, for the log ("" in cluster-token mode).
  std::string by;
  /// update: the new values; unset (the sentinels) keeps the job's.
  bool set_priority = false;
  int32_t priority = 0;
  double time_limit_s = -1;  ///< 0: no limit
  int32_t min_workers = 0, max_workers = 0;
  double duration_s = -1;    ///< its run-time estimate
  bool set_after = false;
  std::string after;         ///< "3:ok,4" (solvers/job_queue_rules.hpp); "": none
};

} // namespace aryl
