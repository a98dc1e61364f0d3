#pragma once
/// An operator's orders about one machine (`aryl cordon`, `drain`, `resume`) and machines that
/// join a cluster already running: what the scheduler takes and answers. Plain types: the
/// driver and the live runtime include this without CAF.
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "actors/enum_names.hpp"

namespace aryl {

/// What an operator's order does to a server: node_order::action by name.
enum class node_action { cordon, drain, resume };

inline constexpr std::array<std::string_view, 3> node_action_names{"cordon", "drain", "resume"};

constexpr std::string_view to_string(node_action a) { return node_action_names[static_cast<size_t>(a)]; }

/// What holds a training server out of placement. cordon: no new work there, its jobs run on.
/// drain: the same, and the server counts as drained once its last job has left; with `now`
/// its jobs are stopped at once (they checkpoint) and queued again, each stop a preemption.
struct node_order {
  std::string server;
  std::string action;  ///< cordon | drain | resume
  std::string reason;  ///< the operator's words, shown in `status` and logged
  bool now = false;    ///< drain only: move its jobs now instead of letting them finish
};

/// ok: what was done, one line ("t1: draining, 2 jobs run on there until they end"); else why
/// the order is refused, naming the server.
struct node_answer {
  bool ok = false;
  std::string text;
};

/// A server's hold, as the journal keeps it (`aryl serve --state`): kind cordon or drain.
struct node_hold {
  std::string server;
  std::string kind;
  std::string reason;
};

/// A training machine whose agent registered after the run started (live mode).
struct node_join {
  std::string server;
  std::string gpu_type;
  int gpus = 0;
};

/// The joined machine's server id, or -1 and why it is refused (naming it).
struct join_answer {
  int id = -1;
  std::string error;
};

} // namespace aryl
