#include "runtime/live/state_journal.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <stdexcept>
#include <type_traits>
#include <variant>

#include "solvers/input_error.hpp"
#include "runtime/live/history_table.hpp"
#include "runtime/live/job_record_fields.hpp"

namespace aryl::live {
namespace {

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

json to_json(const job_spec& s) {
  return {{"index", s.index},         {"name", s.name},
          {"submit_us", s.submit.us}, {"gpus", s.gpus},
          {"duration_s", s.duration_s}, {"gpu_type", s.gpu_type},
          {"elastic", s.elastic},     {"min_workers", s.min_workers},
          {"max_workers", s.max_workers}, {"predict_factor", s.predict_factor},
          {"user", s.user},           {"command", s.command},
          {"tenant", s.tenant},       {"estimated", s.estimated},
          {"estimate_s", s.estimate_s}, {"predicted", s.predicted},
          {"priority", s.priority},   {"time_limit_s", s.time_limit_s},
          {"max_retries", s.max_retries}, {"held", s.held},
          {"after", s.after},         {"array_job", s.array_job},
          {"array_task", s.array_task}, {"array_count", s.array_count},
          {"array_limit", s.array_limit}};
}

job_spec spec_from(const json& j) {
  job_spec s;
  s.index = whole_at<uint32_t>(j, "index");
  s.name = j.at("name").get<std::string>();
  s.submit = sim_time::from_us(whole_at<int64_t>(j, "submit_us"));
  s.gpus = whole_at<int>(j, "gpus");
  s.duration_s = j.at("duration_s").get<double>();
  s.gpu_type = j.at("gpu_type").get<std::string>();
  s.elastic = j.at("elastic").get<bool>();
  s.min_workers = whole_at<int>(j, "min_workers");
  s.max_workers = whole_at<int>(j, "max_workers");
  s.predict_factor = j.at("predict_factor").get<double>();
  s.user = j.at("user").get<std::string>();
  s.command = j.at("command").get<std::vector<std::string>>();
  // Journals written before tenants and estimates have neither: no tenant, an estimate.
  if (j.contains("tenant")) s.tenant = j.at("tenant").get<std::string>();
  if (j.contains("estimated")) s.estimated = j.at("estimated").get<bool>();
  if (j.contains("estimate_s")) s.estimate_s = j.at("estimate_s").get<double>();
  s.predicted = j.value("predicted", true);  // absent in files from before the flag
  if (j.contains("priority")) s.priority = whole_at<int>(j, "priority");  // absent before classes
  // Absent before time limits: none, and the config's retries.
  if (j.contains("time_limit_s")) s.time_limit_s = j.at("time_limit_s").get<double>();
  if (j.contains("max_retries")) s.max_retries = whole_at<int>(j, "max_retries");
  // Absent before holds, dependencies and arrays: none.
  s.held = j.value("held", false);
  if (j.contains("after")) s.after = j.at("after").get<std::string>();
  if (j.contains("array_job")) s.array_job = whole_at<int64_t>(j, "array_job");
  if (j.contains("array_task")) s.array_task = whole_at<uint32_t>(j, "array_task");
  if (j.contains("array_count")) s.array_count = whole_at<uint32_t>(j, "array_count");
  if (j.contains("array_limit")) s.array_limit = whole_at<uint32_t>(j, "array_limit");
  return s;
}

/// A record's field as the journal writes it: an outcome by its name, an attempt as an object.
template <class T>
json field_json(const T& v) {
  return v;
}

json field_json(job_outcome o) { return std::string(to_string(o)); }

json field_json(const std::vector<attempt_record>& attempts) {
  json a = json::array();
  for (auto& x : attempts)
    a.push_back({{"start_us", x.start_us}, {"end_us", x.end_us}, {"outcome", to_string(x.outcome)},
                 {"exits", x.exits}, {"why", x.why}});
  return a;
}

job_outcome outcome_from(const json& v, const std::string& what) {
  auto o = outcome_named(v.get<std::string>());
  if (!o) throw std::range_error(fmt::format("'{}' {} is not an outcome (done, failed, timeout, cancelled, node_lost)",
                                             what, v.dump()));
  return *o;
}

/// Field `f` of `r` read from `v`: whole numbers through whole<T>, naming `what`.
void read_field(job_record& r, const record_field& f, const json& v, const std::string& what) {
  std::visit(
      [&](auto member) {
        using T = std::remove_reference_t<decltype(r.*member)>;
        if constexpr (std::is_same_v<T, job_outcome>) {
          r.*member = outcome_from(v, what);
        } else if constexpr (std::is_same_v<T, std::vector<attempt_record>>) {
          if (!v.is_array()) throw std::range_error(fmt::format("'{}' is not a list", what));
          for (auto& x : v)
            (r.*member).push_back({whole_at<int64_t>(x, "start_us"), whole_at<int64_t>(x, "end_us"),
                                   outcome_from(x.at("outcome"), what + ".outcome"), x.at("exits").get<std::string>(),
                                   x.at("why").get<std::string>()});
        } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          r.*member = whole<T>(v, what);
        } else {
          r.*member = v.get<T>();
        }
      },
      f.member);
}

json to_json(const job_record& r) {
  json j = json::object();
  for (auto& f : record_fields) std::visit([&](auto member) { j[f.key] = field_json(r.*member); }, f.member);
  return j;
}

job_record record_from(const json& j) {
  job_record r;
  for (size_t i = 0; i < std::size(record_fields); ++i) {
    auto& f = record_fields[i];
    // The later fields: absent in journals written before them (job_record's defaults).
    if (i >= record_fields_always && !j.contains(f.key)) continue;
    read_field(r, f, j.at(f.key), f.key);
  }
  return r;
}

/// An ended job's final record in the compact store: its fields in record_fields' order,
/// without their names (a folded job costs a third of its row in `jobs`).
json compact_json(const job_record& r) {
  json a = json::array();
  for (auto& f : record_fields) std::visit([&](auto member) { a.push_back(field_json(r.*member)); }, f.member);
  return a;
}

job_record record_from_compact(const json& a) {
  // 19 fields before the work-efficiency ones (read as 0), 26 since, 27 with `predicted`, 29
  // with `estimated` and `tenant`, 30 with `attempts`.
  if (!a.is_array() || (a.size() != 19 && a.size() != 26 && a.size() != 27 && a.size() != 29 && a.size() != 30))
    throw std::runtime_error("an ended job's record is not an array of 19, 26, 27, 29 or 30 fields");
  job_record r;
  for (size_t i = 0; i < a.size(); ++i) read_field(r, record_fields[i], a[i], fmt::format("field {}", i));
  return r;
}

/// A folded job as load() returns it: ended, with what a restart reads of its spec.
saved_job ended_job(job_record r) {
  saved_job j;
  j.spec.index = r.index;
  j.spec.name = r.name;
  j.spec.gpus = r.gpus;
  j.spec.elastic = r.elastic;
  j.spec.submit = sim_time::from_us(r.submit_us);
  j.spec.duration_s = r.duration_s;
  j.spec.tenant = r.tenant;
  j.spec.estimated = r.estimated;
  j.status = "ended";
  j.workers = r.last_workers;
  j.record = std::move(r);
  return j;
}

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
constexpr const char* create_ended =
    "CREATE TABLE ended (chunk INTEGER PRIMARY KEY, count INTEGER NOT NULL, records TEXT NOT NULL)";

} // namespace

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

