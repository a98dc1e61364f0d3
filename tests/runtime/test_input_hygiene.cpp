// Inputs that reached outputs, logs and errors unchecked: control characters, duplicate keys,
// numbers of the wrong kind, ignored trailing text, unbounded files; and a long outage that
// read as a stall. Each is now a one-line error naming the file, line or key, or a correct run.
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "runtime/inputs/csv_field.hpp"
#include "runtime/inputs/trace_reader.hpp"
#include "tests/runtime/cli_support.hpp"

using namespace aryl::test;

namespace {

const std::string one_job = "job_id,submit_s,gpus,duration_s\na,0,1,100\n";

/// A run of one job on `servers` training servers with the fault plan `plan`.
result run_plan(const std::string& name, const std::string& plan, const std::string& extra = "") {
  auto trace = write_temp(name + ".csv", one_job);
  auto path = write_temp(name + ".yaml", plan);
  return run("simulate --trace " + trace + " --faults " + path + " --set cluster.inference.servers=0 " + extra +
             " --quiet --out /tmp/aryl-cli-out-" + name);
}

} // namespace

// --- CSV written per RFC 4180 -------------------------------------------------------------

TEST_CASE("a CSV field written by append_field reads back whole through the project's CSV reader") {
  const std::vector<std::string> fields = {"plain", "a,b", "say \"hi\"", " padded ", "\tlead", "x,\"y\",z", "", "\"\""};
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) line += ',';
    aryl::csv::append_field(line, fields[i]);
  }
  aryl::csv::field_splitter split;
  REQUIRE(split.split(line));
  REQUIRE(split.fields().size() == fields.size());
  for (size_t i = 0; i < fields.size(); ++i) CHECK(std::string(split.fields()[i]) == fields[i]);
}

// --- control characters -------------------------------------------------------------------

TEST_CASE("control characters in a fault plan value are escaped in its one-line error") {
  auto r = run_plan("ctl-plan", "faults:\n  - {at: 0, server_crash: \"t9\\e[31m\\nforged: line\"}\n");
  check_one_line_error(r, "'t9\\x1b[31m\\nforged: line' is not a server");
}

TEST_CASE("control characters in a config key are escaped in its one-line error") {
  check_one_line_error(run("simulate --set \"$(printf 'a\\rb=1')\"" + quiet), "unknown config key 'a\\rb'");
}

TEST_CASE("control characters in a trace path are escaped in its one-line error") {
  check_one_line_error(run("simulate --trace \"$(printf '/tmp/aryl-cli-no\\034such.csv')\"" + quiet),
                       "/tmp/aryl-cli-no\\x1csuch.csv: cannot open");
}

TEST_CASE("a trace job id holding a control character is refused naming the file and line") {
  auto path = write_temp("ctl-id.csv", "job_id,submit_s,gpus,duration_s\nok,0,1,100\n\"a\x1b[2Jb\",0,1,100\n");
  auto r = run("simulate --trace " + path + " --set cluster.inference.servers=0" + quiet);
  check_one_line_error(r, path + ":3: column 'job_id'");
  CHECK_MESSAGE(r.output.find("control character") != std::string::npos, r.output);
}

TEST_CASE("a job file name holding a newline is refused naming the file and line") {
  auto path = write_temp("ctl-job.yaml", "gpus: 1\nname: \"a\\nforged line\"\n");
  auto r = run("submit --file " + path + " --port 1 --token-file /nonexistent");
  check_one_line_error(r, path + ":2: name");
  CHECK_MESSAGE(r.output.find("control character") != std::string::npos, r.output);
}

TEST_CASE("a submitted --name holding a newline is refused before anything is sent") {
  auto r = run("submit --name \"$(printf 'a\\nb')\" --port 1 --token-file /nonexistent");
  check_one_line_error(r, "submit: --name");
  CHECK_MESSAGE(r.output.find("control character") != std::string::npos, r.output);
}

TEST_CASE("an agent --name holding a control character is refused before it dials") {
  auto r = run("agent --name \"$(printf 't0\\033')\" --port 1 --token-file /nonexistent --work-dir /tmp/aryl-cli-agent");
  check_one_line_error(r, "agent: --name");
  CHECK_MESSAGE(r.output.find("control character") != std::string::npos, r.output);
}

// --- a long outage is not a stall ---------------------------------------------------------

