#pragma once
/// What each role may ask of `aryl serve` (docs/security.md, "Roles"): one pure decision per
/// request, so the table is tested whole and the gateway only asks it.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/live/identities.hpp"

namespace aryl::live {

/// The requests a peer makes, as the audit log names them.
enum class action {
  submit, cancel, show, logs, status, node_order, demand, tokens, show_node, register_node, hold, release, update, history
};

std::string_view action_name(action a);

/// Who a connection was taken for at its hello.
struct principal {
  std::string name;
  role who = role::admin;
  /// Cluster-token mode (no identities): every peer is an admin, and jobs run as the agent's
  /// own user.
  bool cluster_token = true;
};

/// Why `p` may not do `a` ("" if it may). `job_owner`: for cancel, show, logs, hold, release
/// and update, the user
/// the job was submitted by; `known_job`: false when the job is unknown (a user is then told
/// the job does not exist, whoever's it would be).
std::string refusal(const principal& p, action a, const std::string& job_owner = {}, bool known_job = true);

/// Tenants bound to users (tenants.<name>.users and .max_priority): the tenants a user may
/// submit for, and each tenant's highest priority class.
struct tenant_binding {
  std::map<std::string, std::vector<std::string>> users;  ///< by tenant; a tenant not here: no one named
  std::map<std::string, int> max_priority;                ///< by tenant; not here: any
  bool empty() const { return users.empty() && max_priority.empty(); }
};

/// What a submit of `p` asking for `tenant` at `priority` runs for.
struct tenant_choice {
  std::optional<std::string> tenant;
  std::string refusal;  ///< not "": refused, and why
};

/// Users (not admins, not cluster-token mode) submit only for tenants that name them; without
/// --tenant a job runs for the user's only tenant, and a user of several must choose. A job
/// asks at most its tenant's max_priority; with users bound, one without a tenant at most 0.
tenant_choice choose_tenant(const tenant_binding& b, const principal& p, const std::optional<std::string>& tenant,
                            int priority);

} // namespace aryl::live
