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

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <thread>

#include "tests/e2e/run_helpers.hpp"
#include "tests/runtime/cli_support.hpp"

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
  auto ran = test::run_command(std::string(ARYL_SOURCE_DIR) + "/scripts/testbed.sh --dir " + r.dir + " " + args);
  r.code = ran.code;
  r.output = ran.output;
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
  // all taken back at 100 s. The demand then stays up for hours (the step function repeats
  // after its span), so a run that a loaded machine's process starts and stops stretch still
  // sees one reclaim. At 20x, the speed live mode keeps the simulation's timing at
  // (docs/live.md). Extras on every free GPU (the myopic scaling rule), so that the loaned
  // servers have jobs to stop.
  auto demand = test::temp_dir("testbed-demand-small") + ".csv";
  std::ofstream(demand) << "t_s,servers_needed\n0,0\n100,2\n20000,2\n";
  auto out = test::temp_dir("testbed-small-out");
  auto r = run_testbed("small", "--training 2 --inference 2 -- --trace " + std::string(ARYL_SOURCE_DIR) +
                                    "/tests/e2e/data/small.csv --speedup 20 --set inference.interval_s=30"
                                    " --set run.check_invariants=true --set inference.trace=" + demand +
                                    " --set scheduler.scale_horizon=end --set scheduler.rescale_margin_s=0"
                                    " --set scheduler.rescale_cooldown_s=0 --set scheduler.min_extra_efficiency=0"
                                    " --set scheduler.preempt_ratio=0 --set scheduler.base_room_to_grow=false"
                                    " --set scheduler.move_with_size=false --out " + out);
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

namespace {

/// Per job, its decisions in order without their times: "start workers=12 V100 [t0:4 t1:8]".
std::map<std::string, std::vector<std::string>> decisions_by_job(const std::string& events_log) {
  std::map<std::string, std::vector<std::string>> out;
  std::istringstream in(events_log);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string t, actor, what, job;
    f >> t >> actor >> what >> job;
    if (actor != "scheduler" || (what != "start" && what != "rescale" && what != "preempt" && what != "finish"))
      continue;
    std::string rest;
    std::getline(f, rest);
    out[job].push_back(what + rest.substr(0, rest.find(" | ")));
  }
  return out;
}

double summary_number(const std::string& json, const std::string& key) {
  auto at = json.find("\"" + key + "\":");
  REQUIRE(at != std::string::npos);
  return std::stod(json.substr(at + key.size() + 3));
}

} // namespace

