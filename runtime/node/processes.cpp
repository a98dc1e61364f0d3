#include "runtime/node/processes.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
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

/// In the child after fork: only async-signal-safe calls. Never returns.
[[noreturn]] void exec_child(char* const* argv, char* const* envp, int stdin_fd, int stdout_fd,
                             int stderr_fd, int error_fd, pid_t parent) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);
  // Handlers are reset by exec, ignored signals and the mask are not: start clean.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int s = 1; s < NSIG; ++s) ::sigaction(s, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  bool ok = ::dup2(stdin_fd, 0) >= 0;
  if (ok && stdout_fd >= 0) ok = ::dup2(stdout_fd, 1) >= 0;
  if (ok && stderr_fd >= 0) ok = ::dup2(stderr_fd, 2) >= 0;
  if (ok && argv[0] != nullptr) ::execvpe(argv[0], argv, envp);
  int err = errno != 0 ? errno : ENOENT;
  [[maybe_unused]] auto n = ::write(error_fd, &err, sizeof err);
  ::_exit(127);
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
  fd_guard dev_null{::open("/dev/null", O_RDONLY | O_CLOEXEC)};
  if (dev_null.fd < 0) throw_errno("open /dev/null");
  int out_pipe[2] = {-1, -1};
  if (spec.capture_stdout && ::pipe2(out_pipe, O_CLOEXEC) != 0) throw_errno("pipe2");
  fd_guard out_read{out_pipe[0]}, out_write{out_pipe[1]};
  int err_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) throw_errno("pipe2");
  fd_guard err_read{err_pipe[0]}, err_write{err_pipe[1]};

  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw_errno("fork");
  if (pid == 0)
    exec_child(argv.data(), envp.data(), dev_null.fd, out_write.fd, spec.stderr_fd, err_write.fd,
               parent);

  child_process child;
  child.pid_ = pid;
  ::setpgid(pid, pid);  // also here: no window in which a signal to the group misses it
  ::close(err_write.release());
  ::close(out_write.release());
  // The error pipe closes on a successful exec, or carries the exec's errno.
  int err = 0;
  ssize_t n;
  do n = ::read(err_read.fd, &err, sizeof err);
  while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(sizeof err)) child.exec_error_ = std::strerror(err);
  if (out_read.fd >= 0) {
    ::fcntl(out_read.fd, F_SETFL, ::fcntl(out_read.fd, F_GETFL) | O_NONBLOCK);
    child.stdout_fd_ = out_read.release();
  }
  return child;
}

child_process::child_process(child_process&& other) noexcept
    : pid_(std::exchange(other.pid_, 0)),
      stdout_fd_(std::exchange(other.stdout_fd_, -1)),
      exec_error_(std::move(other.exec_error_)),
      status_(std::exchange(other.status_, std::nullopt)) {}

child_process& child_process::operator=(child_process&& other) noexcept {
  if (this != &other) {
    release();
    pid_ = std::exchange(other.pid_, 0);
    stdout_fd_ = std::exchange(other.stdout_fd_, -1);
    exec_error_ = std::move(other.exec_error_);
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
