// libFuzzer target: a `serve --state` journal as a restart reads it (state_journal::load, then
// check_saved_state, the checks a restored record passes). The input is text, one row per
// line, written into a fresh journal's tables with SQLite (values bound as text, so SQLite's
// column affinities apply as they would to a damaged file):
//   trace N                     the workload's trace jobs (default 0)
//   run JSON | next TEXT | measures JSON     the meta rows
//   job IDX|STATUS|GEN|WORKERS|ALLOC|RETRIES|WORK_DONE|SPEC_JSON|RECORD_JSON
//   ended CHUNK|COUNT|RECORDS_JSON
//   server NAME|MODE
// Checks beyond the contract (return or input_error): a journal that is accepted keeps the
// promises of state_checks.hpp (every queued or running job passes job_spec_problem, indices
// unique and below the run's count), and compacting it loses no job.
#include <sqlite3.h>

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/inputs/job_checks.hpp"
#include "runtime/live/state_checks.hpp"
#include "runtime/live/state_journal.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

using namespace aryl;

std::vector<std::string> split(const std::string& s, size_t fields) {
  std::vector<std::string> out;
  size_t from = 0;
  while (out.size() + 1 < fields) {
    auto bar = s.find('|', from);
    if (bar == std::string::npos) break;
    out.push_back(s.substr(from, bar - from));
    from = bar + 1;
  }
  out.push_back(s.substr(from));
  out.resize(fields);
  return out;
}

void insert(sqlite3* db, const char* sql, const std::vector<std::string>& values) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) != SQLITE_OK) fuzz::finding(std::string("prepare: ") + sql);
  for (size_t i = 0; i < values.size(); ++i)
    sqlite3_bind_text(st, static_cast<int>(i + 1), values[i].data(), static_cast<int>(values[i].size()),
                      SQLITE_TRANSIENT);
  sqlite3_step(st);  // a duplicate key or a NULL is the input's business: the row is left out
  sqlite3_finalize(st);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The journal syncs its writes: on tmpfs that costs nothing, where a busy disk can make one
  // input take seconds.
  static fuzz::scratch_dir dir("state_restore", std::filesystem::is_directory("/dev/shm")
                                                    ? std::filesystem::path("/dev/shm")
                                                    : std::filesystem::temp_directory_path());
  dir.clear();
  const std::string path = (dir.path() / "state.db").string();
  { live::state_journal create(path); }
  uint32_t trace_jobs = 0;
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) fuzz::finding("cannot open the scratch journal");
  std::istringstream in{std::string(fuzz::as_text(data, size))};
  for (std::string line; std::getline(in, line);) {
    auto space = line.find(' ');
    auto kind = line.substr(0, space);
    auto rest = space == std::string::npos ? std::string() : line.substr(space + 1);
    if (kind == "trace") trace_jobs = static_cast<uint32_t>(std::strtoul(rest.c_str(), nullptr, 10));
    else if (kind == "run" || kind == "next" || kind == "measures")
      insert(db, "INSERT OR REPLACE INTO meta VALUES (?1, ?2)", {kind == "next" ? "next_index" : kind, rest});
    else if (kind == "job") insert(db, "INSERT INTO jobs VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)", split(rest, 9));
    else if (kind == "ended") insert(db, "INSERT INTO ended VALUES (?1, ?2, ?3)", split(rest, 3));
    else if (kind == "server") insert(db, "INSERT INTO servers VALUES (?1, ?2)", split(rest, 2));
  }
  sqlite3_close(db);

  saved_state s;
  bool accepted = fuzz::returns_or_input_error("load and check", [&] {
    live::state_journal j(path);
    s = j.load();
    live::check_saved_state(s, trace_jobs, path);
  });
  if (!accepted) return 0;
  std::set<uint32_t> seen;
  const uint64_t numbered = std::max<uint64_t>(s.run.next_index, trace_jobs);
  for (auto& j : s.jobs) {
    fuzz::require(seen.insert(j.spec.index).second, "job index restored twice: " + std::to_string(j.spec.index));
    fuzz::require(j.spec.index < numbered, "job index beyond the run's count: " + std::to_string(j.spec.index));
    if (j.status != saved_status::ended)
      fuzz::require(job_spec_problem(j.spec).empty(), "restored job fails the submit checks: " + job_spec_problem(j.spec));
  }
  fuzz::returns_or_input_error("compact and reload", [&] {
    live::state_journal j(path);
    j.compact();
    auto again = j.load();
    fuzz::require(again.jobs.size() == s.jobs.size(),
                  "compaction changed the number of jobs: " + std::to_string(s.jobs.size()) + " -> " +
                      std::to_string(again.jobs.size()));
  });
  return 0;
}
