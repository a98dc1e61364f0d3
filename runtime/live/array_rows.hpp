#pragma once
/// `aryl status`'s rows of job arrays: a task's id as Slurm writes it (42_7), and each array
/// folded into one row unless every task is asked for (`status --array`).
#include <string>
#include <vector>

#include "runtime/wire/messages.hpp"

namespace aryl::live {

/// "42", or "42_7" for task 7 of array 42.
std::string job_id_text(const wire::job_info& j);

struct job_rows {
  std::vector<wire::job_info> jobs;
  std::vector<std::string> ids;  ///< the JOB column of each
};

/// The jobs, each array's tasks folded into one row where its first task was (unless
/// `expand`): id "42_[0-99]", the tasks' workers summed, the state of the most advanced task
/// (running, else queued, else the last one's), and the reason counting tasks by state
/// ("3 running, 7 queued: array limit ...").
job_rows fold_arrays(const std::vector<wire::job_info>& jobs, bool expand);

} // namespace aryl::live