saved_state state_journal::load() const {
  saved_state out;
  {
    statement s(db_, "SELECT value FROM meta WHERE key = 'run'");
    if (!s.ok()) fail(sqlite3_errmsg(db_));
    if (s.step() == SQLITE_ROW) {
      try {
        auto j = json::parse(s.text(0));
        auto& r = out.run;
        r.cluster = j.at("cluster").get<std::vector<std::string>>();
        r.trace_jobs = whole_at<uint32_t>(j, "trace_jobs");
        r.speedup = j.at("speedup").get<double>();
        r.start_unix_us = whole_at<int64_t>(j, "start_unix_us");
        r.scheduler_restarts = whole_at<uint32_t>(j, "scheduler_restarts");
        r.restarted_jobs = whole_at<uint64_t>(j, "restarted_jobs");
        r.adopted_jobs = whole_at<uint64_t>(j, "adopted_jobs");
      } catch (const input_error&) {
        throw;
      } catch (const std::exception& e) {
        fail(fmt::format("unreadable run record: {}", e.what()));
      }
    }
  }
  {
    statement s(db_, "SELECT value FROM meta WHERE key = 'next_index'");
    if (!s.ok()) fail(sqlite3_errmsg(db_));
    if (s.step() == SQLITE_ROW) {
      auto next = s.integer(0);
      if (sqlite3_column_type(s.get(), 0) != SQLITE_INTEGER && s.text(0) != std::to_string(next))
        fail(fmt::format("next_index '{}' is not an integer", s.text(0)));
      if (next < 0 || next > UINT32_MAX) fail(fmt::format("next_index {} is not in 0..{}", next, UINT32_MAX));
      out.run.next_index = static_cast<uint32_t>(next);
    }
  }
  {
    statement s(db_, "SELECT value FROM meta WHERE key = 'measures'");
    if (!s.ok()) fail(sqlite3_errmsg(db_));
    if (s.step() == SQLITE_ROW) {
      // A restored record is an input like any other: every value checked as it enters.
      try {
        auto j = json::parse(s.text(0));
        auto& m = out.measures;
        auto finite = [&](double v, const char* what) {
          if (!std::isfinite(v) || v < 0) fail(fmt::format("measures: {} {} is not a finite time >= 0", what, v));
          return v;
        };
        m.lost_gpu_s = finite(j.at("lost_gpu_s").get<double>(), "lost_gpu_s");
        for (double v : j.at("recoveries_s").get<std::vector<double>>()) m.recoveries_s.push_back(finite(v, "a recovery"));
        for (double v : j.at("reclaim_latency_s").get<std::vector<double>>())
          m.reclaim_latency_s.push_back(finite(v, "a reclaim latency"));
        m.reclaim_max_late_s = finite(j.at("reclaim_max_late_s").get<double>(), "reclaim_max_late_s");
        m.slo_misses = whole_at<uint64_t>(j, "slo_misses");
      } catch (const input_error&) {
        throw;
      } catch (const std::exception& e) {
        fail(fmt::format("unreadable measures: {}", e.what()));
      }
    }
  }
  {
    statement s(db_, "SELECT value FROM meta WHERE key = 'tenants'");
    if (!s.ok()) fail(sqlite3_errmsg(db_));
    if (s.step() == SQLITE_ROW) {
      // Checked as any input: a usage is finite and >= 0, its time >= 0, a name once.
      try {
        std::set<std::string> seen;
        for (auto& r : json::parse(s.text(0))) {
          saved_tenant t;
          t.name = r.at("name").get<std::string>();
          t.usage_gpu_s = r.at("usage_gpu_s").get<double>();
          t.at_us = whole_at<int64_t>(r, "at_us");
          if (!std::isfinite(t.usage_gpu_s) || t.usage_gpu_s < 0)
            fail(fmt::format("tenants: tenant '{}' usage {} is not a finite number of GPU-seconds >= 0", t.name,
                             t.usage_gpu_s));
          if (t.at_us < 0) fail(fmt::format("tenants: tenant '{}' usage time {} is before the run", t.name, t.at_us));
          if (!seen.insert(t.name).second) fail(fmt::format("tenants: tenant '{}' is listed twice", t.name));
          out.tenants.push_back(std::move(t));
        }
      } catch (const input_error&) {
        throw;
      } catch (const std::exception& e) {
        fail(fmt::format("unreadable tenants: {}", e.what()));
      }
    }
  }
  {
    statement s(db_, "SELECT value FROM meta WHERE key = 'joined'");
    if (!s.ok()) fail(sqlite3_errmsg(db_));
    if (s.step() == SQLITE_ROW) {
      // Names and sizes are checked where the restarted serve takes them (as a registration).
      try {
        for (auto& r : json::parse(s.text(0)))
          out.joined.push_back({r.at("name").get<std::string>(), r.at("gpu_type").get<std::string>(),
                                whole_at<int>(r, "gpus")});
      } catch (const input_error&) {
        throw;
      } catch (const std::exception& e) {
        fail(fmt::format("unreadable joined machines: {}", e.what()));
      }
    }
  }
  statement s(db_, "SELECT idx, status, generation, workers, alloc, retries, work_done, spec, record FROM jobs "
                   "ORDER BY idx");
  if (!s.ok()) fail(sqlite3_errmsg(db_));
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    saved_job j;
    try {
      j.spec = spec_from(json::parse(s.text(7)));
      j.record = record_from(json::parse(s.text(8)));
    } catch (const input_error&) {
      throw;
    } catch (const std::exception& e) {
      fail(fmt::format("job {}: unreadable record: {}", s.integer(0), e.what()));
    }
    j.status = s.text(1);
    if (j.status != "queued" && j.status != "running" && j.status != "ended")
      fail(fmt::format("job {}: unknown status '{}'", s.integer(0), j.status));
    if (j.spec.index != static_cast<uint64_t>(s.integer(0))) fail(fmt::format("job {}: its spec says job {}", s.integer(0), j.spec.index));
    j.generation = static_cast<uint64_t>(s.integer(2));
    // Narrowed only once known to fit (state_checks checks the ranges that matter).
    for (auto [column, name] : {std::pair{3, "workers"}, std::pair{5, "retries"}})
      if (s.integer(column) < INT32_MIN || s.integer(column) > INT32_MAX)
        fail(fmt::format("job {}: {} {} is not an int", s.integer(0), name, s.integer(column)));
    j.workers = static_cast<int>(s.integer(3));
    j.alloc = s.text(4);
    j.retries = static_cast<int>(s.integer(5));
    j.work_done = s.real(6);
    out.jobs.push_back(std::move(j));
  }
  if (rc != SQLITE_DONE) fail(sqlite3_errmsg(db_));
  statement e(db_, "SELECT chunk, records FROM ended ORDER BY chunk");
  if (!e.ok()) fail(sqlite3_errmsg(db_));
  while ((rc = e.step()) == SQLITE_ROW) {
    try {
      for (auto& r : json::parse(e.text(1))) out.jobs.push_back(ended_job(record_from_compact(r)));
    } catch (const std::exception& x) {
      fail(fmt::format("ended jobs (row {}): unreadable records: {}", e.integer(0), x.what()));
    }
  }
  if (rc != SQLITE_DONE) fail(sqlite3_errmsg(db_));
  std::stable_sort(out.jobs.begin(), out.jobs.end(),
                   [](const saved_job& a, const saved_job& b) { return a.spec.index < b.spec.index; });
  statement m(db_, "SELECT name, mode FROM servers ORDER BY name");
  if (!m.ok()) fail(sqlite3_errmsg(db_));
  while ((rc = m.step()) == SQLITE_ROW) out.server_modes.emplace_back(m.text(0), m.text(1));
  if (rc != SQLITE_DONE) fail(sqlite3_errmsg(db_));
  return out;
}

