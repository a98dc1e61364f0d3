#pragma once
/// What the state journal's sources share (state_journal.cpp: the file; _load.cpp: its reads;
/// _writes.cpp: its writes; _json.cpp: the JSON forms in which it keeps specs and records):
/// SQLite helpers and those forms. Internal to the journal: nothing else includes it.
#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "actors/state_records.hpp"

namespace aryl::live::journal_detail {

using nlohmann::json;

/// A prepared statement, finalized on every way out.
class statement {
 public:
  statement(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &s_, nullptr) != SQLITE_OK) s_ = nullptr;
  }
  ~statement() { sqlite3_finalize(s_); }
  statement(const statement&) = delete;
  statement& operator=(const statement&) = delete;
  bool ok() const { return s_ != nullptr; }
  sqlite3_stmt* get() const { return s_; }
  void bind(int i, const std::string& v) { sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT); }
  void bind(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); }
  void bind(int i, double v) { sqlite3_bind_double(s_, i, v); }
  /// SQLITE_ROW, SQLITE_DONE or an error code.
  int step() { return sqlite3_step(s_); }
  std::string text(int i) const {
    auto* p = sqlite3_column_text(s_, i);
    return p ? std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(s_, i))) : "";
  }
  int64_t integer(int i) const { return sqlite3_column_int64(s_, i); }
  double real(int i) const { return sqlite3_column_double(s_, i); }
  void reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
};

/// One transaction: committed when `f` returns, rolled back if it throws.
template <class F>
void in_transaction(sqlite3* db, F&& f, const std::function<void(const std::string&)>& fail) {
  if (sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) != SQLITE_OK) fail(sqlite3_errmsg(db));
  try {
    f();
  } catch (...) {
    sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  if (sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) {
    std::string why = sqlite3_errmsg(db);
    sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    fail(why);
  }
}

/// Ended jobs' final records, folded from `jobs` (state_journal::compact): `count` of them
/// per row, as a JSON array of compact records, at most ended_records_per_row.
inline constexpr const char* create_ended =
    "CREATE TABLE ended (chunk INTEGER PRIMARY KEY, count INTEGER NOT NULL, records TEXT NOT NULL)";

/// A whole number of type T from `v`, or std::range_error naming `what`: nlohmann's get<T>
/// would narrow a value out of T's range silently, truncate a fraction, and convert a double
/// beyond T with undefined behaviour.
template <class T>
T whole(const json& v, const std::string& what) {
  using limits = std::numeric_limits<T>;
  if (v.is_number_unsigned()) {
    auto u = v.get<uint64_t>();
    if (u <= static_cast<uint64_t>(limits::max())) return static_cast<T>(u);
  } else if (v.is_number_integer()) {
    auto i = v.get<int64_t>();
    if (i >= 0 ? static_cast<uint64_t>(i) <= static_cast<uint64_t>(limits::max())
               : limits::is_signed && i >= static_cast<int64_t>(limits::min()))
      return static_cast<T>(i);
  } else if (!v.is_number()) {
    throw std::range_error(fmt::format("'{}' is not a number", what));
  }
  throw std::range_error(fmt::format("'{}' {} is not a whole number in {}..{}", what, v.dump(), limits::min(), limits::max()));
}

template <class T>
T whole_at(const json& j, const char* key) {
  return whole<T>(j.at(key), key);
}

/// The journal's JSON of a spec (a row's `spec`), and back; a spec from before a field
/// gets the field's default.
json to_json(const job_spec& s);
job_spec spec_from(const json& j);
/// The journal's JSON of a final record (a row's `record`), and back; whole numbers are
/// range-checked (whole<T>), a field from after the row was written gets its default.
json to_json(const job_record& r);
job_record record_from(const json& j);
/// An ended job in the compact store: its final record's fields in record_fields' order,
/// without their names (a folded job costs a third of its row in `jobs`), then, for an array
/// task or a keyed submit, an object of its spec's array fields (a restart keeps the task in
/// its array) and its key and user (a repeat of the submit is still matched).
json compact_json(const job_record& r, const job_spec& s);
/// A folded job as load() returns it: ended, with what a restart reads of its spec.
saved_job ended_from_compact(const json& a);

} // namespace aryl::live::journal_detail
