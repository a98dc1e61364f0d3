#include "solvers/priorities.hpp"

namespace aryl {

long effective_class(const job_entry& j, sim_time now, double aging_s) {
  if (!(aging_s > 0)) return j.priority;
  const double waited = j.waited_s(now);
  // Bounded so that an absurd wait cannot overflow the class.
  return j.priority + static_cast<long>(std::min(std::floor(waited / aging_s), 1e9));
}

bool priority_may_preempt(const job_entry& q, const job_entry& v, int max_preemptions, double v_remaining_s,
                          double stop_cost_s) {
  return v.priority < q.priority && v.priority_preemptions < max_preemptions && v_remaining_s > stop_cost_s;
}

} // namespace aryl
