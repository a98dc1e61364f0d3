#pragma once
/// What each role may ask of `aryl serve` (docs/security.md, "Roles"): one pure decision per
/// request, so the table is tested whole and the gateway only asks it.
#include <string>
#include <string_view>

#include "runtime/live/identities.hpp"

namespace aryl::live {

/// The requests a peer makes, as the audit log names them.
enum class action { submit, cancel, show, logs, status, node_order, demand, tokens, register_node };

std::string_view action_name(action a);

/// Who a connection was taken for at its hello.
struct principal {
  std::string name;
  role who = role::admin;
  /// Cluster-token mode (no identities): every peer is an admin, and jobs run as the agent's
  /// own user.
  bool cluster_token = true;
};

/// Why `p` may not do `a` ("" if it may). `job_owner`: for cancel, show and logs, the user
/// the job was submitted by; `known_job`: false when the job is unknown (a user is then told
/// the job does not exist, whoever's it would be).
std::string refusal(const principal& p, action a, const std::string& job_owner = {}, bool known_job = true);

} // namespace aryl::live
