// The emulated worker (runtime/node/worker.hpp), run as the aryl_test_worker program the
// way an agent runs it: environment in, progress lines on stdout, checkpoint file, exit code.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/node/agent.hpp"
#include "runtime/node/processes.hpp"
#include "runtime/node/worker.hpp"
#include "tests/live/fake_scheduler.hpp"

using namespace aryl::live;
using namespace aryl::live::test;

namespace {

/// The test's environment without ARYL_* variables, plus `vars`.
std::vector<std::string> worker_env(const std::map<std::string, std::string>& vars) {
  std::vector<std::string> env;
  for (const auto& kv : current_environment())
    if (kv.rfind("ARYL_", 0) != 0) env.push_back(kv);
  for (const auto& [k, v] : vars) env.push_back(k + "=" + v);
  return env;
}

/// The usual variables of a single-rank job checkpointing into `dir`.
std::map<std::string, std::string> job_vars(const std::filesystem::path& dir, double work_s,
                                            double rate) {
  return {{"ARYL_JOB_ID", "3"},           {"ARYL_RANK", "0"},
          {"ARYL_WORLD_SIZE", "1"},       {"ARYL_CHECKPOINT_DIR", dir.string()},
          {"ARYL_WORK_S", std::to_string(work_s)}, {"ARYL_RATE", std::to_string(rate)}};
}

/// A started aryl_test_worker (killed and reaped by the child_process destructor if the
/// test ends early) with its stdout read line by line and its stderr in a file.
class worker_process {
 public:
  worker_process(const std::map<std::string, std::string>& vars, const std::filesystem::path& dir)
      : stderr_path_(dir / "stderr.txt") {
    err_fd_ = ::open(stderr_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    proc_ = child_process::spawn({{ARYL_TEST_WORKER}, worker_env(vars), err_fd_, true, std::nullopt, {}, {}});
  }
  ~worker_process() { ::close(err_fd_); }
  worker_process(const worker_process&) = delete;
  worker_process& operator=(const worker_process&) = delete;

  /// The next stdout line; nullopt at end of output or after `timeout`.
  std::optional<std::string> next_line(ms timeout = 5000ms) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (const auto nl = buf_.find('\n'); nl != std::string::npos) {
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return line;
      }
      pollfd p{proc_.stdout_fd(), POLLIN, 0};
      if (::poll(&p, 1, remaining_ms(deadline)) != 1) return std::nullopt;
      char chunk[4096];
      const ssize_t n = ::read(proc_.stdout_fd(), chunk, sizeof chunk);
      if (n <= 0) return std::nullopt;
      buf_.append(chunk, static_cast<size_t>(n));
    }
  }

  /// The next line that is a progress report.
  std::optional<aryl::wire::progress> next_progress(ms timeout = 5000ms) {
    while (auto line = next_line(timeout)) {
      aryl::wire::progress p;
      if (parse_progress_line(*line, p)) return p;
    }
    return std::nullopt;
  }

  /// The last progress report before the end of the output.
  std::optional<aryl::wire::progress> last_progress() {
    std::optional<aryl::wire::progress> last;
    while (auto p = next_progress()) last = p;
    return last;
  }

  child_process& proc() { return proc_; }
  std::string stderr_text() const { return read_file(stderr_path_); }

 private:
  std::filesystem::path stderr_path_;
  int err_fd_ = -1;
  child_process proc_;
  std::string buf_;
};

} // namespace

TEST_CASE("live worker: runs to completion, exits 0, and its final checkpoint holds all the work") {
  scratch_dir dir;
  worker_process w(job_vars(dir.path(), 0.3, 3.0), dir.path());  // ~0.1 s of wall clock
  const auto last = w.last_progress();
  CHECK(w.proc().wait() == exit_status{0, 0});
  REQUIRE(last);
  CHECK(last->work_done == doctest::Approx(0.3));
  const auto c = read_worker_checkpoint(dir.path().string());
  CHECK(c.work_done >= 0.3);
  CHECK(c.step == last->step);
}

