#pragma once
/// A user's or an admin's change to a queued job (`aryl hold`, `release`, `update`, and
/// `cancel` of one array task): plain data, so the driver and the live runtime include this
/// without CAF. The scheduler answers with a node_answer (actors/node_orders.hpp).
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "actors/enum_names.hpp"

namespace aryl {

/// What a client's order does to a job: job_order::action by name.
enum class job_action { hold, release, update, cancel };

inline constexpr std::array<std::string_view, 4> job_action_names{"hold", "release", "update", "cancel"};

constexpr std::string_view to_string(job_action a) { return job_action_names[static_cast<size_t>(a)]; }

/// The action named `name`; nothing for a word that is none of them.
constexpr std::optional<job_action> job_action_named(std::string_view name) {
  return enum_named<job_action>(job_action_names, name);
}

/// What was done, as an answer says it: held, released, updated, cancelled.
constexpr std::string_view done_word(job_action a) {
  switch (a) {
    case job_action::hold: return "held";
    case job_action::release: return "released";
    case job_action::update: return "updated";
    case job_action::cancel: return "cancelled";
  }
  return "?";
}

struct job_order {
  uint32_t job = 0;
  /// One task of the array `job` (its task id); -1: the job itself, or a whole array.
  int64_t task = -1;
  /// hold | release | update | cancel
  std::string action;
  /// Who asks, for the log ("" in cluster-token mode).
  std::string by;
  /// update: the new values; unset (the sentinels) keeps the job's.
  bool set_priority = false;
  int32_t priority = 0;
  double time_limit_s = -1;  ///< 0: no limit
  int32_t min_workers = 0, max_workers = 0;
  double duration_s = -1;    ///< its run-time estimate
  bool set_after = false;
  std::string after;         ///< "3:ok,4" (solvers/job_queue_rules.hpp); "": none
};

} // namespace aryl
