#include "solvers/jct_value.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace aryl {
namespace {

void check(const scale_out_job& job) {
  if (job.current_workers < 1) throw std::invalid_argument("scale_out: current_workers < 1");
  if (job.requested < 1) throw std::invalid_argument("scale_out: requested < 1");
  if (!(job.type_speed > 0)) throw std::invalid_argument("scale_out: type_speed <= 0");
}

int span_at(const scale_out_job& job, int k) {
  if (job.span.empty()) return 1;
  return job.span[std::min(static_cast<size_t>(k), job.span.size() - 1)];
}

double time_at(const throughput_model& m, const scale_out_job& job, int k) {
  return remaining_time_s(m, job.remaining_work, job.requested, job.current_workers + k, span_at(job, k),
                          job.type_speed);
}

} // namespace

double scale_out_value(const throughput_model& m, const scale_out_job& job, int k) {
  check(job);
  if (k < 1) throw std::invalid_argument("scale_out: k < 1");
  return time_at(m, job, 0) - time_at(m, job, k) - job.scale_overhead_s;
}

mckp_class scale_out_class(const throughput_model& m, const scale_out_job& job, int gpu_type) {
  check(job);
  mckp_class c;
  c.gpu_type = gpu_type;
  double now = time_at(m, job, 0);
  for (int k = 1; job.current_workers + k <= job.max_workers; ++k)
    c.items.push_back({k, now - time_at(m, job, k) - job.scale_overhead_s});
  return c;
}

} // namespace aryl