void state_journal::put_run(const saved_run& r) {
  json j{{"cluster", r.cluster},         {"trace_jobs", r.trace_jobs},
         {"speedup", r.speedup},         {"start_unix_us", r.start_unix_us},
         {"scheduler_restarts", r.scheduler_restarts}, {"restarted_jobs", r.restarted_jobs},
         {"adopted_jobs", r.adopted_jobs}};
  put_meta("run", j.dump());
  put_next_index(r.next_index);
}

void state_journal::put_job(const saved_job& j) {
  auto failer = [this](const std::string& w) { fail(w); };
  in_transaction(db_, [&] { write_job(j); }, failer);
}

void state_journal::put_admitted(const saved_job& j, uint32_t next_index) { put_admitted_all({j}, next_index); }

void state_journal::put_admitted_all(const std::vector<saved_job>& rows, uint32_t next_index) {
  auto failer = [this](const std::string& w) { fail(w); };
  // A client is told the job's (or array's) id once this returns: its commit waits for the
  // disk (the WAL synced), so that not even a machine crash loses an acknowledged job. Every
  // other write can be redone by the restart, and does not wait.
  exec("PRAGMA synchronous = FULL");
  struct normal_again {
    sqlite3* db;
    ~normal_again() { sqlite3_exec(db, "PRAGMA synchronous = NORMAL", nullptr, nullptr, nullptr); }
  } guard{db_};
  in_transaction(db_, [&] {
    for (auto& j : rows) write_job(j);
    write_next_index(next_index);
  }, failer);
}

