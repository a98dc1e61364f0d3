#pragma once
/// The audit log of `aryl serve` (docs/security.md, "Audit"): one JSON object per line in
/// `audit.jsonl` of the run folder, for every request that changes state and every request
/// refused by role. Appended to, never truncated: it outlives restarts. Thread-safe.
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

namespace aryl::live {

struct audit_entry {
  std::string identity;  ///< the authenticated name ("cluster-token" in that mode)
  std::string role;
  std::string peer;      ///< "address:port"
  std::string action;    ///< submit, cancel, node, demand, token, register, show, logs, status
  std::string target;    ///< job-N, a server, an identity; "" when none
  std::string result;    ///< "ok", "ok: ...", "refused: ..."
};

/// One line of audit.jsonl: {"time": UTC ISO 8601 with ms, then the entry's fields}; JSON
/// escapes every control character, so a line is always one line.
std::string audit_line(const audit_entry& e, int64_t unix_ms);

class audit_log {
 public:
  /// Appends to `path` (created 0600). `trouble` hears a failed write, once per failure run
  /// (the scheduler goes on: an audit failure is logged, not fatal).
  audit_log(std::string path, std::function<void(const std::string&)> trouble);
  ~audit_log();
  audit_log(const audit_log&) = delete;
  audit_log& operator=(const audit_log&) = delete;

  /// Appends `e`; returns its line (as journaled with `serve --state`).
  std::string record(const audit_entry& e);
  const std::string& path() const { return path_; }
  uint64_t failures() const;

 private:
  std::string path_;
  std::function<void(const std::string&)> trouble_;
  mutable std::mutex m_;
  int fd_ = -1;
  uint64_t failures_ = 0;
  bool failing_ = false;
};

} // namespace aryl::live
