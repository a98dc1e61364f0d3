#pragma once
/// Scheduler -> server actor protocol. A server actor owns its GPU slots: it is told of every
/// worker placed on or removed from it, and refuses (reports) anything that would put two
/// workers on one GPU. In live mode it fronts the node agent of its machine.
#include <caf/all.hpp>

#include "actors/atoms.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "actors/job_protocol.hpp"

namespace aryl {

/// Live mode, job -> server: start this job's workers on the GPUs it was placed on here.
struct launch_request {
  uint32_t job = 0;
  std::string job_name;
  uint64_t generation = 0;  ///< the assignment's: one rendezvous per launch
  uint32_t rank_offset = 0;
  int workers = 0;
  uint32_t world_size = 1;
  double work_s = 0;      ///< the job's total work, work-seconds (workers resume from checkpoints)
  double rate = 0;        ///< work-seconds per real second, for emulated workers
  double startup_s = 0;   ///< real seconds of restart or rescale cost
  std::vector<std::string> command;
  int64_t decided_unix_ns = 0;  ///< when the scheduler's decision reached the job (system clock)
  std::string user{};           ///< who submitted the job (its spec's user)
  int master_server = -1;       ///< the server holding rank 0 (its MASTER_ADDR)
  uint32_t group_rank = 0;      ///< this server's place among the launch's servers
  uint32_t group_count = 1;     ///< the launch's servers
  int64_t array_job = -1;       ///< an array task: its array's id, task id and the array's tasks
  uint32_t array_task = 0;
  uint32_t array_count = 0;
  /// A torchrun job's node (node_launch): rank_offset is its slot, master_server its
  /// rendezvous host, kept while any node of it runs.
  bool torchrun = false;
  uint32_t max_nodes = 0;
  uint64_t rdzv_epoch = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, launch_request& x) {
  return f(caf::meta::type_name("launch_request"), x.job, x.job_name, x.generation, x.rank_offset, x.workers,
           x.world_size,
           x.work_s, x.rate, x.startup_s, x.command, x.decided_unix_ns, x.user, x.master_server, x.group_rank,
           x.group_count, x.array_job, x.array_task, x.array_count, x.torchrun, x.max_nodes, x.rdzv_epoch);
}

/// From the scheduler: place(job, gpus), remove(job), mode(server_mode as int: who the
/// server works for); changes(removed jobs, placed jobs, their GPUs): a round's removals here,
/// then its placements, in order, as one message (a round's lone placement or removal here comes
/// as place or remove). Live mode only: launch from a job actor; wprogress(job, rank,
/// work_done) and wexit(job, exit) from the node agent's connection, and
/// reconcile(jobs, ranks, launches) when that agent registers again. adopt(job, ranks, gpus,
/// owner): after a scheduler restart, the job's workers still running here (rank i on GPU
/// gpus[i]) are placed and followed as if launched, their reports going to `owner`.
/// park(job, serial), to itself: the end of a torchrun node's parking (server_state::parked).
using server_actor = caf::typed_actor<caf::reacts_to<place_atom, uint32_t, int>,
                                      caf::reacts_to<remove_atom, uint32_t>,
                                      caf::reacts_to<changes_atom, std::vector<uint32_t>, std::vector<uint32_t>,
                                                     std::vector<int>>,
                                      caf::reacts_to<mode_atom, int>,
                                      caf::reacts_to<launch_atom, launch_request>,
                                      caf::reacts_to<park_atom, uint32_t, uint64_t>,
                                      caf::reacts_to<wprogress_atom, uint32_t, uint32_t, double>,
                                      caf::reacts_to<wexit_atom, uint32_t, worker_exit>,
                                      caf::reacts_to<reconcile_atom, std::vector<uint32_t>, std::vector<uint32_t>, uint64_t>,
                                      caf::reacts_to<adopt_atom, uint32_t, std::vector<uint32_t>, std::vector<uint32_t>,
                                                     job_actor>>;

} // namespace aryl
