#pragma once
/// How a job ended, as jobs.csv, the journal, `aryl show` and `status --all` name it.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "actors/enum_names.hpp"

namespace aryl {

/// done: its workers all exited 0 (simulated: its work completed). failed: a worker exited
/// non-zero or was killed, and its retries ran out (or a simulated worker crash did). timeout:
/// it held workers for its time limit. cancelled: by a client, or because the run was told to
/// stop. node_lost: a machine it ran on was lost, and its retries ran out.
/// dependency_never_met: it waited for a job (`aryl submit --after`) that ended so that it can
/// never start (an afterok job that did not end done, an afternotok one that did).
enum class job_outcome : int32_t { done, failed, timeout, cancelled, node_lost, dependency_never_met };

inline constexpr std::array<std::string_view, 6> job_outcome_names{"done",      "failed",    "timeout",
                                                                   "cancelled", "node_lost", "dependency_never_met"};

constexpr std::string_view to_string(job_outcome o) { return job_outcome_names[static_cast<size_t>(o)]; }

/// The outcome named `name`; nothing for a name that is none of them.
constexpr std::optional<job_outcome> outcome_named(std::string_view name) {
  return enum_named<job_outcome>(job_outcome_names, name);
}

} // namespace aryl
