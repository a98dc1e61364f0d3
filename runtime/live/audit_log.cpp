#include "runtime/live/audit_log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace aryl::live {

std::string audit_line(const audit_entry& e, int64_t unix_ms) {
  const std::chrono::sys_seconds t{std::chrono::seconds(unix_ms / 1000)};
  nlohmann::ordered_json j;
  j["time"] = fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:03d}Z", t, unix_ms % 1000);
  j["identity"] = e.identity;
  j["role"] = e.role;
  j["peer"] = e.peer;
  j["action"] = e.action;
  j["target"] = e.target;
  j["result"] = e.result;
  // Replaced, not thrown: a name with invalid UTF-8 is still audited.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

audit_log::audit_log(std::string path, std::function<void(const std::string&)> trouble)
    : path_(std::move(path)), trouble_(std::move(trouble)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd_ < 0 && trouble_) trouble_(path_ + ": cannot open the audit log: " + std::strerror(errno));
}

audit_log::~audit_log() {
  if (fd_ >= 0) ::close(fd_);
}

std::string audit_log::record(const audit_entry& e) {
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::system_clock::now().time_since_epoch());
  const auto line = audit_line(e, now.count());
  std::lock_guard lock(m_);
  if (fd_ < 0) fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  // One write per line with O_APPEND: lines never interleave, and a short write (a full disk)
  // is a failure like any other.
  ssize_t n = -1;
  if (fd_ >= 0) do n = ::write(fd_, line.data(), line.size());
    while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(line.size())) {
    if (std::exchange(failing_, false) && trouble_) trouble_(path_ + ": the audit log is written again");
    return line;
  }
  ++failures_;
  if (!std::exchange(failing_, true) && trouble_)
    trouble_(fmt::format("{}: cannot append to the audit log ({}); the request went on", path_,
                         n < 0 ? std::strerror(errno) : "short write"));
  return line;
}

uint64_t audit_log::failures() const {
  std::lock_guard lock(m_);
  return failures_;
}

} // namespace aryl::live
