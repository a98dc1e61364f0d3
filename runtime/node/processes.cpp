#include "runtime/node/processes.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <system_error>
#include <utility>

extern char** environ;

namespace aryl::live {

namespace {

[[noreturn]] void throw_errno(const char* what) {
  throw std::system_error(errno, std::generic_category(), what);
}

/// Closes a descriptor on scope exit unless released.
struct fd_guard {
  int fd = -1;
  ~fd_guard() {
    if (fd >= 0) ::close(fd);
  }
  int release() { return std::exchange(fd, -1); }
};

/// Null-terminated pointer array over `v`, built before fork (the child may not allocate).
std::vector<char*> c_array(const std::vector<std::string>& v) {
  std::vector<char*> out;
  out.reserve(v.size() + 1);
  for (const auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

/// The step of a child's start that failed, sent to the parent with its errno; a usable
/// folder's index is added to usable_dir_step.
enum start_step : int { exec_step, redirect_step, setgroups_step, setgid_step, setuid_step, regain_step, chdir_step,
                        usable_dir_step };

/// What the child needs after fork, every pointer built before it (the child may not allocate).
struct child_setup {
  char* const* argv;
  char* const* envp;
  int stdin_fd, stdout_fd, stderr_fd, error_fd;
  pid_t parent;
  const credentials* as;  ///< null: ours
  const char* working_dir;  ///< null: ours
  char* const* usable_dirs;  ///< null-terminated
};

[[noreturn]] void fail_start(int error_fd, int step, int err) {
  const int report[2] = {step, err};
  [[maybe_unused]] auto n = ::write(error_fd, report, sizeof report);
  ::_exit(127);
}

/// In the child after fork: only async-signal-safe calls. Never returns.
[[noreturn]] void exec_child(const child_setup& c) {
  ::setpgid(0, 0);
  if (c.as) {
    // Groups first, the uid last: once it is not root, the process cannot change the others.
    if (::setgroups(c.as->groups.size(), c.as->groups.data()) != 0) fail_start(c.error_fd, setgroups_step, errno);
    if (::setgid(c.as->gid) != 0) fail_start(c.error_fd, setgid_step, errno);
    if (::setuid(c.as->uid) != 0) fail_start(c.error_fd, setuid_step, errno);
    if (c.as->uid != 0 && (::setuid(0) == 0 || ::getuid() != c.as->uid || ::geteuid() != c.as->uid ||
                           ::getgid() != c.as->gid || ::getegid() != c.as->gid))
      fail_start(c.error_fd, regain_step, EPERM);
  }
  // After the credential change, which clears it.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != c.parent) ::_exit(127);
  // Handlers are reset by exec, ignored signals and the mask are not: start clean.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int s = 1; s < NSIG; ++s) ::sigaction(s, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  bool ok = ::dup2(c.stdin_fd, 0) >= 0;
  if (ok && c.stdout_fd >= 0) ok = ::dup2(c.stdout_fd, 1) >= 0;
  if (ok && c.stderr_fd >= 0) ok = ::dup2(c.stderr_fd, 2) >= 0;
  // Nothing else of ours reaches the program (the agent's connection to the scheduler has no
  // close-on-exec): the error pipe moves to 3, everything above goes.
  int error_fd = c.error_fd;
  if (ok && error_fd != 3) ok = ::dup3(error_fd, 3, O_CLOEXEC) == 3;
  if (!ok) fail_start(error_fd, redirect_step, errno);
  error_fd = 3;
  ::closefrom(4);
  if (c.working_dir && ::chdir(c.working_dir) != 0) fail_start(error_fd, chdir_step, errno);
  for (int i = 0; c.usable_dirs[i] != nullptr; ++i)
    if (::access(c.usable_dirs[i], R_OK | W_OK | X_OK) != 0) fail_start(error_fd, usable_dir_step + i, errno);
  if (c.argv[0] != nullptr) ::execvpe(c.argv[0], c.argv, c.envp);
  fail_start(error_fd, exec_step, errno != 0 ? errno : ENOENT);
}

/// The parent's sentence for a child's failed `step`.
std::string start_failure(const spawn_spec& spec, int step, int err) {
  const std::string reason = std::strerror(err);
  const std::string as = spec.as ? " as uid " + std::to_string(spec.as->uid) : "";
  switch (step) {
    case exec_step: return "cannot execute '" + (spec.argv.empty() ? "" : spec.argv[0]) + "': " + reason;
    case redirect_step: return "cannot redirect its standard streams: " + reason;
    case setgroups_step: return "cannot take the groups of uid " + std::to_string(spec.as->uid) + ": " + reason;
    case setgid_step: return "cannot take gid " + std::to_string(spec.as->gid) + ": " + reason;
    case setuid_step: return "cannot take uid " + std::to_string(spec.as->uid) + ": " + reason;
    case regain_step: return "could take root back after dropping to uid " + std::to_string(spec.as->uid);
    case chdir_step: return "cannot enter " + spec.working_dir + as + ": " + reason;
    default: {
      const auto i = static_cast<size_t>(step - usable_dir_step);
      const std::string dir = i < spec.usable_dirs.size() ? spec.usable_dirs[i] : "a folder";
      return "cannot use " + dir + as + ": " + reason;
    }
  }
}

} // namespace

exit_status decode_wait_status(int status) {
  exit_status s;
  if (WIFEXITED(status)) s.code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) s.signal = static_cast<uint32_t>(WTERMSIG(status));
  return s;
}

std::vector<std::string> current_environment() {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) env.emplace_back(*e);
  return env;
}

child_process child_process::spawn(const spawn_spec& spec) {
  const auto argv = c_array(spec.argv);
  const auto envp = c_array(spec.env);
  const auto usable = c_array(spec.usable_dirs);
  fd_guard dev_null{::open("/dev/null", O_RDONLY | O_CLOEXEC)};
  if (dev_null.fd < 0) throw_errno("open /dev/null");
  int out_pipe[2] = {-1, -1};
  if (spec.capture_stdout && ::pipe2(out_pipe, O_CLOEXEC) != 0) throw_errno("pipe2");
  fd_guard out_read{out_pipe[0]}, out_write{out_pipe[1]};
  int err_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) throw_errno("pipe2");
  fd_guard err_read{err_pipe[0]}, err_write{err_pipe[1]};

