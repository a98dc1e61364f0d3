#pragma once
/// Running a job as the Unix user who submitted it: who that is on this node, whether this
/// agent may start it as them, and the folders it gets, owned by them.
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace aryl::live {

/// A user account as the node's passwd and group databases give it.
struct unix_account {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;              ///< primary group
  std::vector<gid_t> groups;  ///< every group it is in, the primary one included (getgrouplist)
  std::string home, shell;
};

/// The account named `name` (getpwnam_r, getgrouplist); nullopt when there is none. Throws
/// std::system_error when the databases cannot be read.
std::optional<unix_account> find_account(const std::string& name);
/// The account of `uid` (getpwuid_r); nullopt when it has no passwd entry.
std::optional<unix_account> find_account(uid_t uid);

/// The agent's own identity, for deciding whose jobs it may start.
struct agent_self {
  uid_t euid = 0;
  /// Its user name (or "uid N" without a passwd entry), to name it in refusals.
  std::string user;
  /// agent --allow-root-jobs: a launch may name a user whose uid is 0.
  bool allow_root_jobs = false;
};

/// How a launch for a named user runs.
struct run_as_plan {
  unix_account account;
  /// True: the worker takes the account's uid, gid and groups (the agent is root); false: it
  /// runs as the agent, which is that user.
  bool change_credentials = false;
};

/// Pure: how the launch for user `wanted` runs, or why it cannot (a sentence for the log and
/// the launch's failure). `found` is find_account(wanted). A name that could make a path (empty,
/// "." or "..", or holding '/') is refused. An agent running as root starts jobs as any user the
/// node knows, but not as one of uid 0 unless allow_root_jobs; an agent that is not root starts
/// them only as its own user (it cannot take another's uid).
std::variant<run_as_plan, std::string> plan_run_as(const std::string& wanted, const std::optional<unix_account>& found,
                                                   const agent_self& self);

/// Makes `dir` a folder only `uid` may use (mode 0700, owned by uid:gid), for a job of that
/// user; its missing parents are created as the agent's (mode 0777 less the umask). The folder
/// is created with mkdir and changed through a descriptor opened with O_NOFOLLOW, so a
/// symbolic link put in its place is refused rather than followed. One that exists already is
/// kept as it is when `uid` owns it, taken (chown, chmod 0700) when the agent owns it (the
/// agent's own creation, e.g. a start that failed half-way), and refused otherwise. Returns
/// why it cannot be used, or empty.
std::string prepare_owned_dir(const std::filesystem::path& dir, uid_t uid, gid_t gid);

/// Makes `dir` a folder of the agent with mode 0711 when it creates it (search only: users
/// reach their own folders in it without listing the others); its missing parents as in
/// prepare_owned_dir. Returns why it cannot, or empty.
std::string prepare_agent_dir(const std::filesystem::path& dir);

/// Prepares the folders of a job of `account` on this node: the one it runs in,
/// `work_dir`/jobs/<name>/<job_id> (its parents by prepare_agent_dir), and `checkpoint_dir`,
/// both by prepare_owned_dir. Returns the job's folder, or why a folder cannot be used.
std::variant<std::filesystem::path, std::string> prepare_job_dirs(const std::filesystem::path& work_dir,
                                                                  uint64_t job_id,
                                                                  const std::filesystem::path& checkpoint_dir,
                                                                  const unix_account& account);

} // namespace aryl::live
