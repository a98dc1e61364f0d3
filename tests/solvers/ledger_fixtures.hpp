#pragma once
// Ledgers and jobs for the round planner's tests: 8-GPU servers, V100 (type 0) and T4
// (type 1, speed 0.35), and jobs added to the queue.
#include <algorithm>
#include <string>

#include "solvers/round_planner.hpp"

namespace aryl::test {

inline sim_time at(double s) { return sim_time::from_seconds(s); }

/// `training` servers of 8 V100 (type 0) and `loaned` servers of 8 T4 (type 1, speed 0.35).
inline cluster_ledger make_ledger(int training, int loaned = 0) {
  cluster_ledger l;
  l.params.model = power_law_model(-0.05);
  l.params.type_speed = {1.0, 0.35};
  l.params.restart_overhead_s = 60;
  l.params.scale_overhead_s = 20;
  for (int i = 0; i < training + loaned; ++i) {
    server_entry s;
    s.id = i;
    s.name = (i < training ? "t" : "i") + std::to_string(i);
    s.gpus = s.free = 8;
    if (i >= training) {
      s.gpu_type = 1;
      s.home = server_home::inference;
      s.mode = server_mode::loaned;
    }
    l.servers.push_back(s);
  }
  return l;
}

inline uint32_t add_job(cluster_ledger& l, int gpus, double work, double submit = 0, bool elastic = false) {
  job_entry j;
  j.index = static_cast<uint32_t>(l.jobs.size());
  j.submit = at(submit);
  j.gpus = gpus;
  j.min_workers = elastic ? std::max(1, gpus / 2) : gpus;
  j.max_workers = elastic ? 2 * gpus : gpus;
  j.elastic = elastic;
  j.predicted_work = work;
  l.jobs.push_back(j);
  l.submit(j.index, at(submit));
  return j.index;
}

/// The start decision of `job` among `ds`, or nullptr.
inline const decision* start_of(const std::vector<decision>& ds, uint32_t job) {
  for (auto& d : ds)
    if (d.what == decision::kind::start && d.job == job) return &d;
  return nullptr;
}

} // namespace aryl::test
