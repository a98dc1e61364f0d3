#pragma once
/// What a server actor tells the machine it fronts. In simulated time there is no machine
/// (no link); in live mode the link is the connection to the machine's node agent.
/// Plain types only: actors include this without any network code.
#include <cstdint>
#include <string>
#include <vector>

namespace aryl {

/// Start the workers of one job on one machine: ranks rank_offset .. rank_offset+gpus.size()-1
/// of world_size, one per GPU index.
struct node_launch {
  uint32_t job = 0;
  std::string job_name;
  uint64_t generation = 0;  ///< the job's assignment: its workers of one launch meet once
  uint32_t rank_offset = 0;
  uint32_t world_size = 1;
  std::vector<uint32_t> gpus;
  /// Emulated workers: the job's total work (work-seconds; they resume from the checkpoint)
  /// and work-seconds done per real second.
  double work_s = 0;
  double rate = 0;
  /// Real seconds an emulated worker waits before progressing (restart or rescale cost).
  double startup_s = 0;
  std::vector<std::string> command;  ///< empty: the agent's emulated worker
  /// When the decision reached the job (ns since the Unix epoch): the worker sees it as
  /// ARYL_DECIDED_UNIX_NS, to measure decision-to-launch latency.
  int64_t decided_unix_ns = 0;
  /// Who submitted the job; live mode with identities runs its workers as that user.
  std::string user{};
  /// The server holding rank 0 (-1: unknown), this server's place among the launch's servers,
  /// and their number: the standard environment (MASTER_ADDR, GROUP_RANK, GROUP_WORLD_SIZE).
  int master_server = -1;
  uint32_t group_rank = 0;
  uint32_t group_count = 1;
  /// An array task (-1: not one): ARYL_ARRAY_JOB_ID, ARYL_ARRAY_TASK_ID, ARYL_ARRAY_TASK_COUNT.
  int64_t array_job = -1;
  uint32_t array_task = 0;
  uint32_t array_count = 0;
  /// A torchrun job: this is one node of it, one process (rank_offset is its node slot, the
  /// same while it runs) starting `gpus.size()` workers; its rendezvous is the job's
  /// `rdzv_epoch` (the generation it last started afresh at), hosted on `master_server`
  /// unless the store is kept outside the jobs; `max_nodes`: the job's max workers.
  bool torchrun = false;
  uint32_t max_nodes = 0;
  uint64_t rdzv_epoch = 0;
};

struct node_link {
  virtual ~node_link() = default;
  /// Called from the server actor; must not block.
  virtual void launch(const node_launch& l) = 0;
  /// Stop every worker of `job` on the machine (SIGTERM, then SIGKILL after a grace period).
  virtual void stop(uint32_t job) = 0;
};

} // namespace aryl