TEST_CASE("live worker: prints each step once, so a reader counting launches by a step that does not grow sees one") {
  // 0.1 s of wall clock: the tick at 100 ms both prints and finishes the work, the case
  // where the final line used to repeat that tick's step.
  for (int run = 0; run < 3; ++run) {
    scratch_dir dir;
    worker_process w(job_vars(dir.path(), 0.3, 3.0), dir.path());
    std::vector<uint64_t> steps;
    while (const auto p = w.next_progress()) steps.push_back(p->step);
    CHECK(w.proc().wait() == exit_status{0, 0});
    REQUIRE(steps.size() >= 2);
    for (size_t i = 1; i < steps.size(); ++i) CHECK(steps[i] > steps[i - 1]);
    CHECK(steps.back() == read_worker_checkpoint(dir.path().string()).step);
  }
}

TEST_CASE("live worker: waits for its work in ticks of 50 ms to the end, never spinning") {
  scratch_dir dir;
  worker_process w(job_vars(dir.path(), 1.0, 2.0), dir.path());  // 0.5 s of wall clock
  w.last_progress();
  CHECK(w.proc().wait() == exit_status{0, 0});
  // A step a tick: 10 ticks of 50 ms (one more if the last is cut short). A worker that
  // stops sleeping at half its work takes thousands of steps in the other half.
  const auto c = read_worker_checkpoint(dir.path().string());
  CHECK(c.work_done == doctest::Approx(1.0));
  CHECK(c.step <= 12);
}

TEST_CASE("live worker: SIGTERM mid-run writes a checkpoint and exits 143") {
  scratch_dir dir;
  worker_process w(job_vars(dir.path(), 1000.0, 1.0), dir.path());
  std::optional<aryl::wire::progress> p;
  while ((p = w.next_progress()) && p->step < 2) {}
  REQUIRE(p);
  w.proc().signal_group(SIGTERM);
  // The last line printed: a stop right after a tick's line adds none (a step prints once).
  auto last = p;
  if (auto more = w.last_progress()) last = more;
  CHECK(w.proc().wait() == exit_status{worker_preempted_exit, 0});
  const auto c = read_worker_checkpoint(dir.path().string());
  CHECK(c.work_done > 0);
  CHECK(c.work_done < 1000.0);
  CHECK(c.step >= 2);
  CHECK(last->step == c.step);
}

TEST_CASE("live worker: a checkpoint's step is printed before a SIGKILL can cut the run, so its resumption reads as a new launch") {
  // A checkpoint every tick and a line every other tick: a checkpoint written at a tick
  // without a line, then a SIGKILL, used to leave the checkpoint a step past the last line,
  // and the resumed run's first line (at the checkpoint's step) read as the same launch.
  for (int run = 0; run < 6; ++run) {
    scratch_dir dir;
    auto vars = job_vars(dir.path(), 1000.0, 1.0);
    vars["ARYL_CHECKPOINT_INTERVAL_S"] = "0.04";
    worker_process w(vars, dir.path());
    std::optional<aryl::wire::progress> p;
    while ((p = w.next_progress()) && p->step < 3) {}
    REQUIRE(p);
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + 15 * run));  // cut at various points of a tick
    w.proc().signal_group(SIGKILL);
    auto last = p;
    if (auto more = w.last_progress()) last = more;
    w.proc().wait();
    const auto c = read_worker_checkpoint(dir.path().string());
    CHECK_MESSAGE(c.step <= last->step, "run " << run << ": checkpoint at step " << c.step << ", last line at step " << last->step);
  }
}

TEST_CASE("live worker: a second run resumes from the first run's checkpoint") {
  scratch_dir dir;
  worker_checkpoint first;
  {
    worker_process w(job_vars(dir.path(), 1000.0, 1.0), dir.path());
    std::optional<aryl::wire::progress> p;
    while ((p = w.next_progress()) && p->step < 2) {}
    REQUIRE(p);
    w.proc().signal_group(SIGTERM);
    REQUIRE(w.proc().wait() == exit_status{worker_preempted_exit, 0});
    first = read_worker_checkpoint(dir.path().string());
  }
  // Second run: 0.2 work-seconds left at rate 2, ~0.1 s.
  worker_process w(job_vars(dir.path(), first.work_done + 0.2, 2.0), dir.path());
  const auto resumed = w.next_progress();
  REQUIRE(resumed);
  CHECK(resumed->work_done == doctest::Approx(first.work_done));
  CHECK(resumed->step == first.step);
  const auto last = w.last_progress();
  CHECK(w.proc().wait() == exit_status{0, 0});
  REQUIRE(last);
  CHECK(last->step > first.step);
  const auto done = read_worker_checkpoint(dir.path().string());
  CHECK(done.work_done == doctest::Approx(first.work_done + 0.2));
  CHECK(done.step > first.step);
}