void state_journal::write_job(const saved_job& j) {
  // work_done is the workers' to report (put_progress): an update leaves it as it is.
  statement s(db_,
              "INSERT INTO jobs VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT(idx) DO UPDATE SET "
              "status = excluded.status, generation = excluded.generation, workers = excluded.workers, "
              "alloc = excluded.alloc, retries = excluded.retries, spec = excluded.spec, record = excluded.record");
  if (!s.ok()) fail(sqlite3_errmsg(db_));
  s.bind(1, static_cast<int64_t>(j.spec.index));
  s.bind(2, j.status);
  s.bind(3, static_cast<int64_t>(j.generation));
  s.bind(4, static_cast<int64_t>(j.workers));
  s.bind(5, j.alloc);
  s.bind(6, static_cast<int64_t>(j.retries));
  s.bind(7, j.work_done);
  s.bind(8, to_json(j.spec).dump());
  s.bind(9, to_json(j.record).dump());
  if (s.step() != SQLITE_DONE) fail(sqlite3_errmsg(db_));
  try {
    history_writer(db_).put(j);
  } catch (const std::runtime_error& e) {
    fail(e.what());
  }
}

void state_journal::put_progress(const std::vector<std::pair<uint32_t, double>>& work_done) {
  if (work_done.empty()) return;
  auto failer = [this](const std::string& w) { fail(w); };
  in_transaction(db_, [&] {
    statement s(db_, "UPDATE jobs SET work_done = ?2 WHERE idx = ?1");
    if (!s.ok()) fail(sqlite3_errmsg(db_));
    for (auto& [job, work] : work_done) {
      s.bind(1, static_cast<int64_t>(job));
      s.bind(2, work);
      if (s.step() != SQLITE_DONE) fail(sqlite3_errmsg(db_));
      s.reset();
    }
  }, failer);
}

