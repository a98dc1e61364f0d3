#include "runtime/live/history_table.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <stdexcept>

namespace aryl::live {
namespace {

void exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string why = err ? err : sqlite3_errmsg(db);
    sqlite3_free(err);
    throw std::runtime_error(why);
  }
}

} // namespace

bool ensure_history_table(sqlite3* db) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'history'", -1, &s,
                         nullptr) != SQLITE_OK)
    throw std::runtime_error(sqlite3_errmsg(db));
  bool missing = sqlite3_step(s) == SQLITE_ROW && sqlite3_column_int64(s, 0) == 0;
  sqlite3_finalize(s);
  // state: queued | running | ended; outcome: a job_outcome's name once ended, else ''.
  exec(db, "CREATE TABLE IF NOT EXISTS history (id INTEGER PRIMARY KEY, name TEXT NOT NULL, user TEXT NOT NULL, "
           "tenant TEXT NOT NULL, state TEXT NOT NULL, outcome TEXT NOT NULL, submit_us INTEGER NOT NULL, "
           "start_us INTEGER, end_us INTEGER NOT NULL, queued_s REAL NOT NULL, gpus INTEGER NOT NULL, "
           "workers INTEGER NOT NULL, exits TEXT NOT NULL, attempts INTEGER NOT NULL)");
  // Each filter leads an index with the end time after it, so that a filter with --since is
  // one range of one index; the submit time after that lets --until be checked in the index,
  // without reading the rows of the jobs it leaves out (a window in the middle of a long
  // history: 1 s instead of 50 ms on a million jobs).
  exec(db, "CREATE INDEX IF NOT EXISTS history_end ON history (end_us, submit_us)");
  exec(db, "CREATE INDEX IF NOT EXISTS history_submit ON history (submit_us)");
  exec(db, "CREATE INDEX IF NOT EXISTS history_user ON history (user, end_us, submit_us)");
  exec(db, "CREATE INDEX IF NOT EXISTS history_tenant ON history (tenant, end_us, submit_us)");
  exec(db, "CREATE INDEX IF NOT EXISTS history_outcome ON history (outcome, end_us, submit_us)");
  return missing;
}

bool ever_started(const saved_job& j) {
  auto& r = j.record;
  if (j.status == saved_status::queued || r.first_start_us < 0) return false;
  return r.attempts.empty() ||
         std::any_of(r.attempts.begin(), r.attempts.end(), [](const attempt_record& a) { return a.start_us >= 0; });
}

history_writer::history_writer(sqlite3* db) : db_(db) {
  if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO history VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
                             "?12, ?13, ?14)",
                         -1, &s_, nullptr) != SQLITE_OK)
    throw std::runtime_error(sqlite3_errmsg(db));
}

history_writer::~history_writer() { sqlite3_finalize(s_); }

void history_writer::put(const saved_job& j) {
  auto& r = j.record;
  const bool ended = j.status == saved_status::ended;
  auto text = [&](int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  };
  sqlite3_bind_int64(s_, 1, j.spec.index);
  text(2, j.spec.name);
  text(3, j.spec.user);
  text(4, j.spec.tenant);
  text(5, std::string(to_string(j.status)));
  text(6, ended ? std::string(to_string(r.outcome)) : std::string());
  sqlite3_bind_int64(s_, 7, j.spec.submit.us);
  if (ever_started(j)) sqlite3_bind_int64(s_, 8, r.first_start_us);
  else sqlite3_bind_null(s_, 8);
  sqlite3_bind_int64(s_, 9, ended ? r.end_us : history_open_end);
  sqlite3_bind_double(s_, 10, r.queued_s);
  sqlite3_bind_int64(s_, 11, j.spec.gpus);
  sqlite3_bind_int64(s_, 12, ended ? r.last_workers : j.workers);
  // sacct's ExitCode: how the last attempt's workers ended (live mode; none when simulated).
  text(13, r.attempts.empty() ? std::string() : r.attempts.back().exits);
  sqlite3_bind_int64(s_, 14, static_cast<int64_t>(r.attempts.size()));
  int rc = sqlite3_step(s_);
  sqlite3_reset(s_);
  sqlite3_clear_bindings(s_);
  if (rc != SQLITE_DONE) throw std::runtime_error(sqlite3_errmsg(db_));
}

} // namespace aryl::live
