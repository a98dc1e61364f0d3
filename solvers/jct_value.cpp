#include "solvers/jct_value.hpp"

#include <limits>
#include <stdexcept>

namespace aryl {
namespace {

void check(const scale_out_job& job) {
  if (job.current_workers < 1) throw std::invalid_argument("scale_out: current_workers < 1");
  if (job.requested < 1) throw std::invalid_argument("scale_out: requested < 1");
  if (!(job.type_speed > 0)) throw std::invalid_argument("scale_out: type_speed <= 0");
}

} // namespace

double remaining_time_s(const throughput_model& m, double remaining_work, int requested,
                        int workers, double type_speed) {
  double rate = work_rate(m, requested, workers, type_speed);
  if (rate <= 0) return std::numeric_limits<double>::infinity();
  return remaining_work / rate;
}

double scale_out_value(const throughput_model& m, const scale_out_job& job, int k) {
  check(job);
  if (k < 1) throw std::invalid_argument("scale_out: k < 1");
  double now = remaining_time_s(m, job.remaining_work, job.requested, job.current_workers,
                                job.type_speed);
  double after = remaining_time_s(m, job.remaining_work, job.requested,
                                  job.current_workers + k, job.type_speed);
  return now - after - job.scale_overhead_s;
}

mckp_class scale_out_class(const throughput_model& m, const scale_out_job& job, int gpu_type) {
  check(job);
  mckp_class c;
  c.gpu_type = gpu_type;
  double now = remaining_time_s(m, job.remaining_work, job.requested, job.current_workers,
                                job.type_speed);
  for (int k = 1; job.current_workers + k <= job.max_workers; ++k) {
    double after = remaining_time_s(m, job.remaining_work, job.requested,
                                    job.current_workers + k, job.type_speed);
    c.items.push_back({k, now - after - job.scale_overhead_s});
  }
  return c;
}

} // namespace aryl