TEST_CASE("a server back after a 40-day outage is not a stall, beside an inference server") {
  // The only training server is down from t=0 for 40 days; the inference server's demand
  // timer ticks all along. The job runs once the server is back.
  auto trace = write_temp("outage.csv", "job_id,submit_s,gpus,duration_s\na,10,8,100\n");
  auto plan = write_temp("outage.yaml", "faults:\n  - {at: 0, server_crash: t0, down_for: 3456000}\n");
  auto r = run("simulate --servers 1 --set cluster.inference.servers=1 --trace " + trace + " --faults " + plan +
               " --quiet --out /tmp/aryl-cli-out-outage");
  CHECK_MESSAGE(r.code == 0, r.output);
  auto jobs = read_file("/tmp/aryl-cli-out-outage/jobs.csv");
  CHECK_MESSAGE(jobs.find(",done,") != std::string::npos, jobs);
}

TEST_CASE("a cluster quiet with no return pending is still a stall") {
  // The same outage for good: nothing can ever run the job.
  auto trace = write_temp("outage-forever.csv", "job_id,submit_s,gpus,duration_s\na,10,8,100\n");
  auto plan = write_temp("outage-forever.yaml", "faults:\n  - {at: 0, server_crash: t0}\n");
  auto r = run("simulate --servers 1 --set cluster.inference.servers=1 --set run.stall_limit_s=86400 --trace " +
               trace + " --faults " + plan + " --quiet --out /tmp/aryl-cli-out-outage-forever");
  CHECK(r.code == 3);
  CHECK_MESSAGE(r.output.find("stalled") != std::string::npos, r.output);
}

// --- duplicate keys -----------------------------------------------------------------------

TEST_CASE("a key given twice is an error naming the file, line and key") {
  auto config = write_temp("dup-config.yaml", "cluster:\n  training:\n    servers: 2\n    servers: 3\n");
  check_one_line_error(run("simulate --config " + config + quiet), config + ":4: duplicate key 'cluster.training.servers'");
  check_one_line_error(run_plan("dup-plan", "faults:\n  - {at: 1,\n     at: 2, surge: 0}\n"),
                       ":3: duplicate key 'faults[0].at'");
  auto job = write_temp("dup-job.json", "{\"name\": \"a\",\n \"name\": \"b\", \"gpus\": 1}\n");
  check_one_line_error(run("submit --file " + job + " --port 1 --token-file /nonexistent"),
                       job + ":2: duplicate key 'name'");
}

// --- whole numbers ------------------------------------------------------------------------

TEST_CASE("a fraction where a fault plan needs a whole number is refused naming the key") {
  check_one_line_error(run_plan("frac-crash", "faults:\n  - {at: 1, worker_crash: 0.5}\n"),
                       ":2: worker_crash must be a whole number");
  check_one_line_error(run_plan("frac-surge", "faults:\n  - {at: 1, surge: 2.7}\n"), ":2: surge must be a whole number");
  check_one_line_error(run_plan("frac-ckpt", "faults:\n  - {at: 1, checkpoint: 1.5, fail: true}\n"),
                       ":2: checkpoint must be a whole number");
}

// --- what a plan or job file says and the run would ignore --------------------------------

TEST_CASE("a fault on a job the workload does not have is refused naming the line") {
  check_one_line_error(run_plan("no-job", "faults:\n  - {at: 1, worker_crash: 5}\n"),
                       ":2: worker_crash: job 5 does not exist (the workload has jobs 0..0)");
  check_one_line_error(run_plan("no-job-ckpt", "faults:\n  - {at: 1, checkpoint: 1, slow_s: 5}\n"),
                       ":2: checkpoint: job 1 does not exist");
}

TEST_CASE("a fault plan's unknown top-level key is refused naming it") {
  check_one_line_error(run_plan("plan-extra", "faults: []\nfault:\n  - {at: 1, surge: 0}\n"),
                       ":2: unknown top-level key 'fault'");
}

TEST_CASE("a second YAML document in a fault plan is refused naming the line where it starts") {
  check_one_line_error(run_plan("plan-2docs", "faults: []\n---\nfaults:\n  - {at: 1, surge: 0}\n"),
                       ":2: a second YAML document");
}

TEST_CASE("text after a JSON job file's object is refused naming the line") {
  auto job = write_temp("job-trailing.json", "{\"name\": \"a\", \"gpus\": 1}\n{\"gpus\": 64}\n");
  auto r = run("submit --file " + job + " --port 1 --token-file /nonexistent");
  check_one_line_error(r, job + ":2:");
}

