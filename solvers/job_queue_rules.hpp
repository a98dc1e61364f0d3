#pragma once
/// The rules of a queue's users, as Slurm's: dependencies between jobs (`--after`, Slurm's
/// --dependency=afterok/afterany/afternotok) and job arrays (`--array 0-99%10`). Plain text
/// in, plain data out; the scheduler actor keeps the state (actors/scheduler_queue.cpp).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace aryl {

/// ok: the job must end done. any: it must end, however. notok: it must end other than done.
enum class after_kind { ok, any, notok };

struct job_dependency {
  uint32_t job = 0;
  after_kind kind = after_kind::ok;
  friend bool operator==(const job_dependency&, const job_dependency&) = default;
};

/// "3", "3:ok", "3:any,4:notok" (ok by default; Slurm's "afterok:3" is taken too) -> the list;
/// throws input_error naming `what` and the bad item.
std::vector<job_dependency> parse_after(std::string_view text, const std::string& what);
/// The journal's and the spec's form: "ok:3,any:4" ("" for none).
std::string after_text(const std::vector<job_dependency>& deps);
/// The same, read back (the spec's own form; throws input_error as parse_after).
std::vector<job_dependency> after_of(std::string_view canonical);

/// Where one dependency stands: its job has not ended (`ended` empty), or ended done or not.
enum class dependency_state { waiting, met, never };
dependency_state dependency_state_of(after_kind kind, std::optional<bool> ended_done);

/// Whether `job` depending on `deps` would close a cycle: some job of `deps` waits, through
/// the dependencies `after_of_job` lists, on `job` itself.
bool closes_cycle(uint32_t job, const std::vector<job_dependency>& deps,
                  const std::function<std::vector<job_dependency>(uint32_t)>& after_of_job);

/// A job array's tasks: their ids in ascending order, and the most at once (0: no limit).
struct array_tasks {
  std::vector<uint32_t> ids;
  uint32_t limit = 0;
};
/// Most tasks of one array.
inline constexpr size_t max_array_tasks = 4096;
/// "0-99", "0-99%10", "1,3,5-7", "0-15:4" (every 4th) -> the tasks; throws input_error naming
/// `what` for a malformed list, a task id repeated, more than max_array_tasks tasks or a %0.
array_tasks parse_array(std::string_view text, const std::string& what);
/// "0-3,7" of ascending ids: ranges folded (status's one line of an array).
std::string array_ranges(const std::vector<uint32_t>& ids);

} // namespace aryl
