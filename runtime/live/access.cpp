#include "runtime/live/access.hpp"

#include <fmt/format.h>

namespace aryl::live {

namespace {

constexpr std::string_view action_names[] = {"submit", "cancel", "show", "logs", "status",
                                             "node",   "demand", "token", "register"};

/// The same, as a refusal says it.
constexpr std::string_view action_texts[] = {"submit jobs", "cancel", "show", "read the logs of", "read status",
                                             "cordon, drain or resume servers", "set the inference demand",
                                             "manage identities", "register a node"};

bool own_job_action(action a) { return a == action::cancel || a == action::show || a == action::logs; }

bool role_may(role r, action a) {
  switch (r) {
    case role::admin: return a != action::register_node;
    case role::user: return a == action::submit || a == action::status || own_job_action(a);
    case role::agent: return a == action::register_node;
    case role::reader: return a == action::status;
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

} // namespace aryl::live