  const child_setup setup{argv.data(), envp.data(), dev_null.fd, out_write.fd, spec.stderr_fd, err_write.fd,
                          ::getpid(), spec.as ? &*spec.as : nullptr,
                          spec.working_dir.empty() ? nullptr : spec.working_dir.c_str(), usable.data()};
  const pid_t pid = ::fork();
  if (pid < 0) throw_errno("fork");
  if (pid == 0) exec_child(setup);

  child_process child;
  child.pid_ = pid;
  ::setpgid(pid, pid);  // also here: no window in which a signal to the group misses it
  ::close(err_write.release());
  ::close(out_write.release());
  // The error pipe closes on a successful exec, or carries the failed step and its errno.
  int report[2] = {0, 0};
  size_t got = 0;
  for (;;) {
    const ssize_t n = ::read(err_read.fd, reinterpret_cast<char*>(report) + got, sizeof report - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
    if (got == sizeof report) break;
  }
  if (got == sizeof report) child.start_error_ = start_failure(spec, report[0], report[1]);
  if (out_read.fd >= 0) {
    ::fcntl(out_read.fd, F_SETFL, ::fcntl(out_read.fd, F_GETFL) | O_NONBLOCK);
    child.stdout_fd_ = out_read.release();
  }
  return child;
}

child_process::child_process(child_process&& other) noexcept
    : pid_(std::exchange(other.pid_, 0)),
      stdout_fd_(std::exchange(other.stdout_fd_, -1)),
      start_error_(std::move(other.start_error_)),
      status_(std::exchange(other.status_, std::nullopt)) {}

child_process& child_process::operator=(child_process&& other) noexcept {
  if (this != &other) {
    release();
    pid_ = std::exchange(other.pid_, 0);
    stdout_fd_ = std::exchange(other.stdout_fd_, -1);
    start_error_ = std::move(other.start_error_);
    status_ = std::exchange(other.status_, std::nullopt);
  }
  return *this;
}

child_process::~child_process() { release(); }

void child_process::release() noexcept {
  if (!reaped()) {
    signal_group(SIGKILL);
    reap(true);
  }
  if (stdout_fd_ >= 0) ::close(stdout_fd_);
  stdout_fd_ = -1;
  pid_ = 0;
  status_.reset();
}

int child_process::take_stdout_fd() { return std::exchange(stdout_fd_, -1); }

int child_process::open_pidfd() const {
  if (reaped()) {
    errno = ESRCH;
    return -1;
  }
#ifdef SYS_pidfd_open
  // Unreaped, our child's pid cannot name another process yet.
  return static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
#else
  errno = ENOSYS;
  return -1;
#endif
}

void child_process::signal_group(int sig) {
  if (!reaped()) ::kill(-pid_, sig);
}

std::optional<exit_status> child_process::try_reap() { return reap(false); }

exit_status child_process::wait() { return *reap(true); }

std::optional<exit_status> child_process::reap(bool block) {
  if (status_ || pid_ == 0) return status_;
  // Look without reaping first: while the leader is a zombie its pid cannot be reused, so
  // the SIGKILL below reaches only what is left of its own group.
  siginfo_t info{};
  int r;
  do r = ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT | (block ? 0 : WNOHANG));
  while (r < 0 && errno == EINTR);
  if (r < 0) {
    // Not our child any more (reaped elsewhere, e.g. SIGCHLD ignored): status unknown.
    status_ = exit_status{-1, 0};
    return status_;
  }
  if (info.si_pid == 0) return std::nullopt;
  ::kill(-pid_, SIGKILL);
  int status = 0;
  pid_t w;
  do w = ::waitpid(pid_, &status, 0);
  while (w < 0 && errno == EINTR);
  status_ = w == pid_ ? decode_wait_status(status) : exit_status{-1, 0};
  return status_;
}

int kill_marked_processes(const std::string& marker) {
  const std::string wanted = std::string(agent_marker_variable) + "=" + marker;
  int killed = 0;
  DIR* proc = ::opendir("/proc");
  if (!proc) return 0;
  while (auto* e = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (!end || *end != '\0' || pid <= 1 || pid == ::getpid()) continue;
    std::ifstream in(std::string("/proc/") + e->d_name + "/environ", std::ios::binary);
    std::string entry;
    bool ours = false;
    while (!ours && std::getline(in, entry, '\0')) ours = entry == wanted;
    if (!ours) continue;
    const pid_t group = ::getpgid(static_cast<pid_t>(pid));
    if (group > 1 && group != ::getpgrp()) ::kill(-group, SIGKILL);
    ::kill(static_cast<pid_t>(pid), SIGKILL);
    ++killed;
  }
  ::closedir(proc);
  return killed;
}

} // namespace aryl::live