TEST_CASE("live: serve with emulated workers makes the simulation's decisions, with mean JCT within 2%") {
  // The same trace, cluster and config through `simulate` and through `serve` at 2x. The
  // scheduler decides from its own model in both; only when jobs really finish differs
  // (process start, stop and exit reports take real milliseconds, which the speedup multiplies
  // into simulated seconds), which must not change any decision here and costs at most 2% of
  // mean JCT. (At 5x, measured on one machine: 1.9-2.2%; at 2x, 0.8%.) small.csv submits two
  // jobs at 0 s: both must reach the first round, as in simulated time.
  //
  // The scenario's margin is a few wall seconds: in simulation, job b (or a) ending 10 s (15 s)
  // later than modelled changes g's decisions (scripts/decision_margin.py), and one of b's
  // workers starting 6 s late (a wrapper's sleep, by hand) puts mean JCT 4.4% over; CI once saw
  // both (g, 5.1%) with the sanitizer build beside the test. Such a run is told apart from a
  // live mode that decides otherwise by running once more: the test fails when two runs in a
  // row miss, and reports each miss.
  auto trace = std::string(ARYL_SOURCE_DIR) + "/tests/e2e/data/small.csv";
  auto sim_out = test::temp_dir("same-decisions-sim");
  REQUIRE(std::system((std::string(ARYL_BINARY) + " simulate --quiet --trace " + trace +
                       " --servers 2 --set cluster.inference.servers=1 --out " + sim_out + " > /dev/null")
                          .c_str()) == 0);
  auto simulated = decisions_by_job(test::slurp(sim_out + "/events.log"));
  const auto sim_summary = test::slurp(sim_out + "/summary.json");
  double sim_jct = summary_number(sim_summary, "mean_jct_s");
  double sim_rescales = summary_number(sim_summary, "scale_ins") + summary_number(sim_summary, "scale_outs");
  REQUIRE(simulated.size() == 8);
  std::map<std::string, std::vector<std::string>> live;
  double live_jct = 0;
  std::string live_summary;
  for (int attempt = 1; attempt <= 2; ++attempt) {
    auto live_out = test::temp_dir("same-decisions-live");
    auto r = run_testbed("same-decisions", "--training 2 --inference 1 -- --trace " + trace +
                                               " --speedup 2 --out " + live_out);
    REQUIRE_MESSAGE(r.code == 0, r.output);
    check_cleaned_up(r);
    live = decisions_by_job(test::slurp(live_out + "/events.log"));
    live_summary = test::slurp(live_out + "/summary.json");
    live_jct = summary_number(live_summary, "mean_jct_s");
    std::string differ;
    for (auto& [job, seq] : simulated)
      if (live[job] != seq) differ += " " + job;
    if (differ.empty() && std::abs(live_jct / sim_jct - 1) <= 0.02) break;
    MESSAGE("run " << attempt << ": " << (differ.empty() ? "the same decisions" : "decisions differ for" + differ)
                   << ", live mean JCT " << live_jct << " s against simulated " << sim_jct << " s");
  }
  for (auto& [job, seq] : simulated) CHECK_MESSAGE(live[job] == seq, job);
  CHECK_MESSAGE(std::abs(live_jct / sim_jct - 1) <= 0.02, "live " << live_jct << " s, simulated " << sim_jct << " s");
  MESSAGE("rescales (scale-ins + scale-outs) "
          << summary_number(live_summary, "scale_ins") + summary_number(live_summary, "scale_outs") << " live, "
          << sim_rescales << " simulated; preemptions " << summary_number(live_summary, "preemptions"));
}

namespace {

/// The testbed's serve process, from DIR/pids ("PID serve").
int serve_pid(const std::string& dir) {
  std::istringstream pids(test::slurp(dir + "/pids"));
  int pid = 0;
  std::string role;
  while (pids >> pid >> role)
    if (role == "serve") return pid;
  return -1;
}

/// scripts/testbed.sh running in the background while the test acts as its clients. If the
/// test ends early, its serve is stopped (the testbed then stops the agents) and waited for.
class background_testbed {
 public:
  background_testbed(const std::string& name, const std::string& args) : dir_(test::temp_dir(name)) {
    auto cmd = std::string(ARYL_SOURCE_DIR) + "/scripts/testbed.sh --dir " + dir_ + " " + args + " 2>&1";
    pipe_ = popen(cmd.c_str(), "r");
    REQUIRE(pipe_);
    // The port file appears once serve listens; the run starts once the agents registered.
    for (int i = 0; i < 200 && port_.empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      port_ = test::slurp(dir_ + "/port");
    }
    REQUIRE(!port_.empty());
    port_.pop_back();  // newline
  }
  ~background_testbed() {
    if (!pipe_) return;
    if (int pid = serve_pid(dir_); pid > 0) kill(pid, SIGTERM);
    finish();
  }
  background_testbed(const background_testbed&) = delete;
  background_testbed& operator=(const background_testbed&) = delete;

  const std::string& dir() const { return dir_; }
  const std::string& port() const { return port_; }
  /// `aryl WHAT` against this testbed's serve.
  test::result client(const std::string& what) const {
    return test::run(what + " --port " + port_ + " --token-file " + dir_ + "/token");
  }
  /// Waits until the testbed ends: its exit code (-1 if killed by a signal) and output.
  test::result finish() {
    test::result r;
    std::array<char, 4096> buf{};
    while (size_t n = fread(buf.data(), 1, buf.size(), pipe_)) r.output.append(buf.data(), n);
    int rc = pclose(pipe_);
    pipe_ = nullptr;
    r.code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    return r;
  }

 private:
  std::string dir_, port_;
  FILE* pipe_ = nullptr;
};

} // namespace

