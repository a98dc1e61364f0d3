// The journal's file: opened (created, or upgraded from version 1), checked, and its write
// troubles. Its reads are in state_journal_load.cpp, its writes in state_journal_writes.cpp.
#include "runtime/live/state_journal.hpp"

#include <fmt/format.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <mutex>

#include "solvers/input_error.hpp"
#include "runtime/live/state_journal_parts.hpp"

namespace aryl::live {

using namespace journal_detail;

state_journal::state_journal(std::string path) : path_(std::move(path)) {
  // SQLite would open a device or a FIFO as well, and write its journal beside it
  // (/dev/null-journal), or wait for ever on a FIFO's first read.
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw input_error(fmt::format("{}: the state file is not a regular file (a {}); give a file's path, "
                                  "which is created if missing",
                                  path_, S_ISDIR(st.st_mode) ? "directory" : S_ISFIFO(st.st_mode) ? "FIFO"
                                         : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)              ? "device"
                                                                                                   : "socket or other"));
  if (sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw input_error(fmt::format("{}: cannot open the state file: {}", path_, why));
  }
  sqlite3_busy_timeout(db_, 1000);
  try {
    // Held until this journal closes (the OS drops it with a killed process): a second serve
    // on the same file is refused instead of scheduling the same jobs twice. Set before the
    // first access, so that WAL keeps its index in memory rather than in a shared file.
    exec("PRAGMA locking_mode = EXCLUSIVE");
    // Reading the schema is the first access to the file's bytes: a file that is not a
    // database fails here ("file is not a database").
    statement tables(db_, "SELECT name FROM sqlite_master WHERE type = 'table'");
    if (!tables.ok()) fail(sqlite3_errmsg(db_));
    int rc;
    std::vector<std::string> names;
    while ((rc = tables.step()) == SQLITE_ROW) names.push_back(tables.text(0));
    if (rc != SQLITE_DONE) fail(sqlite3_errmsg(db_));
    bool has_meta = std::find(names.begin(), names.end(), "meta") != names.end();
    if (!names.empty() && !has_meta) fail("a database, but not an aryl state file (no meta table)");
    exec("PRAGMA journal_mode = WAL");
    // A process killed with -9 loses nothing committed in WAL mode at this level; only a
    // machine crash could lose the last transactions, which the restart then redoes.
    exec("PRAGMA synchronous = NORMAL");
    // The audit log's lines (docs/security.md); a file of this version from before it gains it.
    constexpr const char* create_audit = "CREATE TABLE IF NOT EXISTS audit (seq INTEGER PRIMARY KEY, line TEXT NOT NULL)";
    if (!has_meta) {
      exec(create_audit);
      exec("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
      exec("CREATE TABLE jobs (idx INTEGER PRIMARY KEY, status TEXT NOT NULL, generation INTEGER NOT NULL, "
           "workers INTEGER NOT NULL, alloc TEXT NOT NULL, retries INTEGER NOT NULL, work_done REAL NOT NULL, "
           "spec TEXT NOT NULL, record TEXT NOT NULL)");
      exec("CREATE TABLE servers (name TEXT PRIMARY KEY, mode TEXT NOT NULL)");
      exec(create_ended);
      exec(fmt::format("INSERT INTO meta VALUES ('format', 'aryl-state'), ('version', '{}')", state_format_version)
               .c_str());
      exec("INSERT INTO meta VALUES ('opened', '0')");
      history_table();
      return;
    }
    statement meta(db_, "SELECT key, value FROM meta WHERE key IN ('format', 'version')");
    if (!meta.ok()) fail(sqlite3_errmsg(db_));
    std::string format, version;
    while ((rc = meta.step()) == SQLITE_ROW) (meta.text(0) == "format" ? format : version) = meta.text(1);
    if (rc != SQLITE_DONE) fail(sqlite3_errmsg(db_));
    if (format != "aryl-state") fail("not an aryl state file (its meta table has no format 'aryl-state')");
    if (version == "1") {
      // Version 1 had no compact store of ended jobs; its rows are all in `jobs`.
      exec(create_ended);
      exec(fmt::format("UPDATE meta SET value = '{}' WHERE key = 'version'", state_format_version).c_str());
      version = std::to_string(state_format_version);
    }
    if (version != std::to_string(state_format_version))
      fail(fmt::format("state format version '{}', this aryl reads version {}", version, state_format_version));
    exec(create_audit);
    history_table();
    // A write takes the exclusive lock now, not at the run's first change.
    exec("INSERT INTO meta VALUES ('opened', '1') ON CONFLICT(key) DO UPDATE SET value = value + 1");
  } catch (...) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

state_journal::~state_journal() { sqlite3_close(db_); }

void state_journal::fail(const std::string& what) const {
  if (db_ && sqlite3_errcode(db_) == SQLITE_BUSY)
    throw input_error(fmt::format("{}: in use by another process (is a serve still running on it?): {}", path_, what));
  throw input_error(fmt::format("{}: {}", path_, what));
}

void state_journal::exec(const char* sql) const {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string why = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    fail(why);
  }
}

bool state_journal::fresh() const {
  statement s(db_, "SELECT count(*) FROM meta WHERE key = 'run'");
  if (!s.ok() || s.step() != SQLITE_ROW) fail(sqlite3_errmsg(db_));
  return s.integer(0) == 0;
}

size_t state_journal::rows() const {
  statement s(db_, "SELECT (SELECT count(*) FROM jobs) + (SELECT count(*) FROM ended) + (SELECT count(*) FROM servers) "
                   "+ (SELECT count(*) FROM meta)");
  if (!s.ok() || s.step() != SQLITE_ROW) fail(sqlite3_errmsg(db_));
  return static_cast<size_t>(s.integer(0));
}

std::string cluster_mismatch(const std::vector<std::string>& saved, const std::vector<std::string>& now) {
  for (size_t i = 0; i < saved.size() && i < now.size(); ++i)
    if (saved[i] != now[i])
      return fmt::format("machine {} is '{}' in the file, '{}' in this config", i, saved[i], now[i]);
  if (saved.size() != now.size())
    return fmt::format("the file has {} machines, this config {}", saved.size(), now.size());
  return {};
}

void state_journal::trouble(const std::string& what) {
  uint64_t failures;
  {
    std::lock_guard lock(trouble_m_);
    trouble_ = what;
    failures = ++write_failures_;
  }
  if (log_ && failures % 30 == 1)
    *log_ << fmt::format("[serve] state {}: cannot write ({}): running jobs go on, submits are refused, the "
                         "changes are kept and written once it can be; retrying ({} failed writes so far)\n",
                         path_, what, failures)
          << std::flush;
}

void state_journal::recovered() {
  {
    std::lock_guard lock(trouble_m_);
    trouble_.clear();
  }
  if (log_) *log_ << fmt::format("[serve] state {}: written again: every change kept meanwhile is journaled\n", path_)
                  << std::flush;
}

std::string state_journal::current_trouble() const {
  std::lock_guard lock(trouble_m_);
  return trouble_;
}

uint64_t state_journal::write_failures() const {
  std::lock_guard lock(trouble_m_);
  return write_failures_;
}

} // namespace aryl::live
