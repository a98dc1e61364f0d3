#include "runtime/node/worker_env.hpp"

#include <charconv>
#include <map>

#include "runtime/node/processes.hpp"

namespace aryl::live {

namespace {

constexpr std::string_view aryl_prefix = "ARYL_";

bool name_char(char c, bool first) {
  return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (!first && c >= '0' && c <= '9');
}

/// Names the launch may not set: the agent's credentials and where they lead.
bool credential_name(std::string_view name) {
  return name.starts_with("ARYL_TOKEN") || name == "ARYL_ADDR" || name.starts_with("ARYL_TLS_");
}

std::string number(double x) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, r.ptr);
}

/// A --pass-env pattern or a default_pass_env entry: a name, or a prefix before a final '*'.
bool env_pattern_matches(std::string_view pattern, std::string_view name) {
  if (pattern.ends_with('*')) return name.starts_with(pattern.substr(0, pattern.size() - 1));
  return name == pattern;
}

} // namespace

std::string pass_env_refusal(const std::string& pattern) {
  const std::string_view stem = std::string_view(pattern).substr(0, pattern.size() - (pattern.ends_with('*') ? 1 : 0));
  bool valid = !pattern.empty();
  for (size_t i = 0; i < stem.size(); ++i) valid = valid && name_char(stem[i], i == 0);
  if (!valid)
    return "--pass-env '" + pattern + "': not a variable name (letters, digits and '_', not starting with a "
           "digit), with an optional trailing '*'";
  // A glob whose stem is a prefix of "ARYL_" ("A*", "*") matches ARYL_ names too.
  if (stem.starts_with(aryl_prefix) || (pattern.ends_with('*') && aryl_prefix.starts_with(stem)))
    return "--pass-env '" + pattern + "': the agent's ARYL_* variables (its token, address and TLS files) "
           "never reach a worker";
  return {};
}

worker_environment build_worker_environment(const std::vector<std::string>& agent_env,
                                            const std::vector<std::string>& pass_env, const wire::launch& l,
                                            const worker_context& ctx) {
  const auto passed = [&](std::string_view name) {
    if (name.starts_with(aryl_prefix)) return false;
    for (auto p : default_pass_env)
      if (env_pattern_matches(p, name)) return true;
    for (const auto& p : pass_env)
      if (env_pattern_matches(p, name)) return true;
    return false;
  };
  std::map<std::string, std::string> env;
  for (const auto& kv : agent_env) {
    const auto eq = kv.find('=');
    if (eq != std::string::npos && eq > 0 && passed(std::string_view(kv).substr(0, eq)))
      env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  if (ctx.account) {
    env["USER"] = env["LOGNAME"] = ctx.account->user;
    env["HOME"] = ctx.account->home;
    env["SHELL"] = ctx.account->shell;
  }
  env[agent_marker_variable] = ctx.marker;
  env["ARYL_JOB_ID"] = std::to_string(l.job_id);
  env["ARYL_RANK"] = std::to_string(l.rank);
  env["ARYL_WORLD_SIZE"] = std::to_string(l.world_size);
  std::string gpus;
  for (auto g : l.gpus) gpus += (gpus.empty() ? "" : ",") + std::to_string(g);
  env["CUDA_VISIBLE_DEVICES"] = gpus;
  env["ARYL_CHECKPOINT_DIR"] = ctx.checkpoint_dir;
  env["ARYL_RENDEZVOUS"] = l.rendezvous;
  if (l.work_s) env["ARYL_WORK_S"] = number(*l.work_s);
  if (l.rate) env["ARYL_RATE"] = number(*l.rate);
  worker_environment out;
  for (const auto& [k, v] : l.env) {
    // A name holding '=' would set another variable ("ARYL_TOKEN_FILE=x" sets ARYL_TOKEN_FILE).
    if (k.empty() || k.find_first_of(std::string_view("=\0", 2)) != std::string::npos || credential_name(k))
      out.refused.push_back(k);
    else
      env[k] = v;
  }
  out.env.reserve(env.size());
  for (const auto& [k, v] : env) out.env.push_back(k + "=" + v);
  return out;
}

} // namespace aryl::live
