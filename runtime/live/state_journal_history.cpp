// state_journal's members for the history table (history_table.hpp): beside the journal's
// other writes, in a file of their own.
#include <sqlite3.h>

#include <stdexcept>

#include "runtime/live/history_reader.hpp"
#include "runtime/live/history_table.hpp"
#include "runtime/live/state_journal.hpp"
#include "solvers/input_error.hpp"

namespace aryl::live {

template <class F>
void state_journal::history_transaction(F&& f) {
  exec("BEGIN IMMEDIATE");
  try {
    f();
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  try {
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

void state_journal::history_table() {
  // One transaction: a file whose old jobs cannot be read gains no empty table that would
  // stay empty once they can.
  history_transaction([&] {
    try {
      if (!ensure_history_table(db_)) return;
      // A file from before the table: its jobs so far, those of the compact store without
      // their users (it never kept them).
      history_writer w(db_);
      for (auto& j : load().jobs) w.put(j);
    } catch (const input_error&) {
      throw;
    } catch (const std::runtime_error& e) {
      fail(e.what());
    }
  });
}

void state_journal::put_history(const std::vector<saved_job>& jobs) {
  history_transaction([&] {
    try {
      history_writer w(db_);
      for (auto& j : jobs) w.put(j);
    } catch (const input_error&) {
      throw;
    } catch (const std::runtime_error& e) {
      fail(e.what());
    }
  });
}

std::vector<history_row> state_journal::history_page(const history_filter& f, std::optional<uint32_t> after,
                                                     size_t limit) const {
  return query_history(db_, path_, f, after, limit);
}

void state_journal::mark_simulated() { put_meta("simulated", "1"); }

bool state_journal::simulated() const {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_, "SELECT count(*) FROM meta WHERE key = 'simulated'", -1, &s, nullptr) != SQLITE_OK)
    fail(sqlite3_errmsg(db_));
  bool yes = sqlite3_step(s) == SQLITE_ROW && sqlite3_column_int64(s, 0) > 0;
  sqlite3_finalize(s);
  return yes;
}

} // namespace aryl::live
