// The command line on bad input: a one-line error naming the place, a non-zero exit, no crash.
#include <doctest/doctest.h>

#include <fstream>

#include "tests/runtime/cli_support.hpp"

using namespace aryl::test;

TEST_CASE("a missing trace file is a one-line error naming the file") {
  check_one_line_error(run("simulate --trace /nonexistent/jobs.csv" + quiet), "/nonexistent/jobs.csv");
}

TEST_CASE("a malformed trace row is a one-line error naming file, line and column") {
  auto path = write_temp("bad.csv", "job_id,submit_s,gpus,duration_s\na,0,1,10\nb,5,two,10\n");
  check_one_line_error(run("simulate --trace " + path + quiet), path + ":3:");
}

TEST_CASE("an unknown config key on the command line is a one-line error") {
  check_one_line_error(run("simulate --set cluster.training.nodes=4" + quiet), "unknown config key 'cluster.training.nodes'");
}

TEST_CASE("a bad config value is a one-line error") {
  check_one_line_error(run("simulate --placement scattered" + quiet), "--placement: placement: 'scattered' is not one of");
}

TEST_CASE("a negative server count on the command line is a one-line error, not ignored") {
  check_one_line_error(run("simulate --servers -3" + quiet), "--servers: cluster.training.servers: -3 is outside [0, 100000]");
}

TEST_CASE("an unknown option is a usage error") {
  auto r = run("simulate --frobnicate");
  CHECK(r.code == 2);
}

TEST_CASE("a job larger than the cluster is refused before the run") {
  auto path = write_temp("big.csv", "job_id,submit_s,gpus,duration_s\nhuge,0,64,10\n");
  check_one_line_error(run("simulate --trace " + path + " --servers 2 --set cluster.inference.servers=0" + quiet),
                       "needs 64 GPUs");
}

TEST_CASE("malformed solver input is a one-line error with exit code 2") {
  auto path = write_temp("bad.json", "{\"capacity\": -3, \"classes\": []}");
  auto r = run("solve mckp --in " + path);
  CHECK(r.code == 2);
  CHECK(r.output.find('\n') == r.output.size() - 1);
}

TEST_CASE("a valid small run exits 0 and writes every output file") {
  auto r = run("simulate --set synthetic.jobs=50" + quiet);
  CHECK_MESSAGE(r.code == 0, r.output);
  for (auto* f : {"summary.json", "jobs.csv", "timeline.csv", "events.log"})
    CHECK(std::ifstream(std::string("/tmp/aryl-cli-out/") + f).good());
}

TEST_CASE("a client or agent without --port or ARYL_ADDR is a one-line error naming both") {
  const std::string no_env = "env -u ARYL_ADDR -u ARYL_TOKEN_FILE ";
  check_one_line_error(run("status --token-file /nonexistent/token", no_env),
                       "status: no scheduler address: give --port (and --host) or set ARYL_ADDR=HOST:PORT");
  check_one_line_error(run("agent --name t0 --work-dir /tmp/aryl-cli-agent --token-file /nonexistent/token", no_env),
                       "agent: no scheduler address");
}

TEST_CASE("a malformed ARYL_ADDR is a one-line error quoting it") {
  for (const char* addr : {"localhost", "127.0.0.1:", ":7000", "127.0.0.1:70000", "127.0.0.1:7x"})
    check_one_line_error(run("cancel 3", std::string("env -u ARYL_TOKEN_FILE ARYL_ADDR=") + addr + " "),
                         std::string("cancel: ARYL_ADDR '") + addr + "' is not HOST:PORT");
}

TEST_CASE("without --token-file a client takes ARYL_TOKEN_FILE, and without either says so") {
  check_one_line_error(run("show 1", "env -u ARYL_TOKEN_FILE ARYL_ADDR=127.0.0.1:9 "),
                       "show: no token: give --token-file or set ARYL_TOKEN_FILE, or present a TLS client "
                       "certificate (--tls-cert) whose name is an identity");
  // The variable's file is the one read (and refused here, by its name).
  check_one_line_error(run("submit --gpus 1", "ARYL_ADDR=127.0.0.1:9 ARYL_TOKEN_FILE=/nonexistent/aryl-token "),
                       "/nonexistent/aryl-token");
}

TEST_CASE("serve above the speedup measured faithful warns, naming the limit and where it is measured") {
  auto r = run("serve --no-workload --speedup 50 --token-file /nonexistent/aryl-token --out /tmp/aryl-cli-out");
  CHECK(r.code == 2);
  CHECK_MESSAGE(r.output.find("warning: --speedup 50: live timings were measured within 5% of the simulation's up "
                              "to 20x") != std::string::npos,
                r.output);
  auto quiet_serve = run("serve --no-workload --speedup 20 --token-file /nonexistent/aryl-token --out /tmp/aryl-cli-out");
  CHECK_MESSAGE(quiet_serve.output.find("warning") == std::string::npos, quiet_serve.output);
}

TEST_CASE("aryl demand --help says that serve adds inference.headroom to the servers asked for") {
  auto r = run("demand --help");
  CHECK(r.code == 0);
  CHECK_MESSAGE(r.output.find("inference.headroom") != std::string::npos, r.output);
  CHECK_MESSAGE(r.output.find("10%") != std::string::npos, r.output);
}

TEST_CASE("a one-GPU job the cluster cannot hold is said to need 1 GPU, not 1 GPUs") {
  auto path = write_temp("one.csv", "job_id,submit_s,gpus,duration_s,gpu_type,elastic\na,0,1,100,T4,0\n");
  check_one_line_error(run("simulate --trace " + path + quiet), "job 0 (a) needs 1 GPU of type T4; the cluster it may use has 0");
}
