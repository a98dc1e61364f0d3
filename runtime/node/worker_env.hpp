#pragma once
/// A worker's environment, built from an allow-list rather than copied from the agent: the
/// agent's own variables include its cluster credentials (ARYL_TOKEN_FILE, ARYL_ADDR,
/// ARYL_TLS_*), which would let any job act as the agent, or as an admin. Pure: no process
/// state is read here.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/wire/messages.hpp"

namespace aryl::live {

/// The agent's variables a worker gets without --pass-env: exact names, and prefixes (given
/// with a trailing '*').
inline constexpr std::string_view default_pass_env[] = {
    "PATH", "LANG", "LANGUAGE", "LC_*", "TZ", "TERM", "TMPDIR", "HOME", "USER", "LOGNAME", "SHELL",
    "PYTHONPATH", "LD_LIBRARY_PATH", "CUDA_*", "NCCL_*", "OMP_NUM_THREADS",
    "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS",
};

/// Why an operator's --pass-env pattern is refused; empty when it is fine. A pattern is a
/// variable name ([A-Za-z_][A-Za-z0-9_]*), optionally ending in '*' (any name with that
/// prefix). One that could match a name starting with ARYL_ is refused: the agent's ARYL_*
/// variables never reach a worker.
std::string pass_env_refusal(const std::string& pattern);

/// The account a worker runs as, for the variables that name it.
struct worker_account {
  std::string user;   ///< USER and LOGNAME
  std::string home;   ///< HOME
  std::string shell;  ///< SHELL
};

/// What the agent adds for one worker, beside the launch itself.
struct worker_context {
  std::string marker;          ///< ARYL_AGENT's value (agent_marker_variable)
  std::string checkpoint_dir;  ///< ARYL_CHECKPOINT_DIR
  /// Set when the launch names a user: USER, LOGNAME, HOME and SHELL come from it, never from
  /// the agent's environment.
  std::optional<worker_account> account;
};

/// A worker's environment and the launch's variables left out of it.
struct worker_environment {
  std::vector<std::string> env;  ///< "KEY=VALUE" entries, sorted by name, one per name
  /// Names in launch.env that were not set: ARYL_TOKEN*, ARYL_ADDR, ARYL_TLS_*, and names that
  /// are empty or hold '=' or NUL.
  std::vector<std::string> refused;
};

/// The environment of the worker of `l`, in layers, each over the one before:
/// 1. the agent's variables (`agent_env`, "KEY=VALUE" entries) that default_pass_env or one of
///    `pass_env` matches, except every name starting with ARYL_;
/// 2. USER, LOGNAME, HOME and SHELL from `ctx.account`, when set;
/// 3. aryl's: ARYL_AGENT (ctx.marker), ARYL_JOB_ID, ARYL_RANK, ARYL_WORLD_SIZE,
///    CUDA_VISIBLE_DEVICES (l.gpus, comma-separated), ARYL_CHECKPOINT_DIR, ARYL_RENDEZVOUS, and
///    ARYL_WORK_S and ARYL_RATE when the launch gives them;
/// 4. l.env, but for the names listed in `refused`.
worker_environment build_worker_environment(const std::vector<std::string>& agent_env,
                                            const std::vector<std::string>& pass_env, const wire::launch& l,
                                            const worker_context& ctx);

} // namespace aryl::live
