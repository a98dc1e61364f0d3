#pragma once
/// Where the recorder actor puts a run's records and measures. The actor knows only this;
/// runtime/outputs/outputs.hpp's run_writer writes them to the run's folder. Called from the
/// recorder's thread only.
#include <cstdint>

#include "actors/run_records.hpp"

namespace aryl {

class run_sink {
public:
  virtual ~run_sink() = default;
  virtual void event(const event_record& e) = 0;
  virtual void job(const job_record& j) = 0;
  virtual void snapshot(const cluster_snapshot& s) = 0;
  /// Servers returned to inference after their deadline.
  virtual void slo_misses(int count) = 0;
  /// GPU-seconds lost to a fault, and a crashed job's recovery time (< 0: none).
  virtual void lost_work(double gpu_s, double recovery_s) = 0;
  virtual void reclaim_done(double latency_s, double late_s) = 0;
  virtual void quota_done(double latency_s, double late_s) = 0;
  /// Inference GPUs busy serving demand from `t_us` on.
  virtual void serving(int64_t t_us, int gpus) = 0;
  virtual const run_measures& measures() const = 0;
  virtual uint64_t jobs_recorded() const = 0;
  /// Fills the measured fields of `s` and closes the records.
  virtual run_summary finish(run_summary s) = 0;
};

} // namespace aryl
