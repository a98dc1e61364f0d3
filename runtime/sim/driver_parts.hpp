#pragma once
/// The driver's own parts (driver.cpp, driver_router.cpp): the cluster a config makes, and what
/// the parts of one run share. CAF types; included by the driver's files only.
#include <caf/all.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "actors/fault_injector.hpp"
#include "actors/feeder.hpp"
#include "actors/inference_load.hpp"
#include "actors/journal.hpp"
#include "actors/recorder.hpp"
#include "actors/scheduler.hpp"
#include "actors/server.hpp"
#include "runtime/sim/driver.hpp"
#include "runtime/sim/driver_tasks.hpp"

namespace aryl::drive_parts {

/// The scheduler's setup made from a config, and which of its servers serve inference.
struct cluster_plan {
  scheduler_setup setup;
  std::vector<int> inference_ids;
};

/// What the parts of one run share: its settings and cluster, its actor system and clock, and
/// the recorder's view of how far it has come.
struct run_frame {
  const config& c;
  cluster_plan& plan;
  caf::actor_system& sys;
  timebase tb;
  std::shared_ptr<run_status> status;
  const live_world* live;
};

/// The run's actors; machines that join a live run later are in `directory` only.
struct run_actors {
  recorder_actor recorder;
  journal_actor journal;
  std::vector<server_actor> servers;
  std::shared_ptr<server_directory> directory;
  scheduler_actor scheduler;
  inference_actor inference;
  feeder_actor feeder;
  fault_actor faults;
};

/// A job's name in an error message.
using job_label = std::function<std::string(const job_spec&)>;
/// Throws input_error, naming the job by `label`, for a job no state of the cluster could run
/// (driver.hpp's check_runnable, for one job).
void check_runnable(const config& c, const scheduler_setup& s, const job_spec& j, const job_label& label);

/// Live mode's way in (worker_router): the machines' reports reach the server actors, and
/// clients' requests the scheduler, from the network thread. What must run on the driver's
/// thread is posted to `tasks`.
worker_router make_router(const run_frame& f, const run_actors& a, const std::shared_ptr<driver_tasks>& tasks);

} // namespace aryl::drive_parts
