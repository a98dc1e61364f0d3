// The journal of `aryl serve --state` (runtime/live/state_journal): what is written is read
// back as written; a file that is not an aryl state file, or of another format version, is
// refused naming the file; a config of another cluster is told apart by its first difference.
#include <doctest/doctest.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "solvers/input_error.hpp"
#include "runtime/live/state_journal.hpp"
#include "runtime/inputs/tenant_plan.hpp"
#include "solvers/round_planner.hpp"
#include "solvers/tenants.hpp"

using namespace aryl;
using namespace aryl::live;

namespace {

/// A fresh folder of its own per test (two test runs on one machine do not collide).
struct scratch {
  std::filesystem::path dir;
  scratch() {
    dir = std::filesystem::temp_directory_path() / ("aryl-state-journal-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  ~scratch() { std::filesystem::remove_all(dir); }
  std::string file(const std::string& name) const { return (dir / name).string(); }
};

saved_job running_job() {
  saved_job j;
  j.spec.index = 3;
  j.spec.name = "resnet";
  j.spec.submit = sim_time::from_us(12'500'000);
  j.spec.gpus = 4;
  j.spec.duration_s = 600;
  j.spec.gpu_type = "V100";
  j.spec.elastic = true;
  j.spec.min_workers = 2;
  j.spec.max_workers = 8;
  j.spec.predict_factor = 1.5;
  j.spec.command = {"/usr/bin/python3", "train.py", "--lr", "0.1"};
  j.spec.tenant = "vision";
  j.spec.estimated = false;
  j.spec.time_limit_s = 5400;
  j.spec.max_retries = 2;
  j.status = saved_status::running;
  j.generation = 7;
  j.workers = 4;
  j.alloc = "t0:2 t1:2";
  j.retries = 1;
  j.record.index = 3;
  j.record.name = "resnet";
  j.record.first_start_us = 13'000'000;
  j.record.queued_s = 0.5;
  j.record.preemptions = 2;
  return j;
}

std::string refusal(const std::string& path) {
  try {
    state_journal j(path);
  } catch (const input_error& e) {
    return e.what();
  }
  return "(no error)";
}

/// What loading the file at `path` throws once `sql` has damaged it.
std::string load_refusal_after(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
  state_journal j(path);
  try {
    j.load();
  } catch (const input_error& e) {
    return e.what();
  }
  return "(no error)";
}

} // namespace

TEST_CASE("state journal: jobs, progress, loans and the run read back as written, across a reopen") {
  scratch s;
  auto path = s.file("state.db");
  saved_run run;
  run.cluster = {"t0 V100x4 training", "t1 V100x4 training"};
  run.trace_jobs = 3;
  run.speedup = 5;
  run.start_unix_us = 1'700'000'000'000'000;
  run.next_index = 3;
  {
    state_journal j(path);
    CHECK(j.fresh());
    j.put_run(run);
    j.put_job(running_job());
    saved_job done = running_job();
    done.spec.index = 1;
    done.status = saved_status::ended;
    done.record.index = 1;
    done.record.outcome = job_outcome::done;
    done.record.end_us = 90'000'000;
    j.put_job(done);
    j.put_progress({{3, 123.5}});
    j.put_job(running_job());  // a later change leaves the workers' progress as it is
    j.put_next_index(5);
    j.put_next_index(4);       // never backwards
    j.put_server_mode("i0", "loaned");
    j.put_server_mode("i1", "reclaiming");
    j.put_server_mode("i1", "serving");  // serving again: no longer in flight
  }
  state_journal j(path);
  CHECK_FALSE(j.fresh());
  auto st = j.load();
  CHECK(st.run.cluster == run.cluster);
  CHECK(st.run.trace_jobs == 3);
  CHECK(st.run.speedup == 5);
  CHECK(st.run.start_unix_us == run.start_unix_us);
  CHECK(st.run.next_index == 5);
  REQUIRE(st.jobs.size() == 2);
  CHECK(st.jobs[0].spec.index == 1);
  CHECK(st.jobs[0].status == saved_status::ended);
  CHECK(st.jobs[0].record.outcome == job_outcome::done);
  CHECK(st.jobs[0].record.end_us == 90'000'000);
  auto& r = st.jobs[1];
  auto want = running_job();
  CHECK(r.spec.name == want.spec.name);
  CHECK(r.spec.time_limit_s == want.spec.time_limit_s);
  CHECK(r.spec.max_retries == want.spec.max_retries);
  CHECK(r.spec.submit.us == want.spec.submit.us);
  CHECK(r.spec.command == want.spec.command);
  CHECK(r.spec.elastic);
  CHECK(r.spec.min_workers == 2);
  CHECK(r.spec.max_workers == 8);
  CHECK(r.spec.predict_factor == 1.5);
  CHECK(r.spec.tenant == "vision");  // tenants and jobs without an estimate survive a restart
  CHECK_FALSE(r.spec.estimated);
  CHECK(r.spec.gpu_type == "V100");
  CHECK(r.status == saved_status::running);
  CHECK(r.generation == 7);
  CHECK(r.workers == 4);
  CHECK(r.alloc == "t0:2 t1:2");
  CHECK(r.retries == 1);
  CHECK(r.work_done == 123.5);
  CHECK(r.record.first_start_us == 13'000'000);
  CHECK(r.record.preemptions == 2);
  REQUIRE(st.server_modes.size() == 1);
  CHECK(st.server_modes[0] == std::pair<std::string, std::string>{"i0", "loaned"});
}

TEST_CASE("state journal: a file that is not a database is refused naming the file, and left as it was") {
  scratch s;
  auto path = s.file("garbage.db");
  std::string bytes(8192, '\x5a');
  std::ofstream(path, std::ios::binary) << bytes;
  auto why = refusal(path);
  CHECK(why.find(path) == 0);
  CHECK(why.find("not a database") != std::string::npos);
  std::ifstream in(path, std::ios::binary);
  std::string after((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(after == bytes);
}

TEST_CASE("state journal: a path that exists and is not a regular file (a device, a FIFO) is refused naming it, "
          "and nothing is written beside it") {
  scratch s;
  // Never opened: SQLite would write its journal beside a device (/dev/null-journal).
  auto why = refusal("/dev/null");
  CHECK_MESSAGE(why.find("/dev/null: the state file is not a regular file (a device)") == 0, why);
  auto fifo = s.file("state.fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  why = refusal(fifo);
  CHECK_MESSAGE(why.find(fifo + ": the state file is not a regular file (a FIFO)") == 0, why);
  for (const char* suffix : {"-journal", "-wal", "-shm"})
    CHECK_FALSE(std::filesystem::exists(fifo + suffix));
}

TEST_CASE("state journal: another program's database and another format version are refused naming the file") {
  scratch s;
  auto other = s.file("other.db");
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(other.c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db, "CREATE TABLE photos (id INTEGER)", nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
  auto why = refusal(other);
  CHECK(why.find(other) == 0);
  CHECK(why.find("not an aryl state file") != std::string::npos);

  auto newer = s.file("newer.db");
  { state_journal j(newer); }
  REQUIRE(sqlite3_open(newer.c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db, "UPDATE meta SET value = '99' WHERE key = 'version'", nullptr, nullptr, nullptr) ==
          SQLITE_OK);
  sqlite3_close(db);
  why = refusal(newer);
  CHECK(why.find(newer) == 0);
  CHECK(why.find("version '99'") != std::string::npos);
}

TEST_CASE("state journal: a file in use by another journal is refused naming the file, and free once it closes") {
  scratch s;
  auto path = s.file("state.db");
  {
    state_journal first(path);
    auto why = refusal(path);
    CHECK(why.find(path + ": in use by another process") == 0);
  }
  state_journal again(path);  // the first one closed: free
  CHECK(again.fresh());
}

TEST_CASE("state journal: a damaged job row is refused naming the file and the job") {
  scratch s;
  auto path = s.file("state.db");
  {
    state_journal j(path);
    j.put_job(running_job());
  }
  auto why = load_refusal_after(path, "UPDATE jobs SET spec = '{\"index\": 3' WHERE idx = 3");
  CHECK(why.find(path + ": job 3: unreadable record") == 0);
}

TEST_CASE("state journal: another cluster is told apart by its first difference") {
  std::vector<std::string> a{"t0 V100x4 training", "t1 V100x4 training"};
  CHECK(cluster_mismatch(a, a).empty());
  auto b = a;
  b[1] = "t1 V100x8 training";
  CHECK(cluster_mismatch(a, b) == "machine 1 is 't1 V100x4 training' in the file, 't1 V100x8 training' in this config");
  b = a;
  b.push_back("i0 T4x4 inference");
  CHECK(cluster_mismatch(a, b) == "the file has 2 machines, this config 3");
}

namespace {

saved_job job_at(uint32_t index, saved_status status) {
  saved_job j = running_job();
  j.spec.index = j.record.index = index;
  j.spec.name = j.record.name = "job" + std::to_string(index);
  j.status = status;
  j.record.training_gpu_s = index * 0.5;
  j.record.loaned_needed_gpu_s = 1.0 / (index + 3);  // must read back exactly
  if (index % 3 == 0) {  // an array task
    j.spec.array_job = index / 30 * 30;
    j.spec.array_task = index % 30;
    j.spec.array_count = 30;
    j.spec.array_limit = index % 4;
  }
  if (index % 4 == 1) {  // a keyed submit
    j.spec.key = "key-" + std::to_string(index);
    j.spec.user = "user" + std::to_string(index % 3);
  }
  if (status == saved_status::ended) {
    j.record.tenant = index % 2 == 0 ? "prod" : "";
    j.record.estimated = index % 5 != 0;
    j.record.needed_gpu_s = index * 2.0;
    j.record.outcome = static_cast<job_outcome>(index % job_outcome_names.size());
    if (index % 7 == 0)
      j.record.attempts = {{-1, 500'000, job_outcome::node_lost, "", "server t1 was lost"},
                           {600'000, j.record.end_us, j.record.outcome, "0:3 1:sig15", "rank 0 exited with code 3"}};
    j.record.end_us = 1'000'000 + index;
    j.record.gpu_seconds = index * 0.1;
    j.record.slowdown = 1.0 / (index + 1);  // not a short decimal: must read back exactly
  }
  return j;
}

int64_t pages(const std::string& path) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, "PRAGMA page_count", -1, &s, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(s) == SQLITE_ROW);
  auto n = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  sqlite3_close(db);
  return n;
}

/// The pages of `path` but the history table's (a row per job, which compaction leaves alone:
/// `aryl history`), on a copy without it.
int64_t pages_but_history(const std::string& path) {
  auto copy = path + ".without-history";
  std::filesystem::copy_file(path, copy, std::filesystem::copy_options::overwrite_existing);
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(copy.c_str(), &db) == SQLITE_OK);
  CHECK(sqlite3_exec(db, "DROP TABLE history; VACUUM", nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
  auto n = pages(copy);
  std::filesystem::remove(copy);
  return n;
}

/// 1000 jobs, each queued, running and ended in turn, 4 active at a time; compacted every
/// `every` ends (0: never). Returns the most rows the file had.
size_t run_many(state_journal& j, uint32_t every) {
  size_t most = 0;
  for (uint32_t i = 0; i < 1000; ++i) {
    j.put_job(job_at(i, saved_status::queued));
    j.put_job(job_at(i, saved_status::running));
    if (i >= 4) {
      j.put_job(job_at(i - 4, saved_status::ended));
      if (every && (i - 3) % every == 0) j.compact();
    }
    most = std::max(most, j.rows());
  }
  return most;
}

} // namespace

TEST_CASE("state journal: a client's submit and the id counter are written in one transaction") {
  scratch s;
  auto path = s.file("state.db");
  {
    state_journal j(path);
    j.put_next_index(3);
    auto row = job_at(3, saved_status::queued);
    j.put_admitted(row, 4);
    j.put_job(job_at(3, saved_status::running));  // later writes go on as before
  }
  state_journal j(path);
  auto st = j.load();
  CHECK(st.run.next_index == 4);
  REQUIRE(st.jobs.size() == 1);
  CHECK(st.jobs[0].spec.index == 3);
  CHECK(st.jobs[0].status == saved_status::running);
}

TEST_CASE("state journal: compaction keeps the file's rows bounded over many ended jobs, and every record") {
  scratch s;
  auto compacted = s.file("compacted.db"), full = s.file("full.db");
  size_t most = 0;
  {
    state_journal j(compacted);
    most = run_many(j, 50);
  }
  {
    state_journal j(full);
    run_many(j, 0);
  }
  // 3 meta rows, 4 active jobs, at most 49 ended ones not yet folded, and at most
  // ceil(996 / 256) = 4 rows of folded records; without compaction, a row per job.
  CHECK(most <= 3 + 4 + 49 + 4);
  CHECK(pages_but_history(compacted) * 3 < pages_but_history(full));

  state_journal j(compacted);
  CHECK(j.compact() == 46);  // what a restart folds first: the ends since the last compaction
  CHECK(j.rows() == 3 + 4 + 4);
  auto st = j.load();
  REQUIRE(st.jobs.size() == 1000);
  for (uint32_t i = 0; i < 1000; ++i) {
    auto& got = st.jobs[i];
    CHECK(got.spec.index == i);
    CHECK(got.record.training_gpu_s == i * 0.5);
    CHECK(got.record.loaned_needed_gpu_s == 1.0 / (i + 3));
    if (i >= 996) {
      CHECK(got.status == saved_status::running);
      continue;
    }
    auto want = job_at(i, saved_status::ended);
    CHECK(got.record.needed_gpu_s == want.record.needed_gpu_s);
    CHECK(got.status == saved_status::ended);
    CHECK(got.spec.name == want.spec.name);
    CHECK(got.spec.submit.us == want.record.submit_us);
    CHECK(got.record.outcome == want.record.outcome);
    CHECK(got.record.end_us == want.record.end_us);
    // Every outcome and each attempt survive the fold: show lists them after a restart.
    REQUIRE(got.record.attempts.size() == want.record.attempts.size());
    for (size_t a = 0; a < want.record.attempts.size(); ++a) {
      auto &x = got.record.attempts[a], &y = want.record.attempts[a];
      CHECK(x.start_us == y.start_us);
      CHECK(x.end_us == y.end_us);
      CHECK(x.outcome == y.outcome);
      CHECK(x.exits == y.exits);
      CHECK(x.why == y.why);
    }
    CHECK(got.record.gpu_seconds == want.record.gpu_seconds);
    CHECK(got.record.slowdown == want.record.slowdown);
    CHECK(got.record.first_start_us == want.record.first_start_us);
    CHECK(got.record.preemptions == want.record.preemptions);
    // The tenant and the estimate survive the fold: status --all, show and jobs.csv keep them.
    CHECK(got.record.tenant == want.record.tenant);
    CHECK(got.spec.tenant == want.record.tenant);
    CHECK(got.record.estimated == want.record.estimated);
    // An array task stays one after the fold: a restart keeps it in its array.
    CHECK(got.spec.array_job == want.spec.array_job);
    CHECK(got.spec.array_task == want.spec.array_task);
    CHECK(got.spec.array_count == want.spec.array_count);
    CHECK(got.spec.array_limit == want.spec.array_limit);
    // So does a keyed submit's key, with its user: a repeat of it is still answered its id.
    CHECK(got.spec.key == want.spec.key);
    if (!want.spec.key.empty()) CHECK(got.spec.user == want.spec.user);
  }
}

TEST_CASE("state journal: a folded array task whose array id is not a job id is refused naming the file and row") {
  scratch s;
  auto path = s.file("state.db");
  {
    state_journal j(path);
    j.put_job(job_at(3, saved_status::ended));  // index 3: an array task
    REQUIRE(j.compact() == 1);
  }
  auto why = load_refusal_after(path, "UPDATE ended SET records = json_replace(records, '$[0][30].array_job', -4)");
  CHECK(why.find(path + ": ended jobs (row 0): unreadable records: 'array_job' -4 is not a whole number") == 0);
}

TEST_CASE("state journal: a job's progress after it was folded changes nothing") {
  scratch s;
  auto path = s.file("state.db");
  state_journal j(path);
  j.put_job(job_at(1, saved_status::ended));
  CHECK(j.compact() == 1);
  CHECK(j.compact() == 0);
  j.put_progress({{1, 55.0}});
  auto st = j.load();
  REQUIRE(st.jobs.size() == 1);
  CHECK(st.jobs[0].status == saved_status::ended);
  CHECK(st.jobs[0].work_done == 0);
}

TEST_CASE("state journal: a version 1 file is upgraded in place and its ended jobs folded") {
  scratch s;
  auto path = s.file("v1.db");
  {
    state_journal j(path);
    j.put_job(job_at(0, saved_status::ended));
    j.put_job(job_at(1, saved_status::running));
  }
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db, "DROP TABLE ended; UPDATE meta SET value = '1' WHERE key = 'version'", nullptr, nullptr,
                       nullptr) == SQLITE_OK);
  sqlite3_close(db);
  state_journal j(path);
  CHECK(j.compact() == 1);
  auto st = j.load();
  REQUIRE(st.jobs.size() == 2);
  CHECK(st.jobs[0].status == saved_status::ended);
  CHECK(st.jobs[0].record.outcome == job_outcome::done);
  CHECK(st.jobs[0].record.attempts.size() == 2);
  CHECK(st.jobs[1].status == saved_status::running);
}

TEST_CASE("state journal: the run's measures read back as last written, and a negative one is refused naming the file") {
  scratch s;
  auto path = s.file("state.db");
  run_measures m;
  m.lost_gpu_s = 12.5;
  m.recoveries_s = {3.25};
  m.reclaim_latency_s = {7.2, 0.5};
  m.reclaim_max_late_s = 1.5;
  m.slo_misses = 2;
  {
    state_journal j(path);
    j.put_measures(run_measures{});
    j.put_measures(m);  // replaces the first
  }
  {
    state_journal j(path);
    auto got = j.load().measures;
    CHECK(got.lost_gpu_s == 12.5);
    CHECK(got.recoveries_s == std::vector<double>{3.25});
    CHECK(got.reclaim_latency_s == std::vector<double>{7.2, 0.5});
    CHECK(got.reclaim_max_late_s == 1.5);
    CHECK(got.slo_misses == 2);
  }
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db,
                       "UPDATE meta SET value = '{\"lost_gpu_s\": 0, \"recoveries_s\": [-1], \"reclaim_latency_s\": [],"
                       " \"reclaim_max_late_s\": 0, \"slo_misses\": 0}' WHERE key = 'measures'",
                       nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
  state_journal j(path);
  std::string why;
  try {
    j.load();
  } catch (const input_error& e) {
    why = e.what();
  }
  INFO(why);
  CHECK(why.find(path + ": measures: a recovery -1 is not a finite time >= 0") == 0);
}

namespace {

/// Two tenants' queues of 4-GPU jobs on one 8-GPU server, fair share on (half-life 1 h), the
/// usage as `tenants` has it: the tenants of the next `n` starts, in order, each start's job
/// running 1000 s and ending before the next round.
std::vector<std::string> next_starts(std::vector<tenant_entry> tenants, sim_time from, int n) {
  cluster_ledger l;
  l.params.model = power_law_model(-0.05);
  l.params.type_speed = {1.0};
  l.params.fair_share = true;
  server_entry srv;
  srv.name = "t0";
  srv.gpus = srv.free = 8;
  l.servers = {srv};
  l.tenants = std::move(tenants);
  for (int i = 0; i < 2 * n; ++i) {
    job_entry j;
    j.index = static_cast<uint32_t>(i);
    j.gpus = j.min_workers = j.max_workers = 8;
    j.predicted_work = 1000;
    j.tenant = 1 + i % 2;
    j.submit = from;
    l.jobs.push_back(j);
    l.submit(j.index, from);
  }
  std::vector<std::string> order;
  sim_time now = from;
  auto& p = *find_policy("baseline");
  for (int k = 0; k < n; ++k) {
    for (auto& d : plan_round(l, p, planner_options{}, now))
      if (d.what == decision::kind::start) order.push_back(l.tenants[static_cast<size_t>(l.jobs[d.job].tenant)].name);
    settle_tenant_usage(l, p, now);
    now = now + sim_time::from_seconds(1000);
    for (auto id : std::vector<uint32_t>(l.running.begin(), l.running.end())) l.finish(id, now);
  }
  return order;
}

} // namespace

TEST_CASE("state journal: tenants' decayed usage survives a restart, and fair share goes on in the same order") {
  scratch s;
  auto path = s.file("state.db");
  // Before the restart tenant a used 4 h of 8 GPUs (decayed), b nothing: a fresh scheduler
  // would alternate a, b, ...; with a's usage b goes first until it has caught up.
  std::vector<tenant_entry> before(3);
  before[1].name = "a";
  before[2].name = "b";
  before[1].usage_gpu_s = 8 * 4 * 3600.0;
  before[1].usage_at = before[2].usage_at = sim_time::from_seconds(7200);
  {
    state_journal j(path);
    std::vector<saved_tenant> rows;
    for (auto& t : before) rows.push_back({t.name, t.usage_gpu_s, t.usage_at.us});
    j.put_tenants(rows);
  }
  state_journal j(path);
  auto restored = j.load().tenants;
  REQUIRE(restored.size() == 3);
  CHECK(restored[1].name == "a");
  CHECK(restored[1].usage_gpu_s == doctest::Approx(8 * 4 * 3600.0));
  CHECK(restored[1].at_us == 7'200'000'000);
  // The restarted scheduler's tenants: the configured ones (none here: named by their jobs)
  // with the journal's usage.
  std::vector<tenant_entry> after(1);
  restore_tenant_usage(after, restored);
  const auto t = sim_time::from_seconds(7300);
  auto without_restart = next_starts(before, t, 6);
  CHECK(next_starts(after, t, 6) == without_restart);
  CHECK(without_restart.front() == "b");
  std::vector<tenant_entry> forgotten(3);  // usage lost: a different order
  forgotten[1].name = "a";
  forgotten[2].name = "b";
  CHECK(next_starts(forgotten, t, 6) != without_restart);
}

TEST_CASE("state journal: a tenant's usage that is negative or not a number refuses the file naming the tenant") {
  scratch s;
  auto path = s.file("state.db");
  {
    state_journal j(path);
    j.put_tenants({{"a", -5, 0}});
  }
  std::string why;
  try {
    state_journal j(path);
    j.load();
  } catch (const input_error& e) {
    why = e.what();
  }
  CHECK(why.find(path + ": tenants: tenant 'a' usage -5 is not a finite number of GPU-seconds >= 0") == 0);
}

TEST_CASE("state journal: audit lines read back in order across a reopen, and a file from before them gains the table") {
  scratch s;
  auto path = s.file("audit.db");
  {
    state_journal j(path);
    j.put_audit(R"({"identity":"alice","action":"submit"})");
    j.put_audit(R"({"identity":"bob","action":"cancel"})");
  }
  {
    state_journal j(path);
    CHECK(j.audit_lines() ==
          std::vector<std::string>{R"({"identity":"alice","action":"submit"})", R"({"identity":"bob","action":"cancel"})"});
  }
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db, "DROP TABLE audit", nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
  state_journal j(path);
  CHECK(j.audit_lines().empty());
  j.put_audit("x");
  CHECK(j.audit_lines() == std::vector<std::string>{"x"});
}
