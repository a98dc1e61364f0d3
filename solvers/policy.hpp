#pragma once
/// The policy registry: one table maps a policy name to what the scheduler does.
#include <string>
#include <vector>

namespace aryl {

/// How queued (and, for preemptive orders, running) jobs are ranked each round.
enum class queue_order {
  fifo,  ///< submit time, then trace order
  sjf,   ///< shortest predicted remaining time at base workers (non-preemptive)
  srtf,  ///< shortest remaining time, preemptive
  las,   ///< least attained GPU-service first, preemptive (Tiresias 2D-LAS, discretised)
};

struct policy_spec {
  std::string name;
  queue_order order = queue_order::fifo;
  bool preemptive = false;
  bool loaning = false;   ///< borrow idle inference servers
  bool elastic = false;   ///< elastic jobs scale between min and max workers
  std::string summary;
};

/// All registered policies, in display order.
const std::vector<policy_spec>& all_policies();

/// The named policy, or nullptr.
const policy_spec* find_policy(const std::string& name);

} // namespace aryl
