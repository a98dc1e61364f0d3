#include "runtime/live/history_reader.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sqlite3.h>
#include <sys/stat.h>

#include <cmath>
#include <functional>

#include "runtime/live/history_table.hpp"
#include "solvers/input_error.hpp"

namespace aryl::live {
namespace {

/// The connection, closed on every way out; errors name the file.
struct reader {
  std::string path;
  sqlite3* db = nullptr;
  bool owned = true;  ///< false: serve's journal connection, closed by the journal
  ~reader() {
    if (owned) sqlite3_close(db);
  }

  [[noreturn]] void fail(const std::string& what) const {
    auto code = db ? sqlite3_errcode(db) : SQLITE_OK;
    if (code == SQLITE_BUSY || code == SQLITE_LOCKED)
      throw input_error(fmt::format("{}: held by a running `aryl serve` (serve holds its state file while it runs): "
                                    "ask serve instead: run `aryl history` without --state, with --port (or ARYL_ADDR) "
                                    "and the token as for `aryl status`",
                                    path));
    if (code == SQLITE_NOTADB)
      throw input_error(fmt::format("{}: not an aryl state file or simulation database ({})", path, what));
    throw input_error(fmt::format("{}: {}", path, what));
  }

  /// Runs `sql` with `bind` applied, calling `row` for each result row.
  void query(const std::string& sql, const std::function<void(sqlite3_stmt*)>& bind,
             const std::function<void(sqlite3_stmt*)>& row) const {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) fail(sqlite3_errmsg(db));
    struct finalize {
      sqlite3_stmt* s;
      ~finalize() { sqlite3_finalize(s); }
    } guard{s};
    if (bind) bind(s);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) row(s);
    if (rc != SQLITE_DONE) fail(sqlite3_errmsg(db));
  }
};

std::string text(sqlite3_stmt* s, int i) {
  auto* p = sqlite3_column_text(s, i);
  return p ? std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(s, i))) : "";
}

/// The run's clock: simulated µs = (unix µs - start) x speedup (a simulation: from 1970, 1).
struct run_clock {
  int64_t start_unix_us = 0;
  double speedup = 1;
  int64_t to_sim(int64_t unix_us) const {
    return static_cast<int64_t>(std::floor(static_cast<double>(unix_us - start_unix_us) * speedup));
  }
  int64_t to_unix(int64_t sim_us) const {
    return start_unix_us + static_cast<int64_t>(std::llround(static_cast<double>(sim_us) / speedup));
  }
};

