#include "runtime/live/array_rows.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "runtime/live/status_view.hpp"
#include "solvers/job_queue_rules.hpp"

namespace aryl::live {

std::string job_id_text(const wire::job_info& j) {
  if (j.array_job && j.array_task) return fmt::format("{}_{}", *j.array_job, *j.array_task);
  return std::to_string(j.job_id);
}

job_rows fold_arrays(const std::vector<wire::job_info>& jobs, bool expand) {
  job_rows out;
  std::map<uint64_t, size_t> row_of;                  // array id -> its row
  std::map<uint64_t, std::vector<uint32_t>> tasks;    // array id -> task ids
  std::map<uint64_t, std::map<std::string, int>> by_state;
  for (auto& j : jobs) {
    if (expand || !j.array_job || !j.array_task) {
      out.jobs.push_back(j);
      out.ids.push_back(job_id_text(j));
      continue;
    }
    auto a = *j.array_job;
    tasks[a].push_back(*j.array_task);
    ++by_state[a][j.outcome ? *j.outcome : j.held && *j.held ? std::string("held") : std::string(state_name(j.state))];
    auto it = row_of.find(a);
    if (it == row_of.end()) {
      row_of[a] = out.jobs.size();
      out.jobs.push_back(j);
      out.jobs.back().array_task.reset();
      out.ids.emplace_back();
      continue;
    }
    auto& row = out.jobs[it->second];
    row.workers += j.workers;
    const bool more = j.state == wire::job_state::running ||
                      (j.state == wire::job_state::queued && row.state != wire::job_state::running);
    if (more && row.state != j.state) {
      row.state = j.state;
      row.outcome.reset();
      row.reason = j.reason;
    }
    if (j.servers && !j.servers->empty())
      row.servers = row.servers && !row.servers->empty() ? *row.servers + " " + *j.servers : *j.servers;
    if (!row.reason && j.reason) row.reason = j.reason;
  }
  for (auto& [a, at] : row_of) {
    auto ids = tasks[a];
    std::sort(ids.begin(), ids.end());
    out.ids[at] = fmt::format("{}_[{}]", a, array_ranges(ids));
    auto& row = out.jobs[at];
    std::string counts;
    for (auto& [state, n] : by_state[a]) counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, state);
    row.reason = counts + (row.reason && !row.reason->empty() ? ": " + *row.reason : std::string());
    row.exits.reset();
    if (row.state == wire::job_state::running || row.state == wire::job_state::queued) row.outcome.reset();
  }
  return out;
}

} // namespace aryl::live
