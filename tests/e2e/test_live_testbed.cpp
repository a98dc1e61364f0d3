// Live mode end to end: scripts/testbed.sh runs `aryl serve` and one `aryl agent` per server on
// loopback; emulated workers are real processes. Each test checks that every job completes
// exactly once, that loans and reclaims happen, and that the testbed leaves no process and no
// bound port behind.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <set>

#include "tests/e2e/run_helpers.hpp"

using namespace aryl;

namespace {

struct testbed_run {
  int code = -1;
  std::string output;
  std::string dir;
};

testbed_run run_testbed(const std::string& name, const std::string& args) {
  testbed_run r;
  r.dir = test::temp_dir("testbed-" + name);
  std::string cmd = std::string(ARYL_SOURCE_DIR) + "/scripts/testbed.sh --dir " + r.dir + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p);
  std::array<char, 4096> buf{};
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) r.output.append(buf.data(), n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

/// Job ids of jobs.csv, each row once; fails the test on a repeated id.
std::set<std::string> completed_jobs(const std::string& jobs_csv) {
  std::set<std::string> ids;
  std::istringstream in(test::slurp(jobs_csv));
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    auto id = line.substr(0, line.find(','));
    CHECK_MESSAGE(ids.insert(id).second, "job " << id << " completed twice");
  }
  return ids;
}

size_t count_lines_with(const std::string& text, const std::string& needle) {
  size_t n = 0, at = 0;
  while ((at = text.find(needle, at)) != std::string::npos) {
    ++n;
    at += needle.size();
  }
  return n;
}

/// Every process the testbed started is gone, and its port takes no connection.
void check_cleaned_up(const testbed_run& r) {
  std::istringstream pids(test::slurp(r.dir + "/pids"));
  int pid = 0;
  std::string role;
  int seen = 0;
  while (pids >> pid >> role) {
    std::getline(pids, role);
    ++seen;
    CHECK_MESSAGE(kill(pid, 0) != 0, "process " << pid << " still runs");
  }
  CHECK(seen > 0);
  int port = std::stoi(test::slurp(r.dir + "/port"));
  int s = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(s >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  CHECK_MESSAGE(connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0, "port " << port << " still bound");
  close(s);
}

} // namespace

TEST_CASE("live: a Philly day on 4 training and 4 inference agents completes every job once, with loans and reclaims") {
  // VC 11cb48 on 2017-12-10: 109 jobs of 1-2 GPUs, at most 1.4 h long; one day in about 45 s.
  // Demand: nothing, then 3 servers at 20,000 s (with 10% headroom: all 4), nothing again,
  // all 4 at 60,000 s.
  auto demand = test::temp_dir("testbed-demand") + ".csv";
  std::ofstream(demand) << "t_s,servers_needed\n0,0\n20000,3\n40000,0\n60000,4\n";
  auto out = test::temp_dir("testbed-philly-out");
  auto r = run_testbed("philly", "--training 4 --inference 4 -- --trace " + std::string(ARYL_SOURCE_DIR) +
                                     "/../shared/traces/philly-sia/philly.csv --trace-format philly"
                                     " --set trace.vc=11cb48 --set trace.from=2017-12-10 --set trace.to=2017-12-11"
                                     " --speedup 2000 --set run.check_invariants=true --set inference.trace=" +
                                     demand + " --out " + out);
  REQUIRE_MESSAGE(r.code == 0, r.output);
  auto events = test::slurp(out + "/events.log");
  CHECK(completed_jobs(out + "/jobs.csv").size() == 109);
  CHECK(count_lines_with(events, "scheduler submit") == 109);
  CHECK(count_lines_with(events, "scheduler loan") >= 2);
  CHECK(count_lines_with(events, "scheduler reclaim") >= 2);
  CHECK(count_lines_with(events, "scheduler return") >= 2);
  CHECK(r.output.find("109 / 109") != std::string::npos);
  check_cleaned_up(r);
}

TEST_CASE("live: a reclaim preempts jobs on loaned servers, and the servers return once their workers stopped") {
  // The small trace on 2 + 2 servers: jobs spill onto the loaned inference servers, which are
  // all taken back at 100 s.
  auto demand = test::temp_dir("testbed-demand-small") + ".csv";
  std::ofstream(demand) << "t_s,servers_needed\n0,0\n100,2\n";
  auto out = test::temp_dir("testbed-small-out");
  auto r = run_testbed("small", "--training 2 --inference 2 -- --trace " + std::string(ARYL_SOURCE_DIR) +
                                    "/tests/e2e/data/small.csv --speedup 50 --set inference.interval_s=30"
                                    " --set run.check_invariants=true --set inference.trace=" + demand +
                                    " --out " + out);
  REQUIRE_MESSAGE(r.code == 0, r.output);
  auto events = test::slurp(out + "/events.log");
  CHECK(completed_jobs(out + "/jobs.csv").size() == 8);
  CHECK(count_lines_with(events, "scheduler reclaim") == 1);
  CHECK(count_lines_with(events, "its loaned server is reclaimed") >= 1);
  // The return waits for the stopped workers' exits: it comes strictly after the reclaim.
  auto reclaim_at = std::stod(events.substr(events.rfind('\n', events.find("scheduler reclaim")) + 1));
  auto return_at = std::stod(events.substr(events.rfind('\n', events.find("scheduler return")) + 1));
  CHECK(return_at > reclaim_at);
  check_cleaned_up(r);
}
