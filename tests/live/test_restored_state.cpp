// A restarted serve's journal (`aryl serve --state FILE`) is an input like any other: each
// restored record passes the checks a client's submit passes, or the file is refused naming
// the file, the job and the field, and left as it was (runtime/live/state_checks,
// runtime/live/serve_state).
#include <doctest/doctest.h>
#include <sqlite3.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <unistd.h>

#include "solvers/input_error.hpp"
#include "runtime/live/serve_state.hpp"

using namespace aryl;
using namespace aryl::live;

namespace {

struct scratch {
  std::filesystem::path dir;
  scratch() {
    dir = std::filesystem::temp_directory_path() / ("aryl-restored-state-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  ~scratch() { std::filesystem::remove_all(dir); }
  std::string file(const std::string& name) const { return (dir / name).string(); }
};

/// Two V100x4 training servers, no inference servers.
config small_cluster() {
  config c;
  c.training = {2, 4, "V100", {}};
  c.inference = {0, 4, "T4", {}};
  c.speedup = 10;
  return c;
}

saved_job queued(uint32_t index, int gpus) {
  saved_job j;
  j.spec.index = j.record.index = index;
  j.spec.name = j.record.name = "job" + std::to_string(index);
  j.spec.submit = sim_time::from_us(1'000'000);
  j.spec.gpus = j.spec.min_workers = j.spec.max_workers = gpus;
  j.spec.duration_s = 600;
  j.record.first_start_us = -1;
  return j;
}

/// A journal of a run of `small_cluster` with no trace jobs and two submitted jobs (0, 1),
/// as a serve leaves it.
void write_run(const std::string& path) {
  state_journal j(path);
  saved_run r;
  r.cluster = cluster_fingerprint(small_cluster());
  r.speedup = 10;
  r.start_unix_us = 1;
  j.put_run(r);
  j.put_admitted(queued(0, 2), 1);
  j.put_admitted(queued(1, 4), 2);
}

void sql(const std::string& path, const std::string& statement) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  char* err = nullptr;
  int rc = sqlite3_exec(db, statement.c_str(), nullptr, nullptr, &err);
  std::string why = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  REQUIRE_MESSAGE(rc == SQLITE_OK, why);
}

/// open_serve_state's refusal, or "(carried on)".
std::string restore(const std::string& path) {
  run_inputs inputs;
  live_world world;
  std::ostringstream log;
  try {
    auto c = small_cluster();
    auto s = open_serve_state(path, c, inputs, world, log);
    return s.restoring ? "(carried on)" : "(a new run)";
  } catch (const input_error& e) {
    return e.what();
  }
}

} // namespace

TEST_CASE("restored state: a journal as a serve leaves it is carried on") {
  scratch s;
  auto path = s.file("state.db");
  write_run(path);
  CHECK(restore(path) == "(carried on)");
}

TEST_CASE("restored state: a job's GPUs out of range (0, -5, 1e9) refuse the file, naming the file, the job and the field") {
  for (const char* gpus : {"0", "-5", "1000000000"}) {
    CAPTURE(gpus);
    scratch s;
    auto path = s.file("state.db");
    write_run(path);
    sql(path, std::string("UPDATE jobs SET spec = json_set(spec, '$.gpus', ") + gpus + ") WHERE idx = 1");
    CHECK(restore(path) == path + ": job 1: gpus " + gpus + " is not in 1..1000000");
  }
}

TEST_CASE("restored state: workers outside min..max, a duration of 0 and a bad name refuse the file naming the field") {
  scratch s;
  auto path = s.file("state.db");
  write_run(path);
  sql(path, "UPDATE jobs SET spec = json_set(spec, '$.min_workers', 0) WHERE idx = 1");
  CHECK(restore(path).find(path + ": job 1: workers must satisfy 1 <= min_workers (0)") == 0);
  sql(path, "UPDATE jobs SET spec = json_set(spec, '$.min_workers', 4, '$.duration_s', 0) WHERE idx = 1");
  CHECK(restore(path) == path + ": job 1: expected duration 0 s is not in (0, 1e+09]");
  sql(path, "UPDATE jobs SET spec = json_set(spec, '$.duration_s', 60, '$.name', 'a' || char(10) || 'b') "
            "WHERE idx = 1");
  CHECK(restore(path) == path + ": job 1: name: holds a control character ('\\n') at byte 2");
  sql(path, "UPDATE jobs SET spec = json_set(spec, '$.name', 'b'), workers = 9 WHERE idx = 1");
  CHECK(restore(path) == path + ": job 1: workers 9 is not in 0..max_workers (4)");
  sql(path, "UPDATE jobs SET workers = 0, work_done = -1 WHERE idx = 1");
  CHECK(restore(path) == path + ": job 1: work_done -1 is not a finite number >= 0");
}

TEST_CASE("restored state: a job index of 4e9, or a counter beyond the jobs journaled, refuses the file") {
  scratch s;
  auto path = s.file("state.db");
  write_run(path);
  sql(path, "UPDATE jobs SET idx = 4000000000, spec = json_set(spec, '$.index', 4000000000) WHERE idx = 1");
  CHECK(restore(path) == path + ": job 4000000000: index 4000000000 is beyond the 2 jobs the run has numbered "
                                "(trace jobs 0, next index 2)");
  sql(path, "UPDATE jobs SET idx = 1, spec = json_set(spec, '$.index', 1) WHERE idx = 4000000000");
  sql(path, "UPDATE meta SET value = '4000000000' WHERE key = 'next_index'");
  CHECK(restore(path) == path + ": next_index 4000000000: the run would have numbered 4000000000 submitted jobs, "
                                "the file holds 2");
  sql(path, "UPDATE meta SET value = '4e9' WHERE key = 'next_index'");
  CHECK(restore(path) == path + ": next_index '4e9' is not an integer");
}

TEST_CASE("restored state: a job no state of the cluster could run refuses the file naming the job") {
  scratch s;
  auto path = s.file("state.db");
  write_run(path);
  sql(path, "UPDATE jobs SET spec = json_set(spec, '$.gpus', 16, '$.min_workers', 16, '$.max_workers', 16) "
            "WHERE idx = 1");
  CHECK(restore(path) == path + ": job 1 (job1) needs 16 GPUs; the cluster it may use has 8");
  sql(path, "UPDATE jobs SET spec = json_set(spec, '$.gpus', 2, '$.min_workers', 2, '$.max_workers', 2, "
            "'$.gpu_type', 'H100') WHERE idx = 1");
  CHECK(restore(path) == path + ": job 1 (job1) needs GPU type H100, which the cluster lacks");
}

TEST_CASE("restored state: an ended job's final record is checked too, and a refused file is left as it was") {
  scratch s;
  auto path = s.file("state.db");
  write_run(path);
  {
    state_journal j(path);
    auto e = queued(0, 2);
    e.status = saved_status::ended;
    e.record.gpus = 2;
    e.record.duration_s = 600;
    e.record.outcome = job_outcome::done;
    e.record.gpu_seconds = -3;
    j.put_job(e);
  }
  CHECK(restore(path) == path + ": job 0: record: gpu_seconds -3 is not a finite number >= 0");
  {
    state_journal j(path);
    CHECK(j.rows() > 0);
    CHECK(j.load().jobs.size() == 2);
  }
  sql(path, "UPDATE jobs SET record = json_set(record, '$.gpu_seconds', 1, '$.gpus', 0) WHERE idx = 0");
  CHECK(restore(path) == path + ": job 0: record: gpus 0 is not in 1..1000000");
}

TEST_CASE("restored state: servers an operator held stay held, a hold on a server the cluster lacks is dropped naming it") {
  scratch s;
  auto path = s.file("state.db");
  write_run(path);
  {
    state_journal j(path);
    j.put_server_mode("t1", "drain:disk swap");
    j.put_server_mode("t0", "cordon:");
    j.put_server_mode("t7", "drain:gone");
  }
  run_inputs inputs;
  live_world world;
  std::ostringstream log;
  auto c = small_cluster();
  auto st = open_serve_state(path, c, inputs, world, log);
  REQUIRE(st.restoring);
  REQUIRE(world.holds.size() == 2);
  CHECK(world.holds[0].server == "t0");
  CHECK(world.holds[0].kind == "cordon");
  CHECK(world.holds[0].reason.empty());
  CHECK(world.holds[1].server == "t1");
  CHECK(world.holds[1].kind == "drain");
  CHECK(world.holds[1].reason == "disk swap");
  CHECK(world.loaned.empty());  // holds are not loans
  CHECK(log.str().find("state " + path + ": server 't7' held (drain) is not a training server of this cluster: the "
                       "hold is dropped") != std::string::npos);
  // The dropped one's row is gone; a resume ("up") deletes a row too.
  st.journal.reset();
  world.journal.reset();
  state_journal j(path);
  j.put_server_mode("t0", "up");
  auto rows = j.load().server_modes;
  REQUIRE(rows.size() == 1);
  CHECK(rows[0] == std::pair<std::string, std::string>{"t1", "drain:disk swap"});
}

TEST_CASE("restored state: machines that joined the run are in the restarted cluster after the configured ones, a bad one refused naming the file") {
  scratch s;
  auto path = s.file("state.db");
  write_run(path);
  {
    state_journal j(path);
    j.put_joined({"x1", "V100", 2});
    j.put_joined({"x2", "V100", 8});
  }
  run_inputs inputs;
  live_world world;
  std::ostringstream log;
  auto c = small_cluster();
  auto st = open_serve_state(path, c, inputs, world, log);
  REQUIRE(st.restoring);
  auto machines = cluster_machines(c);
  REQUIRE(machines.size() == 4);
  CHECK(machines[2].name == "x1");
  CHECK(machines[2].id == 2);
  CHECK(machines[2].gpus == 2);
  CHECK(machines[3].name == "x2");
  CHECK(machines[3].gpus == 8);
  CHECK(log.str().find("machines that joined the run are in its cluster again: x1 (2 x V100), x2 (8 x V100)") !=
        std::string::npos);
  st.journal.reset();
  world.journal.reset();  // the file is opened again below: no handle may be left on it
  {
    state_journal j(path);
    j.put_joined({"x 3", "V100", 2});
  }
  CHECK(restore(path) == path + ": a machine that joined the run: server name holds byte 0x20 at byte 1: letters, "
                                "digits, '.', '_' and '-' only");
}

TEST_CASE("restored state: a machine that joined the run with a GPU type the run lacks is refused naming the file") {
  scratch s;
  auto path = s.file("state.db");
  write_run(path);
  {
    state_journal j(path);
    j.put_joined({"x1", "H100", 2});
  }
  CHECK(restore(path) == path + ": a machine that joined the run: server 'x1': GPU type H100 is none of this run's");
}

TEST_CASE("restored state: --join takes the cluster the file's run had, not a new inventory") {
  scratch s;
  auto path = s.file("state.db");
  {
    state_journal j(path);
    saved_run r;
    r.cluster = {"a0 V100x2 training", "a1 V100x2 training", "b0 T4x4 inference"};
    r.speedup = 10;
    r.start_unix_us = 1;
    j.put_run(r);
  }
  run_inputs inputs;
  live_world world;
  std::ostringstream log;
  auto c = small_cluster();
  auto st = open_serve_state(path, c, inputs, world, log, true);
  REQUIRE(st.restoring);
  CHECK(c.training.names == std::vector<std::string>{"a0", "a1"});
  CHECK(c.training.gpus_per_server == 2);
  CHECK(c.inference.names == std::vector<std::string>{"b0"});
  CHECK(c.inference.gpu_type == "T4");
  CHECK(cluster_fingerprint(c) == st.run.cluster);
}

TEST_CASE("restored state: a run carried on after a restart counts its wall time from the run's first start") {
  scratch s;
  auto path = s.file("state.db");
  write_run(path);  // the run first started at unix time 1 us
  auto c = small_cluster();
  run_inputs inputs;
  live_world world;
  std::ostringstream log;
  auto state = open_serve_state(path, c, inputs, world, log);
  REQUIRE(state.restoring);
  begin_serve_state(state, world);
  CHECK(world.run_start_unix_us == 1);  // not this serve's start: summary.json's sim_wall_s spans the run

  auto fresh_path = s.file("fresh.db");
  auto fresh_c = small_cluster();
  run_inputs fresh_inputs;
  live_world fresh;
  auto first = open_serve_state(fresh_path, fresh_c, fresh_inputs, fresh, log);
  begin_serve_state(first, fresh);
  CHECK(fresh.run_start_unix_us == first.run.start_unix_us);
  CHECK(fresh.run_start_unix_us > 1);
}