TEST_CASE("a job file's priority that is not a whole number in range is refused naming the line") {
  auto word = write_temp("job-class.yaml", "name: a\npriority: high\n");
  check_one_line_error(run("submit --file " + word + " --port 1 --token-file /nonexistent"),
                       word + ":2: priority must be a whole number within +-1000000");
  auto big = write_temp("job-class-big.yaml", "name: a\npriority: 2000000\n");
  check_one_line_error(run("submit --file " + big + " --port 1 --token-file /nonexistent"),
                       big + ":2: priority must be a whole number");
}

TEST_CASE("a time limit that is not a duration is refused naming the flag, or the job file's line and key") {
  check_one_line_error(run("submit --time-limit 10min --port 1 --token-file /nonexistent -- /bin/true"),
                       "submit: --time-limit: '10min' is not a duration");
  check_one_line_error(run("submit --time-limit 0 --port 1 --token-file /nonexistent -- /bin/true"),
                       "submit: --time-limit: '0' must be more than 0 seconds");
  auto file = write_temp("job-limit.yaml", "name: a\ntime_limit: 1:99\n");
  check_one_line_error(run("submit --file " + file + " --port 1 --token-file /nonexistent"),
                       file + ":2: time_limit: '1:99' is not a duration");
  auto retries = write_temp("job-retries.yaml", "name: a\nmax_retries: 5000\n");
  check_one_line_error(run("submit --file " + retries + " --port 1 --token-file /nonexistent"),
                       retries + ":2: max_retries must be at most 1000");
}

TEST_CASE("a trace's time limit that is not a duration is refused naming the row and column") {
  auto trace = write_temp("limit-trace.csv", "job_id,submit_s,gpus,duration_s,time_limit\na,0,1,100,1:2:3:4\n");
  check_one_line_error(run("simulate --trace " + trace + " --quiet --out /tmp/aryl-cli-out-limit-trace"),
                       trace + ":2: column 'time_limit': '1:2:3:4' is not a duration");
}

// --- files that are not what they claim ---------------------------------------------------

TEST_CASE("a directory given to aryl solve --in is a clear error") {
  check_one_line_error(run("solve mckp --in /tmp"), "/tmp: is a directory");
}

TEST_CASE("YAML nested deeper than the limit is an error naming the line and the limit") {
  auto flow = write_temp("deep.yaml", std::string(20000, '['));
  check_one_line_error(run("simulate --config " + flow + quiet), flow + ":1: nested deeper than the YAML reader's limit");
  std::string block;
  for (int i = 0; i < 3000; ++i) block += std::string(2 * i, ' ') + "k" + std::to_string(i) + ":\n";
  auto nested = write_temp("deep-block.yaml", block);
  auto r = run("simulate --config " + nested + quiet);
  check_one_line_error(r, ": nested deeper than the YAML reader's limit");
  // The line where the limit was reached, hundreds of lines down.
  CHECK_MESSAGE(r.output.rfind("aryl: " + nested + ":4", 0) == 0, r.output);
}

TEST_CASE("a trace or demand file that never ends is refused, not read for ever") {
  auto start = std::chrono::steady_clock::now();
  check_one_line_error(run("simulate --trace /dev/zero" + quiet, "timeout 20 "), "/dev/zero: not a regular file");
  check_one_line_error(run("simulate --set inference.trace=/dev/zero" + quiet, "timeout 20 "),
                       "/dev/zero: not a regular file");
  // A pipe is read as it comes: a NUL byte ends it.
  check_one_line_error(run("simulate --trace /dev/stdin" + quiet, "cat /dev/zero | timeout 20 "),
                       "/dev/stdin:1: a NUL byte");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(15));
}

TEST_CASE("a header with more columns than the limit is refused at once") {
  // Distinct names, short enough to keep the line under the line-length limit.
  std::string header = "job_id,submit_s,gpus,duration_s";
  for (int i = 0; i < 200000; ++i) {
    header += ',';
    for (int n = i; n > 0 || header.back() == ','; n /= 36) header += "0123456789abcdefghijklmnopqrstuvwxyz"[n % 36];
  }
  auto path = write_temp("wide.csv", header + "\n");
  auto start = std::chrono::steady_clock::now();
  check_one_line_error(run("simulate --trace " + path + quiet), path + ":1: 200004 columns, more than");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(3));
}
