#include "runtime/live/access.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace aryl::live {

namespace {

constexpr std::string_view action_names[] = {"submit", "cancel", "show",      "logs",    "status",
                                             "node",   "demand", "token",     "show-node", "register",
                                             "hold",   "release", "update", "history"};

/// The same, as a refusal says it.
constexpr std::string_view action_texts[] = {"submit jobs", "cancel", "show", "read the logs of", "read status",
                                             "cordon, drain or resume servers", "set the inference demand",
                                             "manage identities", "show a node", "register a node",
                                             "hold", "release", "update", "read the job history"};

bool own_job_action(action a) {
  return a == action::cancel || a == action::show || a == action::logs || a == action::hold || a == action::release ||
         a == action::update;
}

bool role_may(role r, action a) {
  switch (r) {
    case role::admin: return a != action::register_node;
    // A node's detail names its jobs and ranks, and history its jobs, never their commands:
    // anyone who may read status.
    case role::user:
      return a == action::submit || a == action::status || a == action::show_node || a == action::history ||
             own_job_action(a);
    case role::agent: return a == action::register_node;
    case role::reader: return a == action::status || a == action::show_node || a == action::history;
  }
  return false;
}

} // namespace

std::string_view action_name(action a) { return action_names[static_cast<size_t>(a)]; }

std::string refusal(const principal& p, action a, const std::string& job_owner, bool known_job) {
  if (p.cluster_token) return {};
  const auto who = fmt::format("{} (role {})", p.name, role_name(p.who));
  const auto text = action_texts[static_cast<size_t>(a)];
  if (!role_may(p.who, a)) return fmt::format("{} may not {}", who, text);
  if (p.who == role::admin || !own_job_action(a)) return {};
  // Another user's job and a job that does not exist read alike: a user cannot probe which
  // job ids are someone else's.
  if (!known_job || job_owner != p.name)
    return fmt::format("{} may {} only its own jobs: no such job of {}", who, text, p.name);
  return {};
}

tenant_choice choose_tenant(const tenant_binding& b, const principal& p, const std::optional<std::string>& tenant,
                            int priority) {
  tenant_choice c{tenant, {}};
  if (b.empty() || p.cluster_token || p.who == role::admin) return c;
  std::vector<std::string> mine;
  for (auto& [name, users] : b.users)
    if (std::find(users.begin(), users.end(), p.name) != users.end()) mine.push_back(name);
  std::string list;
  for (auto& t : mine) list += (list.empty() ? "" : ", ") + t;
  if (!tenant) {
    if (mine.size() > 1) {
      c.refusal = fmt::format("{} is in tenants {}: choose one with --tenant", p.name, list);
      return c;
    }
    if (mine.size() == 1) c.tenant = mine.front();
  } else if (std::find(mine.begin(), mine.end(), *tenant) == mine.end()) {
    c.refusal = fmt::format("{} may not submit for tenant {} ({})", p.name, *tenant,
                            mine.empty() ? "no tenant names " + p.name : p.name + "'s tenants: " + list);
    return c;
  }
  if (!c.tenant) {
    if (priority > 0 && !b.users.empty())
      c.refusal = fmt::format("priority {}: a job without a tenant runs at priority 0 at most", priority);
    return c;
  }
  if (auto cap = b.max_priority.find(*c.tenant); cap != b.max_priority.end() && priority > cap->second)
    c.refusal = fmt::format("priority {}: tenant {} allows up to {}", priority, *c.tenant, cap->second);
  return c;
}

} // namespace aryl::live