void state_journal::put_server_mode(const std::string& server, const std::string& mode) {
  auto failer = [this](const std::string& w) { fail(w); };
  in_transaction(db_, [&] {
    // A server back to its default (serving, or a training server resumed) has no row.
    const bool plain = mode == "serving" || mode == "up";
    statement s(db_, plain ? "DELETE FROM servers WHERE name = ?1"
                           : "INSERT INTO servers VALUES (?1, ?2) ON CONFLICT(name) DO UPDATE SET "
                             "mode = excluded.mode");
    if (!s.ok()) fail(sqlite3_errmsg(db_));
    s.bind(1, server);
    if (!plain) s.bind(2, mode);
    if (s.step() != SQLITE_DONE) fail(sqlite3_errmsg(db_));
  }, failer);
}

void state_journal::put_measures(const run_measures& m) {
  json j{{"lost_gpu_s", m.lost_gpu_s}, {"recoveries_s", m.recoveries_s}, {"reclaim_latency_s", m.reclaim_latency_s},
         {"reclaim_max_late_s", m.reclaim_max_late_s}, {"slo_misses", m.slo_misses}};
  put_meta("measures", j.dump());
}

void state_journal::put_tenants(const std::vector<saved_tenant>& t) {
  json rows = json::array();
  for (auto& e : t) rows.push_back({{"name", e.name}, {"usage_gpu_s", e.usage_gpu_s}, {"at_us", e.at_us}});
  put_meta("tenants", rows.dump());
}

void state_journal::put_joined(const saved_machine& m) {
  auto failer = [this](const std::string& w) { fail(w); };
  in_transaction(db_, [&] {
    json all = json::array();
    {
      statement s(db_, "SELECT value FROM meta WHERE key = 'joined'");
      if (!s.ok()) fail(sqlite3_errmsg(db_));
      if (s.step() == SQLITE_ROW) all = json::parse(s.text(0));
    }
    all.push_back({{"name", m.name}, {"gpu_type", m.gpu_type}, {"gpus", m.gpus}});
    statement s(db_, "INSERT INTO meta VALUES ('joined', ?1) ON CONFLICT(key) DO UPDATE SET value = excluded.value");
    if (!s.ok()) fail(sqlite3_errmsg(db_));
    s.bind(1, all.dump());
    if (s.step() != SQLITE_DONE) fail(sqlite3_errmsg(db_));
  }, failer);
}

void state_journal::put_audit(const std::string& line) {
  auto failer = [this](const std::string& w) { fail(w); };
  in_transaction(db_, [&] {
    statement s(db_, "INSERT INTO audit (line) VALUES (?1)");
    if (!s.ok()) fail(sqlite3_errmsg(db_));
    s.bind(1, line);
    if (s.step() != SQLITE_DONE) fail(sqlite3_errmsg(db_));
  }, failer);
}