void open(reader& r) {
  struct stat st {};
  if (::stat(r.path.c_str(), &st) != 0) r.fail("no such file (give serve's --state file or simulate's --db file)");
  if (!S_ISREG(st.st_mode)) r.fail("not a regular file (give serve's --state file or simulate's --db file)");
  // Read-write, never created, so that a WAL a killed serve left is read; read-only where the
  // file is not ours to write. Nothing is written either way (query_only).
  if (sqlite3_open_v2(r.path.c_str(), &r.db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    sqlite3_close(r.db);
    r.db = nullptr;
    if (sqlite3_open_v2(r.path.c_str(), &r.db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK)
      r.fail(fmt::format("cannot open: {}", r.db ? sqlite3_errmsg(r.db) : "out of memory"));
  }
  sqlite3_exec(r.db, "PRAGMA query_only = 1", nullptr, nullptr, nullptr);
  std::string format;
  bool has_meta = false, has_history = false;
  // The first read of the file's bytes: "file is not a database" here, or busy while a serve holds it.
  r.query("SELECT name FROM sqlite_master WHERE type = 'table'", nullptr, [&](sqlite3_stmt* s) {
    auto name = text(s, 0);
    has_meta = has_meta || name == "meta";
    has_history = has_history || name == "history";
  });
  if (has_meta)
    r.query("SELECT value FROM meta WHERE key = 'format'", nullptr, [&](sqlite3_stmt* s) { format = text(s, 0); });
  if (format != "aryl-state")
    r.fail("not an aryl state file or simulation database (give serve's --state file or simulate's --db file)");
  if (!has_history)
    r.fail("a state file from before history was kept: open it once with this aryl's serve (--state) to add it");
}

run_clock clock_of(const reader& r) {
  run_clock c;
  r.query("SELECT value FROM meta WHERE key = 'run'", nullptr, [&](sqlite3_stmt* s) {
    try {
      auto j = nlohmann::json::parse(text(s, 0));
      c.start_unix_us = j.at("start_unix_us").get<int64_t>();
      c.speedup = j.at("speedup").get<double>();
    } catch (const std::exception& e) {
      r.fail(fmt::format("unreadable run record: {}", e.what()));
    }
  });
  if (!(c.speedup > 0) || !std::isfinite(c.speedup)) r.fail(fmt::format("the run's speedup {} is not > 0", c.speedup));
  return c;
}

/// " AND col IN (?, ?)" with the values to bind appended to `binds`.
std::string in_list(const char* col, const std::set<std::string>& values, std::vector<std::string>& binds) {
  if (values.empty()) return {};
  std::string sql = fmt::format(" AND {} IN (", col);
  for (auto& v : values) {
    sql += sql.back() == '(' ? "?" : ", ?";
    binds.push_back(v);
  }
  return sql + ")";
}



/// The rows of `f` with ids above `after` (none: from the first), at most `limit` (0: all), from an open file.
std::vector<history_row> select_history(const reader& r, const history_filter& f, std::optional<uint32_t> after,
                                       size_t limit) {
  auto clock = clock_of(r);
  std::vector<std::string> binds;
  std::string sql = "SELECT id, name, user, tenant, state, outcome, submit_us, start_us, end_us, queued_s, gpus, "
                    "exits, attempts FROM history WHERE 1";
  sql += in_list("user", f.users, binds);
  sql += in_list("tenant", f.tenants, binds);
  // queued and running are states; the outcome column is '' until a job ends.
  std::set<std::string> outcomes, states;
  for (auto& o : f.outcomes) (o == "queued" || o == "running" ? states : outcomes).insert(o);
  if (!outcomes.empty() && !states.empty()) {
    std::vector<std::string> a, b;
    auto x = in_list("outcome", outcomes, a), y = in_list("state", states, b);
    sql += fmt::format(" AND ({} OR {})", x.substr(5), y.substr(5));
    binds.insert(binds.end(), a.begin(), a.end());
    binds.insert(binds.end(), b.begin(), b.end());
  } else {
    sql += in_list("outcome", outcomes, binds);
    sql += in_list("state", states, binds);
    // Jobs not ended, through the end-time index rather than every row's state.
    if (!states.empty()) sql += fmt::format(" AND end_us = {}", history_open_end);
  }
  if (f.since_us) sql += " AND end_us >= ?";
  if (f.until_us) sql += " AND submit_us <= ?";
  if (after) sql += fmt::format(" AND id > {}", *after);
  sql += " ORDER BY id";
  if (limit > 0) sql += fmt::format(" LIMIT {}", limit);
  std::vector<history_row> out;
  r.query(
      sql,
      [&](sqlite3_stmt* s) {
        int i = 1;
        for (auto& v : binds) sqlite3_bind_text(s, i++, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
        if (f.since_us) sqlite3_bind_int64(s, i++, clock.to_sim(*f.since_us));
        if (f.until_us) sqlite3_bind_int64(s, i++, clock.to_sim(*f.until_us));
      },
      [&](sqlite3_stmt* s) {
        history_row h;
        h.id = static_cast<uint32_t>(sqlite3_column_int64(s, 0));
        h.name = text(s, 1);
        h.user = text(s, 2);
        h.tenant = text(s, 3);
        h.state = text(s, 4);
        h.outcome = text(s, 5);
        h.submit_us = clock.to_unix(sqlite3_column_int64(s, 6));
        if (sqlite3_column_type(s, 7) != SQLITE_NULL) h.start_us = clock.to_unix(sqlite3_column_int64(s, 7));
        if (auto end = sqlite3_column_int64(s, 8); end != history_open_end) h.end_us = clock.to_unix(end);
        h.wait_s = sqlite3_column_double(s, 9) / clock.speedup;
        h.gpus = static_cast<int>(sqlite3_column_int64(s, 10));
        h.exits = text(s, 11);
        h.attempts = static_cast<int>(sqlite3_column_int64(s, 12));
        out.push_back(std::move(h));
      });
  return out;
}

} // namespace

std::vector<history_row> read_history(const std::string& path, const history_filter& f) {
  reader r{path};
  open(r);
  return select_history(r, f, std::nullopt, 0);
}

std::vector<history_row> query_history(sqlite3* db, const std::string& path, const history_filter& f,
                                       std::optional<uint32_t> after, size_t limit) {
  reader r{path, db, false};
  return select_history(r, f, after, limit);
}

} // namespace aryl::live
