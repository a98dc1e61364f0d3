#pragma once
/// The `history` table of a state file (`aryl serve --state`, `aryl simulate --db`): a row per
/// job the scheduler ever saw, written with every change of the job and left alone by
/// compaction, indexed for `aryl history`'s filters (end time, user, tenant, outcome). The
/// compact store of ended jobs keeps what a restart needs, not who submitted a job: history
/// reads this table instead. Times are the run's simulated µs (`aryl history` maps them to
/// the wall clock through the run's start and speedup).
#include <string>

#include "actors/state_records.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace aryl::live {

/// A row's end time while the job has not ended: above every end, so that `--since` (end at
/// or after) keeps queued and running jobs through the same index range.
inline constexpr int64_t history_open_end = INT64_MAX;

/// Creates the table and its indexes where missing; true if the table was missing. Throws
/// std::runtime_error with SQLite's message.
bool ensure_history_table(sqlite3* db);

/// Writes rows through one prepared statement (a batch of a million is one statement, not a
/// million). Inside a transaction of the caller's.
class history_writer {
 public:
  explicit history_writer(sqlite3* db);
  ~history_writer();
  history_writer(const history_writer&) = delete;
  history_writer& operator=(const history_writer&) = delete;
  /// The job's row as it is now (insert or replace by id). Throws std::runtime_error.
  void put(const saved_job& j);

 private:
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
};

/// Whether a job's record says it ever had workers: its first start is set, and an ended job
/// with attempts had one that started (one cancelled while queued never did).
bool ever_started(const saved_job& j);

} // namespace aryl::live
