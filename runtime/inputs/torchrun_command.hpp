#pragma once
/// A job whose worker command is a torchrun launch (`torchrun ...`, `python -m
/// torch.distributed.run ...`): its --nnodes range and --nproc-per-node say how many workers it
/// expects, which must be the job's.
#include <string>

#include "solvers/job_spec.hpp"

namespace aryl {

/// "" unless `j.command` is a torchrun launch with `--nnodes` (N or MIN:MAX) whose workers,
/// nodes x `--nproc-per-node` (1 when absent), are not the job's min_workers..max_workers;
/// then the disagreement in words, naming the flags. A per-node count torchrun picks itself
/// (`gpu`, `auto`, ...) is not checked; an --nnodes that is not N or MIN:MAX is refused.
std::string torchrun_problem(const job_spec& j);

} // namespace aryl
