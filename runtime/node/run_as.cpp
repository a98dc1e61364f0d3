#include "runtime/node/run_as.hpp"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

namespace aryl::live {

namespace {

/// Closes a descriptor on scope exit.
struct fd_closer {
  int fd = -1;
  ~fd_closer() {
    if (fd >= 0) ::close(fd);
  }
};

/// getpwnam_r / getpwuid_r through `lookup`, growing the buffer as asked; nullopt when the
/// entry does not exist (some libcs say so with one of these errors rather than none).
template <class Lookup>
std::optional<unix_account> account_from(Lookup lookup) {
  std::vector<char> buf(1024);
  passwd pw{};
  passwd* found = nullptr;
  int err;
  while ((err = lookup(&pw, buf.data(), buf.size(), &found)) == ERANGE && buf.size() < (size_t{1} << 20))
    buf.resize(buf.size() * 2);
  if (err == 0 && found == nullptr) return std::nullopt;
  if (err == ENOENT || err == ESRCH || err == EBADF || err == EPERM) return std::nullopt;
  if (err != 0) throw std::system_error(err, std::generic_category(), "passwd lookup");
  unix_account a;
  a.name = pw.pw_name;
  a.uid = pw.pw_uid;
  a.gid = pw.pw_gid;
  a.home = pw.pw_dir;
  a.shell = pw.pw_shell;
  int n = 16;
  for (;;) {
    a.groups.resize(static_cast<size_t>(n));
    const int asked = n;
    if (::getgrouplist(a.name.c_str(), a.gid, a.groups.data(), &n) >= 0) break;
    if (n <= asked) n = asked * 2;  // glibc sets the count needed; others may not
    if (n > 65536) throw std::system_error(E2BIG, std::generic_category(), "getgrouplist " + a.name);
  }
  a.groups.resize(static_cast<size_t>(n));
  return a;
}

/// Opens the folder `dir` itself, never a symbolic link in its place.
int open_dir_nofollow(const std::filesystem::path& dir) {
  return ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

std::string errno_text(const std::string& what, int err) {
  if (err == ELOOP || err == ENOTDIR) return what + ": not a folder (a symbolic link or a file is in its place)";
  return what + ": " + std::strerror(err);
}

/// mkdir `dir` with `mode`, its missing parents first; true in `created` when this call made it.
std::string make_dir(const std::filesystem::path& dir, mode_t mode, bool& created) {
  std::error_code ec;
  if (dir.has_parent_path()) std::filesystem::create_directories(dir.parent_path(), ec);
  if (ec) return "cannot create " + dir.parent_path().string() + ": " + ec.message();
  created = ::mkdir(dir.c_str(), mode) == 0;
  if (!created && errno != EEXIST) return errno_text("cannot create " + dir.string(), errno);
  return {};
}

} // namespace

std::optional<unix_account> find_account(const std::string& name) {
  return account_from([&](passwd* pw, char* buf, size_t n, passwd** out) {
    return ::getpwnam_r(name.c_str(), pw, buf, n, out);
  });
}

std::optional<unix_account> find_account(uid_t uid) {
  return account_from([&](passwd* pw, char* buf, size_t n, passwd** out) {
    return ::getpwuid_r(uid, pw, buf, n, out);
  });
}

std::variant<run_as_plan, std::string> plan_run_as(const std::string& wanted, const std::optional<unix_account>& found,
                                                   const agent_self& self) {
  // It names the job's folder: no path may come of it, whatever a name service accepts.
  if (wanted.empty() || wanted == "." || wanted == ".." || wanted.find('/') != std::string::npos)
    return "'" + wanted + "' is not a user name";
  if (self.euid != 0) {
    if (!found || found->uid != self.euid)
      return "this agent runs as '" + self.user + "', not root, and starts jobs only as '" + self.user +
             "', not as '" + wanted + "'";
    return run_as_plan{*found, false};
  }
  if (!found) return "no user '" + wanted + "' on this node";
  if (found->uid == 0 && !self.allow_root_jobs)
    return "jobs as root are refused on this node: agent --allow-root-jobs allows them";
  return run_as_plan{*found, true};
}

std::string prepare_owned_dir(const std::filesystem::path& dir, uid_t uid, gid_t gid) {
  bool created = false;
  if (auto why = make_dir(dir, 0700, created); !why.empty()) return why;
  fd_closer fd{open_dir_nofollow(dir)};
  if (fd.fd < 0) return errno_text("cannot open " + dir.string(), errno);
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0) return errno_text("cannot stat " + dir.string(), errno);
  if (!created && st.st_uid == uid) return {};
  if (!created && st.st_uid != ::geteuid())
    return dir.string() + " belongs to uid " + std::to_string(st.st_uid) + ", not to the job's user (uid " +
           std::to_string(uid) + ") nor to the agent";
  if (::fchown(fd.fd, uid, gid) != 0) return errno_text("cannot chown " + dir.string(), errno);
  if (::fchmod(fd.fd, 0700) != 0) return errno_text("cannot chmod " + dir.string(), errno);
  return {};
}

std::string prepare_agent_dir(const std::filesystem::path& dir) {
  bool created = false;
  if (auto why = make_dir(dir, 0711, created); !why.empty()) return why;
  fd_closer fd{open_dir_nofollow(dir)};
  if (fd.fd < 0) return errno_text("cannot open " + dir.string(), errno);
  // mkdir's mode is cut by the umask.
  if (created && ::fchmod(fd.fd, 0711) != 0) return errno_text("cannot chmod " + dir.string(), errno);
  return {};
}

std::variant<std::filesystem::path, std::string> prepare_job_dirs(const std::filesystem::path& work_dir,
                                                                  uint64_t job_id,
                                                                  const std::filesystem::path& checkpoint_dir,
                                                                  const unix_account& account) {
  const auto jobs = work_dir / "jobs";
  const auto job_dir = jobs / account.name / std::to_string(job_id);
  std::string why = prepare_agent_dir(jobs);
  if (why.empty()) why = prepare_agent_dir(jobs / account.name);
  if (why.empty()) why = prepare_owned_dir(job_dir, account.uid, account.gid);
  if (why.empty()) why = prepare_owned_dir(checkpoint_dir, account.uid, account.gid);
  if (!why.empty()) return why;
  return job_dir;
}

} // namespace aryl::live
