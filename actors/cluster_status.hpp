#pragma once
/// What the scheduler reports of the cluster now (`aryl status`): active jobs and servers.
/// Plain types: the driver and the live runtime include this without CAF.
#include <cstdint>
#include <string>
#include <vector>

namespace aryl {

struct active_job {
  uint32_t job = 0;
  std::string name;
  bool running = false;  ///< else queued
  int workers = 0;
};

struct server_report {
  std::string name;
  std::string gpu_type;
  int gpus = 0;
  int free = 0;
  bool inference = false;  ///< home pool
  std::string mode;        ///< training | serving | loaned | reclaiming
};

struct cluster_status {
  int64_t t_us = 0;  ///< simulation time of the report
  std::vector<active_job> jobs;
  std::vector<server_report> servers;
  uint64_t jobs_finished = 0;
  /// Each completed reclaim: simulated seconds from the request to the servers' return.
  std::vector<double> reclaim_latency_s;
  uint64_t reclaim_slo_misses = 0;  ///< servers returned after their deadline
};

} // namespace aryl
