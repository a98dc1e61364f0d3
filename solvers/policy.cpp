#include "solvers/policy.hpp"

namespace aryl {

const std::vector<policy_spec>& all_policies() {
  static const std::vector<policy_spec> table{
      {"fifo", queue_order::fifo, false, false, false, "first come first served, strict (no backfill)"},
      {"sjf", queue_order::sjf, false, false, false, "shortest predicted job first, non-preemptive"},
      {"srtf", queue_order::srtf, true, false, false, "shortest remaining time first, preemptive"},
      {"las", queue_order::las, true, false, false, "least attained service first (2D-LAS), preemptive"},
      {"baseline", queue_order::sjf, false, false, false, "SJF with neither loaning nor elasticity"},
      {"loan-only", queue_order::sjf, false, true, false, "SJF plus capacity loaning"},
      {"elastic-only", queue_order::sjf, false, false, true, "SJF plus elastic scaling"},
      {"aryl", queue_order::sjf, false, true, true, "SJF plus capacity loaning and elastic scaling"},
  };
  return table;
}

const policy_spec* find_policy(const std::string& name) {
  for (const auto& p : all_policies())
    if (p.name == name) return &p;
  return nullptr;
}

} // namespace aryl
