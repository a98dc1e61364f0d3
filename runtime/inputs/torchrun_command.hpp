#pragma once
/// A job whose worker command is a torchrun launch (`torchrun ...`, `python -m
/// torch.distributed.run ...`): its --nnodes range and --nproc-per-node say how many workers it
/// expects, which must be the job's; live mode runs one torchrun per server it places workers
/// on (torchrun_node_command), TorchElastic forming the group (docs/live.md).
#include <cstdint>
#include <string>
#include <vector>

#include "solvers/job_spec.hpp"

namespace aryl {

/// "" unless `j.command` is a torchrun launch with `--nnodes` (N or MIN:MAX) whose workers,
/// nodes x `--nproc-per-node` (1 when absent), are not the job's min_workers..max_workers;
/// then the disagreement in words, naming the flags. A per-node count torchrun picks itself
/// (`gpu`, `auto`, ...) is not checked; an --nnodes that is not N or MIN:MAX is refused.
std::string torchrun_problem(const job_spec& j);

/// Whether `argv` starts a torchrun launch (`torchrun`, `python -m torch.distributed.run`).
bool is_torchrun(const std::vector<std::string>& argv);

/// How aryl runs one node of a torchrun job on one server.
struct torchrun_node {
  uint32_t nproc = 1;       ///< the job's workers on this server (--nproc_per_node)
  uint32_t max_nodes = 1;   ///< --nnodes=1:max_nodes: one node per server, at most one per worker
  std::string endpoint;     ///< HOST:PORT of the c10d store (--rdzv_endpoint)
  bool store_outside = false;  ///< the store is kept outside the job: is_host=false
  std::string rdzv_id;      ///< the job's rendezvous (one per fresh start of the job)
  int last_call_s = 5;      ///< how long a formed quorum waits for more nodes
  int max_restarts = 100;   ///< TorchElastic's restarts: every membership change costs one
};

/// `argv` (a torchrun launch) with the options aryl decides put in place of the user's:
/// --nnodes, --nproc_per_node, the rendezvous (c10d), --max_restarts, --monitor_interval and
/// --redirects/--tee 1 (each worker's stdout reaches the agent's log, prefixed with its local
/// rank; a non-zero value also avoids Debian 12's torchrun failing at its defaults, and on
/// Python 3.11 only 1 and 2 parse). The
/// user's other options, the script and its arguments are kept in order.
std::vector<std::string> torchrun_node_command(const std::vector<std::string>& argv, const torchrun_node& n);

} // namespace aryl
