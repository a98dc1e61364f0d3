// What the journal reads back: the whole state a restart carries on from, and the audit log.
// A restored record is an input like any other: every value is checked as it enters.
#include "runtime/live/state_journal.hpp"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "solvers/input_error.hpp"
#include "runtime/live/state_journal_parts.hpp"

namespace aryl::live {

using namespace journal_detail;

namespace {

/// Throws input_error naming the file (state_journal::fail).
using failer = std::function<void(const std::string&)>;

/// Meta row `key`, if the file has it, parsed as JSON and given to `read`; a value that cannot
/// be read fails as "unreadable <what>: why".
template <class Read>
void read_meta(sqlite3* db, const char* key, const char* what, const failer& fail, Read read) {
  statement s(db, "SELECT value FROM meta WHERE key = ?1");
  if (!s.ok()) fail(sqlite3_errmsg(db));
  s.bind(1, std::string(key));
  if (s.step() != SQLITE_ROW) return;
  try {
    read(json::parse(s.text(0)));
  } catch (const input_error&) {
    throw;
  } catch (const std::exception& e) {
    fail(fmt::format("unreadable {}: {}", what, e.what()));
  }
}

void read_run(const json& j, saved_run& r) {
  r.cluster = j.at("cluster").get<std::vector<std::string>>();
  r.trace_jobs = whole_at<uint32_t>(j, "trace_jobs");
  r.speedup = j.at("speedup").get<double>();
  r.start_unix_us = whole_at<int64_t>(j, "start_unix_us");
  r.scheduler_restarts = whole_at<uint32_t>(j, "scheduler_restarts");
  r.restarted_jobs = whole_at<uint64_t>(j, "restarted_jobs");
  r.adopted_jobs = whole_at<uint64_t>(j, "adopted_jobs");
}

void read_next_index(sqlite3* db, const failer& fail, saved_run& r) {
  statement s(db, "SELECT value FROM meta WHERE key = 'next_index'");
  if (!s.ok()) fail(sqlite3_errmsg(db));
  if (s.step() != SQLITE_ROW) return;
  auto next = s.integer(0);
  if (sqlite3_column_type(s.get(), 0) != SQLITE_INTEGER && s.text(0) != std::to_string(next))
    fail(fmt::format("next_index '{}' is not an integer", s.text(0)));
  if (next < 0 || next > UINT32_MAX) fail(fmt::format("next_index {} is not in 0..{}", next, UINT32_MAX));
  r.next_index = static_cast<uint32_t>(next);
}

void read_measures(const json& j, const failer& fail, run_measures& m) {
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
}

/// A usage is finite and >= 0, its time >= 0, a name once.
void read_tenants(const json& rows, const failer& fail, std::vector<saved_tenant>& out) {
  std::set<std::string> seen;
  for (auto& r : rows) {
    saved_tenant t;
    t.name = r.at("name").get<std::string>();
    t.usage_gpu_s = r.at("usage_gpu_s").get<double>();
    t.at_us = whole_at<int64_t>(r, "at_us");
    if (!std::isfinite(t.usage_gpu_s) || t.usage_gpu_s < 0)
      fail(fmt::format("tenants: tenant '{}' usage {} is not a finite number of GPU-seconds >= 0", t.name,
                       t.usage_gpu_s));
    if (t.at_us < 0) fail(fmt::format("tenants: tenant '{}' usage time {} is before the run", t.name, t.at_us));
    if (!seen.insert(t.name).second) fail(fmt::format("tenants: tenant '{}' is listed twice", t.name));
    out.push_back(std::move(t));
  }
}

/// The rows of `jobs`, in index order.
void read_jobs(sqlite3* db, const failer& fail, std::vector<saved_job>& out) {
  statement s(db, "SELECT idx, status, generation, workers, alloc, retries, work_done, spec, record FROM jobs "
                  "ORDER BY idx");
  if (!s.ok()) fail(sqlite3_errmsg(db));
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
    auto status = enum_named<saved_status>(saved_status_names, s.text(1));
    if (!status) fail(fmt::format("job {}: unknown status '{}'", s.integer(0), s.text(1)));
    j.status = *status;
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
    out.push_back(std::move(j));
  }
  if (rc != SQLITE_DONE) fail(sqlite3_errmsg(db));
}

/// The ended jobs of the compact store.
void read_ended(sqlite3* db, const failer& fail, std::vector<saved_job>& out) {
  statement e(db, "SELECT chunk, records FROM ended ORDER BY chunk");
  if (!e.ok()) fail(sqlite3_errmsg(db));
  int rc;
  while ((rc = e.step()) == SQLITE_ROW) {
    try {
      for (auto& r : json::parse(e.text(1))) out.push_back(ended_from_compact(r));
    } catch (const std::exception& x) {
      fail(fmt::format("ended jobs (row {}): unreadable records: {}", e.integer(0), x.what()));
    }
  }
  if (rc != SQLITE_DONE) fail(sqlite3_errmsg(db));
}

} // namespace

saved_state state_journal::load() const {
  const failer fails = [this](const std::string& w) { fail(w); };
  saved_state out;
  read_meta(db_, "run", "run record", fails, [&](const json& j) { read_run(j, out.run); });
  read_next_index(db_, fails, out.run);
  read_meta(db_, "measures", "measures", fails, [&](const json& j) { read_measures(j, fails, out.measures); });
  read_meta(db_, "tenants", "tenants", fails, [&](const json& j) { read_tenants(j, fails, out.tenants); });
  // Names and sizes are checked where the restarted serve takes them (as a registration).
  read_meta(db_, "joined", "joined machines", fails, [&](const json& j) {
    for (auto& r : j)
      out.joined.push_back({r.at("name").get<std::string>(), r.at("gpu_type").get<std::string>(),
                            whole_at<int>(r, "gpus")});
  });
  read_jobs(db_, fails, out.jobs);
  read_ended(db_, fails, out.jobs);
  std::stable_sort(out.jobs.begin(), out.jobs.end(),
                   [](const saved_job& a, const saved_job& b) { return a.spec.index < b.spec.index; });
  statement m(db_, "SELECT name, mode FROM servers ORDER BY name");
  if (!m.ok()) fail(sqlite3_errmsg(db_));
  int rc;
  while ((rc = m.step()) == SQLITE_ROW) out.server_modes.emplace_back(m.text(0), m.text(1));
  if (rc != SQLITE_DONE) fail(sqlite3_errmsg(db_));
  return out;
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

} // namespace aryl::live