TEST_CASE("live: aryl status and aryl demand work during a run, and the run still ends") {
  // Demand starts at nothing (every inference server is lent); a client then asks for both
  // back, which the run must turn into a reclaim.
  auto out = test::temp_dir("testbed-clients-out");
  auto demand = test::temp_dir("testbed-clients-demand") + ".csv";
  std::ofstream(demand) << "t_s,servers_needed\n0,0\n";
  background_testbed bed("testbed-clients", std::string("--training 2 --inference 2 -- --trace ") + ARYL_SOURCE_DIR +
                                                "/tests/e2e/data/small.csv --speedup 10 --set inference.trace=" +
                                                demand + " --out " + out);
  test::result status;
  for (int i = 0; i < 100; ++i) {  // refused until the run has started
    status = bed.client("status --json");
    if (status.code == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  REQUIRE_MESSAGE(status.code == 0, status.output);
  CHECK(status.output.find("\"servers\"") != std::string::npos);
  CHECK(status.output.find("\"name\": \"i1\"") != std::string::npos);
  auto pushed = bed.client("demand 2");
  CHECK_MESSAGE(pushed.code == 0, pushed.output);
  auto ended = bed.finish();
  REQUIRE_MESSAGE(ended.code == 0, ended.output);
  auto events = test::slurp(out + "/events.log");
  CHECK(events.find("inference push demand=2") != std::string::npos);
  CHECK(count_lines_with(events, "scheduler reclaim") >= 1);
  CHECK(completed_jobs(out + "/jobs.csv").size() == 8);
}

namespace {

/// jobs.csv rows by job id: the outcome column, found by its name in the header.
/// One column of jobs.csv by job id.
std::map<std::string, std::string> jobs_column(const std::string& jobs_csv, const std::string& name) {
  auto fields = [](const std::string& line) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
    return f;
  };
  std::map<std::string, std::string> out;
  std::istringstream in(test::slurp(jobs_csv));
  std::string line;
  std::getline(in, line);
  auto header = fields(line);
  auto col = static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  REQUIRE(col < header.size());
  while (std::getline(in, line)) {
    auto f = fields(line);
    REQUIRE(f.size() == header.size());
    out[f[0]] = f[col];
  }
  return out;
}

} // namespace

TEST_CASE("live: jobs submitted and cancelled by clients, and a stop signal, end with every job recorded once, "
          "a job without an estimate is marked unpredicted, logs fetches a worker's output, cancel says what it "
          "stopped, show and status --all tell each job's history") {
  // No workload of its own: serve takes only submitted jobs, until SIGTERM. One short job
  // runs to its end, one long job is cancelled while it runs, one (submitted without an
  // estimate, its address and token from the environment) is still running when the serve
  // process is told to stop; a job too large and an unknown job are refused by name.
  auto out = test::temp_dir("testbed-submit-out");
  background_testbed bed("testbed-submit", "--training 2 --inference 0 -- --no-workload --speedup 10 --out " + out);
  for (int i = 0; i < 100 && bed.client("status").code != 0; ++i)  // refused until the run has started
    std::this_thread::sleep_for(std::chrono::milliseconds(100));

  auto job_file = bed.dir() + "-short.yaml";
  std::ofstream(job_file) << "name: short\ngpus: 2\nexpected_duration_s: 20\n";
  auto short_job = bed.client("submit --file " + job_file);
  auto long_job = bed.client("submit --name long --gpus 4 --min-workers 2 --max-workers 8 --duration 100000");
  auto stays = test::run("submit --name stays --gpus 1",
                         "ARYL_ADDR=127.0.0.1:" + bed.port() + " ARYL_TOKEN_FILE=" + bed.dir() + "/token ");
  auto too_big = bed.client("submit --name too-big --gpus 100 --duration 10");
  CHECK_MESSAGE(short_job.code == 0, short_job.output);
  CHECK_MESSAGE(long_job.code == 0, long_job.output);
  CHECK_MESSAGE(stays.code == 0, stays.output);
  CHECK(short_job.output == "0\n");
  // Its minimum (2) is below its request: the default floor's note follows its id.
  CHECK(long_job.output == "1\naryl: job 1: runs on at least 4 workers, its request: scheduler.elastic_floor=request "
                           "raises min-workers 2 (set it to min for the minimum)\n");
  CHECK(stays.output == "2\n");
  CHECK(too_big.code == 2);
  CHECK_MESSAGE(too_big.output.find("job 'too-big'") != std::string::npos, too_big.output);
  auto unknown = bed.client("cancel 99");
  CHECK(unknown.code == 2);
  CHECK_MESSAGE(unknown.output.find("job 99: no such job") != std::string::npos, unknown.output);

  // The long job runs (the two servers hold all three), then is cancelled.
  test::result status;
  for (int i = 0; i < 100; ++i) {
    status = bed.client("status --json");
    if (status.output.find("\"name\": \"long\",\n      \"state\": \"running\"") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  CHECK_MESSAGE(status.output.find("\"name\": \"long\",\n      \"state\": \"running\"") != std::string::npos,
                status.output);
  // Its rank 0's output (progress lines: rank 0 writes them), fetched from the agent that runs it.
  auto output = bed.client("logs 1");
  CHECK_MESSAGE(output.code == 0, output.output);
  CHECK_MESSAGE(output.output.find("ARYL_PROGRESS work_done=") != std::string::npos, output.output);
  auto cancelled = bed.client("cancel 1");
  CHECK_MESSAGE(cancelled.code == 0, cancelled.output);
  CHECK_MESSAGE(cancelled.output.starts_with("cancelled job 1 (long): it was running on "), cancelled.output);
  CHECK_MESSAGE(cancelled.output.find("workers, now stopped\n") != std::string::npos, cancelled.output);
  auto all = bed.client("status --all --json");
  CHECK_MESSAGE(all.output.find("\"name\": \"long\",\n      \"state\": \"cancelled\"") != std::string::npos,
                all.output);
  CHECK_MESSAGE(all.output.find("\"predicted\": false") != std::string::npos, all.output);  // stays
  auto shown = bed.client("show 1");
  CHECK_MESSAGE(shown.output.find("JobId=1 Name=long State=cancelled") != std::string::npos, shown.output);
  CHECK_MESSAGE(shown.output.find("MinWorkers=2 MaxWorkers=8") != std::string::npos, shown.output);
  CHECK_MESSAGE(shown.output.find(" start ") != std::string::npos, shown.output);
  CHECK_MESSAGE(shown.output.find("cancel   workers=") != std::string::npos, shown.output);
  CHECK_MESSAGE(shown.output.find("cancelled by a client") != std::string::npos, shown.output);
  auto again = bed.client("cancel 1");
  CHECK(again.code == 2);
  CHECK_MESSAGE(again.output.find("job 1 (long) has already ended") != std::string::npos, again.output);
  // The short job (2 s of real time at 10x) finishes; then serve is told to stop.
  for (int i = 0; i < 150; ++i) {
    status = bed.client("status --json");
    if (status.output.find("\"short\"") == std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  CHECK_MESSAGE(status.output.find("\"short\"") == std::string::npos, status.output);
  int pid = serve_pid(bed.dir());
  REQUIRE(pid > 0);
  kill(pid, SIGTERM);
  auto ended = bed.finish();
  REQUIRE_MESSAGE(ended.code == 0, ended.output);
  auto rows = jobs_column(out + "/jobs.csv", "outcome");
  CHECK(rows == std::map<std::string, std::string>{{"0", "done"}, {"1", "cancelled"}, {"2", "cancelled"}});
  CHECK(jobs_column(out + "/jobs.csv", "estimated") == std::map<std::string, std::string>{{"0", "1"}, {"1", "1"}, {"2", "0"}});
  CHECK(jobs_column(out + "/jobs.csv", "duration_s").at("2") == "3600.000000");  // live.default_estimate_s
  auto summary = test::slurp(out + "/summary.json");
  CHECK(summary_number(summary, "jobs_submitted") == 3);
  CHECK(summary_number(summary, "jobs_completed") == 1);
  CHECK(summary_number(summary, "jobs_cancelled") == 2);
  auto events = test::slurp(out + "/events.log");
  CHECK(events.find("cancelled by a client") != std::string::npos);
  CHECK(events.find("the run was told to stop") != std::string::npos);
  CHECK(test::slurp(out + "/config.json").find("\"run.mode\": \"wallclock\"") != std::string::npos);
}