TEST_CASE("live worker: only rank 0 prints progress and writes the checkpoint") {
  scratch_dir dir;
  auto vars = job_vars(dir.path(), 0.2, 2.0);
  vars["ARYL_RANK"] = std::string("1");
  vars["ARYL_WORLD_SIZE"] = std::string("2");
  worker_process w(vars, dir.path());
  CHECK_FALSE(w.next_line());
  CHECK(w.proc().wait() == exit_status{0, 0});
  CHECK_FALSE(std::filesystem::exists(dir.path() / emulated_checkpoint_name));
}

TEST_CASE("live worker: a missing or invalid environment variable exits 2 naming it") {
  scratch_dir dir;
  struct bad_case {
    std::string variable;
    std::optional<std::string> value;  // nullopt: unset
  };
  for (const bad_case& b : {bad_case{"ARYL_RATE", std::nullopt}, bad_case{"ARYL_RATE", "0"},
                            bad_case{"ARYL_WORK_S", "-1"}, bad_case{"ARYL_JOB_ID", "x"},
                            bad_case{"ARYL_RANK", "1"}, bad_case{"ARYL_CHECKPOINT_DIR", std::nullopt}}) {
    CAPTURE(b.variable);
    auto vars = job_vars(dir.path(), 1.0, 1.0);
    if (b.value) vars[b.variable] = *b.value;
    else vars.erase(b.variable);
    worker_process w(vars, dir.path());
    CHECK(w.proc().wait() == exit_status{worker_usage_exit, 0});
    const std::string err = w.stderr_text();
    CHECK(err.find(b.variable) != std::string::npos);
    CHECK(std::count(err.begin(), err.end(), '\n') == 1);
  }
}

TEST_CASE("live worker: a corrupt checkpoint exits 2 naming the file") {
  scratch_dir dir;
  std::ofstream(dir.path() / emulated_checkpoint_name) << "work_done=abc\n";
  worker_process w(job_vars(dir.path(), 1.0, 1.0), dir.path());
  CHECK(w.proc().wait() == exit_status{worker_usage_exit, 0});
  CHECK(w.stderr_text().find(emulated_checkpoint_name) != std::string::npos);
}

TEST_CASE("processes: the processes a killed agent's workers left are found by its marker and killed, and no others") {
  // A worker's child outlives the worker when the agent dies (the kernel kills only the direct
  // child): a restarted agent kills what carries its marker.
  const std::string mine = "t0@/tmp/aryl-marker-test-" + std::to_string(::getpid());
  auto start = [](const std::string& marker) {
    pid_t pid = ::fork();
    if (pid == 0) {
      ::setpgid(0, 0);
      const std::string var = std::string(aryl::live::agent_marker_variable) + "=" + marker;
      char* env[] = {const_cast<char*>(var.c_str()), nullptr};
      char* argv[] = {const_cast<char*>("/bin/sleep"), const_cast<char*>("30"), nullptr};
      ::execve("/bin/sleep", argv, env);
      ::_exit(127);
    }
    return pid;
  };
  const pid_t left = start(mine), other = start(mine + "-other");
  // Until both have exec'd, their environment is this process's.
  for (int i = 0; i < 200; ++i) {
    std::string env;
    std::ifstream in("/proc/" + std::to_string(left) + "/environ");
    std::getline(in, env, '\0');
    if (env.rfind(aryl::live::agent_marker_variable, 0) == 0) break;
    ::usleep(10000);
  }
  CHECK(aryl::live::kill_marked_processes(mine) == 1);
  int status = 0;
  REQUIRE(::waitpid(left, &status, 0) == left);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
  CHECK(::waitpid(other, &status, WNOHANG) == 0);  // another agent's: still running
  ::kill(other, SIGKILL);
  ::waitpid(other, &status, 0);
}