std::vector<std::string> state_journal::audit_lines() const {
  std::vector<std::string> out;
  statement s(db_, "SELECT line FROM audit ORDER BY seq");
  if (!s.ok()) fail(sqlite3_errmsg(db_));
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) out.push_back(s.text(0));
  if (rc != SQLITE_DONE) fail(sqlite3_errmsg(db_));
  return out;
}

void state_journal::put_meta(const char* key, const std::string& value) {
  auto failer = [this](const std::string& w) { fail(w); };
  in_transaction(db_, [&] {
    statement s(db_, "INSERT INTO meta VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = excluded.value");
    if (!s.ok()) fail(sqlite3_errmsg(db_));
    s.bind(1, std::string(key));
    s.bind(2, value);
    if (s.step() != SQLITE_DONE) fail(sqlite3_errmsg(db_));
  }, failer);
}

void state_journal::put_next_index(uint32_t next) {
  auto failer = [this](const std::string& w) { fail(w); };
  in_transaction(db_, [&] { write_next_index(next); }, failer);
}

void state_journal::write_next_index(uint32_t next) {
  statement s(db_, "INSERT INTO meta VALUES ('next_index', ?1) ON CONFLICT(key) DO UPDATE SET value = "
                   "max(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))");
  if (!s.ok()) fail(sqlite3_errmsg(db_));
  s.bind(1, static_cast<int64_t>(next));
  if (s.step() != SQLITE_DONE) fail(sqlite3_errmsg(db_));
}

size_t state_journal::compact() {
  auto failer = [this](const std::string& w) { fail(w); };
  size_t folded = 0;
  in_transaction(db_, [&] {
    std::vector<json> records;
    {
      statement s(db_, "SELECT idx, record FROM jobs WHERE status = 'ended' ORDER BY idx");
      if (!s.ok()) fail(sqlite3_errmsg(db_));
      int rc;
      while ((rc = s.step()) == SQLITE_ROW) {
        try {
          records.push_back(compact_json(record_from(json::parse(s.text(1)))));
        } catch (const input_error&) {
          throw;
        } catch (const std::exception& e) {
          fail(fmt::format("job {}: unreadable record: {}", s.integer(0), e.what()));
        }
      }
      if (rc != SQLITE_DONE) fail(sqlite3_errmsg(db_));
    }
    if (records.empty()) return;
    // The last row is topped up before a new one is begun: rows stay full, whatever the
    // interval between compactions.
    int64_t chunk = 0;
    json rows = json::array();
    {
      statement s(db_, "SELECT chunk, count, records FROM ended ORDER BY chunk DESC LIMIT 1");
      if (!s.ok()) fail(sqlite3_errmsg(db_));
      int rc = s.step();
      if (rc == SQLITE_ROW) {
        chunk = s.integer(0);
        if (s.integer(1) < static_cast<int64_t>(ended_records_per_row)) {
          try {
            rows = json::parse(s.text(2));
          } catch (const json::exception& e) {
            fail(fmt::format("ended jobs (row {}): unreadable records: {}", chunk, e.what()));
          }
          if (!rows.is_array()) fail(fmt::format("ended jobs (row {}): unreadable records: not an array", chunk));
        } else {
          ++chunk;
        }
      } else if (rc != SQLITE_DONE) {
        fail(sqlite3_errmsg(db_));
      }
    }
    statement put(db_, "INSERT INTO ended VALUES (?1, ?2, ?3) ON CONFLICT(chunk) DO UPDATE SET count = excluded.count, "
                       "records = excluded.records");
    if (!put.ok()) fail(sqlite3_errmsg(db_));
    auto write = [&] {
      put.bind(1, chunk);
      put.bind(2, static_cast<int64_t>(rows.size()));
      put.bind(3, rows.dump());
      if (put.step() != SQLITE_DONE) fail(sqlite3_errmsg(db_));
      put.reset();
    };
    for (auto& r : records) {
      rows.push_back(std::move(r));
      if (rows.size() < ended_records_per_row) continue;
      write();
      ++chunk;
      rows = json::array();
    }
    if (!rows.empty()) write();
    statement drop(db_, "DELETE FROM jobs WHERE status = 'ended'");
    if (!drop.ok() || drop.step() != SQLITE_DONE) fail(sqlite3_errmsg(db_));
    folded = records.size();
  }, failer);
  return folded;
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
