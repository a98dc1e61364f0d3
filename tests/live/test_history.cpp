// `aryl history` (runtime/live/history_*): the history table a state file keeps, written with
// each change of a job and left alone by compaction, read back filtered by time, user, tenant
// and outcome; the time, outcome and column flags; the table, CSV and JSON; bad input refused
// naming the flag or the file.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "runtime/live/history_reader.hpp"
#include "runtime/live/history_view.hpp"
#include "runtime/live/sim_history.hpp"
#include "runtime/live/state_journal.hpp"
#include "solvers/input_error.hpp"
#include "tests/input_test_support.hpp"

using namespace aryl;
using namespace aryl::live;

namespace {

struct scratch {
  std::filesystem::path dir;
  scratch() {
    dir = std::filesystem::temp_directory_path() / ("aryl-history-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  ~scratch() { std::filesystem::remove_all(dir); }
  std::string file(const std::string& name) const { return (dir / name).string(); }
};

using aryl::test::error_of;

constexpr int64_t s = 1'000'000;  // µs per second

/// Job `index` of `user` and `tenant`, submitted at `submit` s; ended at `end` s with `outcome`
/// if `end` >= 0, else running since submit + 10 s.
saved_job job(uint32_t index, std::string user, std::string tenant, int64_t submit, int64_t end,
              job_outcome outcome = job_outcome::done) {
  saved_job j;
  j.spec.index = index;
  j.spec.name = "job" + std::to_string(index);
  j.spec.user = std::move(user);
  j.spec.tenant = std::move(tenant);
  j.spec.gpus = 2;
  j.spec.submit = sim_time::from_us(submit * s);
  j.status = end >= 0 ? saved_status::ended : saved_status::running;
  j.workers = 2;
  j.record.index = index;
  j.record.name = j.spec.name;
  j.record.gpus = 2;
  j.record.tenant = j.spec.tenant;
  j.record.submit_us = submit * s;
  j.record.first_start_us = (submit + 10) * s;
  j.record.queued_s = 10;
  j.record.end_us = end * s;
  j.record.last_workers = 2;
  j.record.outcome = outcome;
  j.record.attempts.push_back({(submit + 10) * s, end * s, outcome, outcome == job_outcome::failed ? "0:1" : "", ""});
  return j;
}

std::vector<uint32_t> ids(const std::vector<history_row>& rows) {
  std::vector<uint32_t> out;
  for (auto& r : rows) out.push_back(r.id);
  return out;
}

/// A state file as a serve at the wall clock from 2026-11-01T00:00 (speedup 1) leaves it:
/// jobs 0-2 ended, then compacted; job 3 ended after; job 4 still running.
std::string journal_with_jobs(const scratch& d) {
  auto path = d.file("state.db");
  state_journal j(path);
  saved_run run;
  run.cluster = {"t0 V100x8 training"};
  run.start_unix_us = parse_history_time("t", "2026-11-01", 0);
  j.put_run(run);
  j.put_job(job(0, "ana", "vision", 0, 100));
  j.put_job(job(1, "bo", "nlp", 50, 3600, job_outcome::failed));
  j.put_job(job(2, "ana", "nlp", 60, 7200, job_outcome::timeout));
  CHECK(j.compact() == 3);
  j.put_job(job(3, "bo", "vision", 90000, 90500, job_outcome::cancelled));
  j.put_job(job(4, "ana", "vision", 95000, -1));
  return path;
}

} // namespace

TEST_CASE("history: times parse as ISO-8601 UTC dates and minutes and relative to now, and a bad one names the flag") {
  const int64_t day = 86400 * s;
  CHECK(parse_history_time("--since", "1970-01-02", 0) == day);
  CHECK(parse_history_time("--since", "2026-11-01T12:00", 0) == parse_history_time("--since", "2026-11-01", 0) + day / 2);
  CHECK(parse_history_time("--since", "2026-11-01T12:00:30Z", 0) ==
        parse_history_time("--since", "2026-11-01T12:00", 0) + 30 * s);
  CHECK(parse_history_time("--since", "-7d", 10 * day) == 3 * day);
  CHECK(parse_history_time("--since", "-90m", day) == day - 90 * 60 * s);
  CHECK(parse_history_time("--since", "now", 1234) == 1234);
  for (const char* bad : {"2026-13-01", "2026-02-30", "2026-11-01T25:00", "yesterday", "7d", "-7w", "2026-11-1", ""})
    CHECK(error_of([&] { parse_history_time("history: --since", bad, 0); })
              .starts_with(std::string("history: --since: '") + bad + "' is not a time"));
  CHECK(iso_time(parse_history_time("t", "2026-11-01T12:34:56", 0)) == "2026-11-01T12:34:56");
  CHECK(iso_time(-1) == "1969-12-31T23:59:59");
}

TEST_CASE("history: outcomes are the job outcomes, queued and running, or sacct's codes, and an unknown one is named") {
  CHECK(parse_outcomes("--outcome", "done,NODE_LOST") == std::set<std::string>{"done", "node_lost"});
  CHECK(parse_outcomes("--outcome", "CD,f,TO,nf,CA,PD,R") ==
        std::set<std::string>{"done", "failed", "timeout", "node_lost", "cancelled", "queued", "running"});
  auto e = error_of([] { parse_outcomes("history: --outcome", "done,crashed"); });
  CHECK(e.starts_with("history: --outcome: 'crashed' is not an outcome (done, failed, timeout, node_lost, cancelled"));
  CHECK(error_of([] { parse_outcomes("history: --outcome", ","); }) == "history: --outcome: give at least one outcome");
}

TEST_CASE("history: --format takes column names in any case in the order given, and an unknown one lists the valid") {
  auto c = parse_history_columns("--format", "END,id,exits");
  REQUIRE(c.size() == 3);
  CHECK(c[0]->name == "end");
  CHECK(c[1]->name == "id");
  CHECK(c[2]->name == "exits");
  CHECK(error_of([] { parse_history_columns("history: --format", "id,jct"); }) ==
        "history: --format: 'jct' is not a column (valid: id, name, user, tenant, submit, start, end, wait, run, "
        "gpus, outcome, exits, attempts)");
}

TEST_CASE("history: ended jobs keep their rows and users through compaction, and every filter keeps what it says") {
  scratch d;
  auto path = journal_with_jobs(d);
  {
    state_journal reopened(path);  // the rows survive a restart
    CHECK(reopened.load().jobs.size() == 5);
  }
  auto all = read_history(path, {});
  CHECK(ids(all) == std::vector<uint32_t>{0, 1, 2, 3, 4});
  CHECK(all[1].user == "bo");
  CHECK(all[1].outcome == "failed");
  CHECK(all[1].exits == "0:1");
  CHECK(iso_time(all[1].submit_us) == "2026-11-01T00:00:50");
  CHECK(iso_time(*all[1].end_us) == "2026-11-01T01:00:00");
  CHECK(all[1].run_s() == doctest::Approx(3540));
  CHECK(all[4].state == "running");
  CHECK_FALSE(all[4].end_us);
  history_filter f;
  f.users = {"ana"};
  CHECK(ids(read_history(path, f)) == std::vector<uint32_t>{0, 2, 4});
  f = {};
  f.tenants = {"nlp"};
  CHECK(ids(read_history(path, f)) == std::vector<uint32_t>{1, 2});
  f = {};
  f.outcomes = {"failed", "timeout"};
  CHECK(ids(read_history(path, f)) == std::vector<uint32_t>{1, 2});
  f.outcomes = {"cancelled", "running"};
  CHECK(ids(read_history(path, f)) == std::vector<uint32_t>{3, 4});
  // --since: ended at or after (a running job kept); --until: submitted at or before.
  f = {};
  f.since_us = parse_history_time("t", "2026-11-01T01:00", 0);
  CHECK(ids(read_history(path, f)) == std::vector<uint32_t>{1, 2, 3, 4});
  f.until_us = parse_history_time("t", "2026-11-01T12:00", 0);
  CHECK(ids(read_history(path, f)) == std::vector<uint32_t>{1, 2});
  f.users = {"ana"};
  f.outcomes = {"timeout"};
  CHECK(ids(read_history(path, f)) == std::vector<uint32_t>{2});
}

TEST_CASE("history: a job's row follows it from queued to running to ended, one row per job") {
  scratch d;
  auto path = d.file("state.db");
  auto q = job(7, "ana", "", 0, -1);
  q.status = saved_status::queued;
  q.record.first_start_us = -1;
  q.record.attempts.clear();
  auto state_now = [&](const saved_job& change) {
    {
      state_journal j(path);
      if (change.status == saved_status::queued) j.put_admitted(change, 8);
      else j.put_job(change);
    }
    auto rows = read_history(path, {});
    REQUIRE(rows.size() == 1);
    return rows[0];
  };
  auto r = state_now(q);
  CHECK(r.state == "queued");
  CHECK_FALSE(r.start_us);
  CHECK(history_cell(r, *parse_history_columns("f", "outcome")[0]) == "queued");
  r = state_now(job(7, "ana", "", 0, -1));
  CHECK(r.state == "running");
  CHECK(r.start_us == 10 * s);
  r = state_now(job(7, "ana", "", 0, 500, job_outcome::node_lost));
  CHECK(r.outcome == "node_lost");
  CHECK(r.end_us == 500 * s);
  CHECK(r.attempts == 1);
}

TEST_CASE("history: a job cancelled while queued has no start and no run time") {
  scratch d;
  auto path = d.file("state.db");
  {
    state_journal j(path);
    auto c = job(1, "ana", "", 0, 30, job_outcome::cancelled);
    c.record.first_start_us = 0;
    c.record.attempts = {{-1, 30 * s, job_outcome::cancelled, "", "cancelled"}};
    j.put_job(c);
  }
  auto rows = read_history(path, {});
  REQUIRE(rows.size() == 1);
  CHECK_FALSE(rows[0].start_us);
  CHECK_FALSE(rows[0].run_s());
  CHECK(history_table(rows, parse_history_columns("f", "id,start,run")) ==
        "JOBID  START  RUN\n    1  -        -\n");
}

TEST_CASE("history: a state file from before the table gains it, filled from its jobs, the compact store's without users") {
  scratch d;
  auto path = journal_with_jobs(d);
  {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "DROP TABLE history", nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
  }
  CHECK(error_of([&] { read_history(path, {}); }).find("from before history was kept") != std::string::npos);
  { state_journal upgraded(path); }
  auto rows = read_history(path, {});
  CHECK(ids(rows) == std::vector<uint32_t>{0, 1, 2, 3, 4});
  CHECK(rows[0].user.empty());    // compacted before the table: its user was never kept
  CHECK(rows[0].outcome == "done");
  CHECK(rows[3].user == "bo");    // still a row of `jobs`: its spec has the user
}

TEST_CASE("history: a missing file, a directory, a text file, another program's database and a held file are named") {
  scratch d;
  auto missing = d.file("none.db");
  CHECK(error_of([&] { read_history(missing, {}); }) == missing + ": no such file (give serve's --state file or "
                                                                  "simulate's --db file)");
  CHECK(error_of([&] { read_history(d.dir.string(), {}); }).starts_with(d.dir.string() + ": not a regular file"));
  auto text = d.file("notes.txt");
  std::ofstream(text) << "not a database, just words that fill more than a header's worth of bytes........\n";
  CHECK(error_of([&] { read_history(text, {}); })
            .starts_with(text + ": not an aryl state file or simulation database"));
  auto other = d.file("other.db");
  {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(other.c_str(), &db) == SQLITE_OK);
    sqlite3_exec(db, "CREATE TABLE t (x)", nullptr, nullptr, nullptr);
    sqlite3_close(db);
  }
  CHECK(error_of([&] { read_history(other, {}); }).starts_with(other + ": not an aryl state file or simulation database"));
  auto path = d.file("state.db");
  state_journal held(path);
  CHECK(error_of([&] { read_history(path, {}); }).starts_with(path + ": held by a running `aryl serve`"));
}

TEST_CASE("history: table, CSV and JSON show the same rows, a missing value as -, empty and null") {
  history_row r;
  r.id = 12;
  r.name = "bert, large";
  r.user = "ana";
  r.state = "ended";
  r.outcome = "failed";
  r.submit_us = 0;
  r.start_us = 90 * s;
  r.end_us = 3690 * s;
  r.wait_s = 90;
  r.gpus = 4;
  r.exits = "0:1 1:sig15";
  r.attempts = 2;
  auto cols = parse_history_columns("f", "id,name,tenant,start,wait,run,outcome,exits");
  CHECK(history_table({r}, cols) ==
        "JOBID  NAME         TENANT  START                   WAIT      RUN  OUTCOME  EXITCODE\n"
        "   12  bert, large  -       1970-01-01T00:01:30  0:01:30  1:00:00  failed   0:1 1:sig15\n");
  CHECK(history_csv({r}, cols) == "id,name,tenant,start,wait,run,outcome,exits\n"
                                  "12,\"bert, large\",,1970-01-01T00:01:30,90,3600,failed,0:1 1:sig15\n");
  auto j = nlohmann::json::parse(history_json({r}, cols));
  CHECK(j["jobs"][0]["id"] == 12);
  CHECK(j["jobs"][0]["tenant"].is_null());
  CHECK(j["jobs"][0]["run_s"] == 3600.0);
  CHECK(j["jobs"][0]["wait_s"] == 90.0);
  CHECK(j["jobs"][0]["start"] == "1970-01-01T00:01:30");
  CHECK(j["jobs"][0].size() == cols.size());
  // No --format: every column.
  CHECK(nlohmann::json::parse(history_json({r}, {}))["jobs"][0].size() == history_columns().size());
}

TEST_CASE("history: a simulation's database holds its jobs with their users, is replaced by the next, and a serve's is not") {
  scratch d;
  auto path = d.file("sim.db");
  job_record a;
  a.index = 0;
  a.name = "a";
  a.tenant = "vision";
  a.first_start_us = 5 * s;
  a.end_us = 65 * s;
  a.outcome = job_outcome::timeout;
  job_record b = a;
  b.index = 1;
  b.name = "b";
  b.outcome = job_outcome::done;
  write_simulation_db(path, {a, b}, {"ana", "bo"});
  history_filter f;
  f.outcomes = {"timeout"};
  auto rows = read_history(path, f);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].user == "ana");
  CHECK(rows[0].tenant == "vision");
  CHECK(iso_time(*rows[0].end_us) == "1970-01-01T00:01:05");  // a simulation's clock starts at 1970
  write_simulation_db(path, {b}, {"cy", "cy"});
  CHECK(ids(read_history(path, {})) == std::vector<uint32_t>{1});
  auto serve_file = journal_with_jobs(d);
  CHECK(error_of([&] { write_simulation_db(serve_file, {a}, {"ana"}); }) ==
        serve_file + ": --db: a serve's state file, not a simulation's database; give another path");
  CHECK(read_history(serve_file, {}).size() == 5);  // left as it was
}
