// The journal's writes, each in a transaction of its own: jobs, progress, servers, the run's
// meta rows, the audit log, and the compaction of ended jobs.
#include "runtime/live/state_journal.hpp"

#include <fmt/format.h>
#include <sqlite3.h>

#include <stdexcept>

#include "solvers/input_error.hpp"
#include "runtime/live/history_table.hpp"
#include "runtime/live/state_journal_parts.hpp"

namespace aryl::live {

using namespace journal_detail;

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
  s.bind(2, std::string(to_string(j.status)));
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
      statement s(db_, "SELECT idx, spec, record FROM jobs WHERE status = 'ended' ORDER BY idx");
      if (!s.ok()) fail(sqlite3_errmsg(db_));
      int rc;
      while ((rc = s.step()) == SQLITE_ROW) {
        try {
          records.push_back(compact_json(record_from(json::parse(s.text(2))), spec_from(json::parse(s.text(1)))));
        } catch (const input_error&) {
          throw;
        } catch (const std::exception& e) {
          fail(fmt::format("job {}: unreadable row: {}", s.integer(0), e.what()));
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

} // namespace aryl::live
