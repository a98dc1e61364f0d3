#pragma once
/// Child processes of live mode: each in its own process group, owned by one object that
/// never leaves it behind (its destructor kills the group and reaps the child).
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace aryl::live {

/// A Unix identity a child takes before it executes its program.
struct credentials {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  ///< its supplementary groups
};

/// What to start.
struct spawn_spec {
  /// argv; argv[0] is the program, looked up on the agent's PATH when it has no '/'.
  std::vector<std::string> argv;
  /// The child's whole environment, one "KEY=VALUE" per entry.
  std::vector<std::string> env;
  /// File descriptor the child's stderr is duplicated from; -1 = inherit ours. Not owned.
  int stderr_fd = -1;
  /// True: the child's stdout is a pipe whose read end stdout_fd() gives; false: inherit.
  bool capture_stdout = true;
  /// Set: the child drops to these groups, gid and uid, in that order (the caller must be
  /// root), and checks it cannot take uid 0 back (when uid is not 0). Unset: ours.
  std::optional<credentials> as;
  /// Not empty: the child's working directory, entered as `as`; empty: ours.
  std::string working_dir;
  /// Folders the child must be able to read, write and search as `as` (access(2)).
  std::vector<std::string> usable_dirs;
};

/// How a process ended, from its wait status.
struct exit_status {
  /// Exit status when it exited normally; 0 when killed by a signal; -1 when unknown
  /// (the child was reaped by someone else, e.g. with SIGCHLD ignored).
  int32_t code = 0;
  /// The signal that killed it; 0 = none.
  uint32_t signal = 0;
  bool operator==(const exit_status&) const = default;
};

/// A child process, the leader of its own process group (setpgid), stdin from /dev/null, no
/// other descriptor of ours (stdout and stderr as the spec says).
/// The child also gets SIGKILL if the thread that spawned it dies (PR_SET_PDEATHSIG), so a
/// crashed agent leaves no worker behind. Movable, not copyable. Not thread-safe.
class child_process {
 public:
  /// Forks and executes `spec`. Throws std::system_error when a pipe or fork fails. When
  /// the program cannot be executed, or a step before (the credentials, the working
  /// directory, a usable folder) fails, the child exits with code 127 and start_error() says
  /// why (the spawn itself succeeds, so the caller reports the exit as for any child).
  static child_process spawn(const spawn_spec& spec);

  child_process() = default;
  child_process(child_process&& other) noexcept;
  child_process& operator=(child_process&& other) noexcept;
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;
  /// SIGKILL to the group and a blocking reap, unless already reaped; closes stdout_fd().
  ~child_process();

  /// The process id (= its process group id); 0 for an empty object.
  pid_t pid() const { return pid_; }
  /// Read end of the stdout pipe (non-blocking, close-on-exec), or -1. Owned by this object
  /// until take_stdout_fd().
  int stdout_fd() const { return stdout_fd_; }
  /// Gives up ownership of the stdout pipe's read end; returns it (or -1).
  int take_stdout_fd();
  /// Why the child did not start, naming the step ("cannot execute '/bin/x': No such file or
  /// directory", "cannot enter /w/jobs/alice/3 as uid 1001: Permission denied"); empty when
  /// its program was executed.
  const std::string& start_error() const { return start_error_; }
  /// True once the child was reaped (try_reap or wait returned its status).
  bool reaped() const { return pid_ == 0 || status_.has_value(); }
  /// The status, once reaped.
  const std::optional<exit_status>& status() const { return status_; }

  /// A pidfd of the child (close-on-exec), owned by the caller: readable once the child has
  /// ended, so its end can be awaited with epoll instead of polled with waitid. -1 with errno
  /// set where the kernel has none (ENOSYS before Linux 5.3), or once reaped (ESRCH).
  int open_pidfd() const;
  /// Sends `sig` to the whole process group; no-op once reaped.
  void signal_group(int sig);
  /// Non-blocking: if the child has exited, SIGKILLs what is left of its group, reaps it
  /// and returns its status; nullopt while it runs. Only this pid is waited for, never
  /// another child of the caller.
  std::optional<exit_status> try_reap();
  /// Blocks until the child exits, then as try_reap.
  exit_status wait();

 private:
  std::optional<exit_status> reap(bool block);
  void release() noexcept;

  pid_t pid_ = 0;
  int stdout_fd_ = -1;
  std::string start_error_;
  std::optional<exit_status> status_;
};

/// exit_status of a waitpid status word.
exit_status decode_wait_status(int status);

/// Our own environment (environ) as "KEY=VALUE" entries.
std::vector<std::string> current_environment();

/// The variable an agent puts in its workers' environment, naming the agent instance's home
/// ("NAME@WORK_DIR"), so that a restarted agent finds what its last run left.
inline constexpr const char* agent_marker_variable = "ARYL_AGENT";

/// SIGKILLs every process (and its process group) whose environment holds
/// agent_marker_variable=`marker`, but this process: workers a killed agent left (a worker's
/// children outlive it, as the kernel kills only the direct child of a dying parent). Returns
/// how many processes it signalled. Reads /proc; one it cannot read is skipped.
int kill_marked_processes(const std::string& marker);

} // namespace aryl::live
