// The node agent (runtime/node/agent.hpp) against a fake scheduler on loopback, with real
// worker processes.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "solvers/input_error.hpp"
#include "runtime/node/agent.hpp"
#include "runtime/node/gpu_detect.hpp"
#include "runtime/node/worker_log.hpp"
#include "runtime/node/processes.hpp"
#include "runtime/node/worker.hpp"
#include "tests/live/fake_scheduler.hpp"
#include "tests/live/local_listener.hpp"

using namespace aryl::live;
using namespace aryl::live::test;
namespace wire = aryl::wire;

namespace {

/// Fast timings so the whole suite stays short.
agent_options test_options(const fake_scheduler& s, const scratch_dir& dir) {
  agent_options o;
  o.port = s.port();
  o.token = "secret";
  o.name = "node-a";
  o.gpu_type = "A100";
  o.gpus = 4;
  o.pool = wire::pool_kind::inference;
  o.work_dir = (dir.path() / "agent").string();
  o.heartbeat_s = 0.05;
  o.reconnect_min_s = 0.02;
  o.reconnect_max_s = 0.1;
  o.shutdown_grace_s = 2.0;
  o.progress_interval_s = 0.1;
  o.worker_program = ARYL_TEST_WORKER;
  return o;
}

/// A launch of the emulated worker (empty command: the agent's worker program).
wire::launch emulated_launch(uint64_t job_id, double work_s, double rate) {
  wire::launch l;
  l.job_id = job_id;
  l.rank = 0;
  l.world_size = 1;
  l.gpus = {1, 3};
  l.work_s = work_s;
  l.rate = rate;
  return l;
}

/// A launch of `/bin/sh -c script`.
wire::launch shell_launch(uint64_t job_id, const std::string& script) {
  wire::launch l;
  l.job_id = job_id;
  l.command = {"/bin/sh", "-c", script};
  return l;
}

/// Launches job `job` as a `/bin/sh` worker that runs until stopped; its pid once it has
/// written it to its checkpoint folder, or -1.
pid_t start_looping_worker(fake_scheduler& s, const agent_options& o, uint64_t job) {
  const auto ckpt = std::filesystem::path(o.work_dir) / "checkpoints" / std::to_string(job);
  s.send(shell_launch(job, "echo $$ > \"$ARYL_CHECKPOINT_DIR/pid\"; while true; do sleep 0.01; done"));
  if (!eventually([&] { return std::filesystem::exists(ckpt / "pid") && !read_file(ckpt / "pid").empty(); }))
    return -1;
  return std::stoi(read_file(ckpt / "pid"));
}

/// True when this process has no child at all, running or zombie.
bool no_children() { return ::waitpid(-1, nullptr, WNOHANG) == -1 && errno == ECHILD; }

bool alive(uint32_t pid) { return ::kill(static_cast<pid_t>(pid), 0) == 0; }

} // namespace

TEST_CASE("live agent: progress lines are parsed, and other lines are not progress") {
  wire::progress p;
  REQUIRE(parse_progress_line("ARYL_PROGRESS work_done=1.5 step=30", p));
  CHECK(p.work_done == 1.5);
  CHECK(p.step == 30);
  CHECK(parse_progress_line("ARYL_PROGRESS step=2 work_done=0\r", p));
  CHECK(p.step == 2);
  CHECK_FALSE(parse_progress_line("ARYL_PROGRESS step=2", p));
  CHECK_FALSE(parse_progress_line("ARYL_PROGRESS work_done=-1 step=2", p));
  CHECK_FALSE(parse_progress_line("ARYL_PROGRESS work_done=nan step=2", p));
  CHECK_FALSE(parse_progress_line("ARYL_PROGRESSwork_done=1", p));
  CHECK_FALSE(parse_progress_line("loss=0.3", p));
}

TEST_CASE("live agent: says hello with its token, then registers its machine") {
  fake_scheduler s;
  scratch_dir dir;
  agent_runner agent(test_options(s, dir));
  REQUIRE(s.accept());
  const auto hello = s.receive_a<wire::hello>();
  REQUIRE(hello);
  CHECK(*hello == wire::hello{wire::peer_role::agent, "secret", "node-a"});
  s.send(wire::hello_ok{});
  const auto reg = s.receive_a<wire::register_>();
  REQUIRE(reg);
  // Its instance is 128 random bits in hex, the rest what the machine is.
  REQUIRE(reg->instance);
  CHECK(reg->instance->size() == 32);
  CHECK(reg->instance->find_first_not_of("0123456789abcdef") == std::string::npos);
  // Its version is the build's release, as `aryl --version` prints it (MAJOR.MINOR.PATCH).
  REQUIRE(reg->version);
  CHECK(std::count(reg->version->begin(), reg->version->end(), '.') == 2);
  CHECK(reg->version->find_first_not_of("0123456789.") == std::string::npos);
  auto machine = *reg;
  machine.instance.reset();
  machine.version.reset();
  CHECK(machine == wire::register_{"node-a", "A100", 4, wire::pool_kind::inference, {}});
  CHECK(s.skipped().empty());
  CHECK(agent.stop() == 0);
  CHECK(s.receive_a<wire::bye>());
}

TEST_CASE("live agent: heartbeats arrive with seq increasing by one from 1") {
  fake_scheduler s;
  scratch_dir dir;
  agent_runner agent(test_options(s, dir));
  REQUIRE(s.accept_agent());
  for (uint64_t seq = 1; seq <= 4; ++seq) {
    const auto hb = s.receive_a<wire::heartbeat>();
    REQUIRE(hb);
    CHECK(hb->seq == seq);
  }
}

TEST_CASE("live agent: a launched emulated worker reports progress, then exit code 0") {
  fake_scheduler s;
  scratch_dir dir;
  const auto o = test_options(s, dir);
  agent_runner agent(o);
  REQUIRE(s.accept_agent());
  s.send(emulated_launch(7, 1.0, 2.0));  // ~0.5 s
  const auto exit = s.receive_a<wire::exit_>();
  REQUIRE(exit);
  CHECK(*exit == wire::exit_{7, 0, 0, 0});
  std::vector<wire::progress> progress;
  for (const auto& m : s.skipped())
    if (auto* p = std::get_if<wire::progress>(&m)) progress.push_back(*p);
  // Rate limit 0.1 s over ~0.5 s: a few reports, not one per printed line, the last one final.
  REQUIRE(progress.size() >= 2);
  CHECK(progress.size() <= 8);
  for (size_t i = 1; i < progress.size(); ++i) CHECK(progress[i].work_done >= progress[i - 1].work_done);
  CHECK(progress.back().job_id == 7);
  CHECK(progress.back().rank == 0);
  CHECK(progress.back().work_done == doctest::Approx(1.0));
  // Checkpoint under work_dir/checkpoints/<job>, output in logs/<job>-<rank>.log.
  const std::filesystem::path work(o.work_dir);
  CHECK(read_worker_checkpoint((work / "checkpoints" / "7").string()).work_done == doctest::Approx(1.0));
  CHECK(read_file(work / "logs" / "7-0.log").find("ARYL_PROGRESS") != std::string::npos);
  CHECK(agent.stop() == 0);
  CHECK(no_children());
}

TEST_CASE("live agent: a worker gets the launch's environment, GPUs and checkpoint folder") {
  fake_scheduler s;
  scratch_dir dir;
  agent_runner agent(test_options(s, dir));
  REQUIRE(s.accept_agent());
  const auto ckpt = dir.path() / "ckpt-abs";
  auto l = shell_launch(9, "env > \"$ARYL_CHECKPOINT_DIR/env.txt\"; echo oops >&2");
  l.rank = 2;
  l.world_size = 4;
  l.gpus = {0, 2};
  l.checkpoint_dir = ckpt.string();
  l.rendezvous = "10.0.0.1:29500";
  l.work_s = 12.5;
  l.rate = 0.75;
  l.env = {{"EXTRA", "yes"}};
  s.send(l);
  const auto exit = s.receive_a<wire::exit_>();
  REQUIRE(exit);
  CHECK(*exit == wire::exit_{9, 2, 0, 0});
  const std::string env = read_file(ckpt / "env.txt");
  for (const char* line : {"ARYL_JOB_ID=9\n", "ARYL_RANK=2\n", "ARYL_WORLD_SIZE=4\n",
                           "CUDA_VISIBLE_DEVICES=0,2\n", "ARYL_RENDEZVOUS=10.0.0.1:29500\n",
                           "ARYL_WORK_S=12.5\n", "ARYL_RATE=0.75\n", "EXTRA=yes\n"}) {
    CAPTURE(line);
    CHECK(env.find(line) != std::string::npos);
  }
  CHECK(env.find("ARYL_CHECKPOINT_DIR=" + ckpt.string() + "\n") != std::string::npos);
  // stderr goes to the worker's log file.
  CHECK(read_file(std::filesystem::path(test_options(s, dir).work_dir) / "logs" / "9-2.log")
            .find("oops") != std::string::npos);
}

TEST_CASE("live agent: stop makes the job's emulated worker checkpoint and exit 143") {
  fake_scheduler s;
  scratch_dir dir;
  agent_runner agent(test_options(s, dir));
  REQUIRE(s.accept_agent());
  s.send(emulated_launch(4, 1000.0, 1.0));
  REQUIRE(s.receive_a<wire::progress>());
  s.send(wire::stop{4, 5.0});
  const auto exit = s.receive_a<wire::exit_>();
  REQUIRE(exit);
  CHECK(*exit == wire::exit_{4, 0, worker_preempted_exit, 0});
  CHECK(agent.stop() == 0);
  CHECK(no_children());
}

TEST_CASE("live agent: a worker that ignores SIGTERM is killed after the grace period") {
  fake_scheduler s;
  scratch_dir dir;
  agent_runner agent(test_options(s, dir));
  REQUIRE(s.accept_agent());
  s.send(shell_launch(5, "trap '' TERM; echo ARYL_PROGRESS work_done=0 step=0; "
                         "while :; do sleep 0.05; done"));
  REQUIRE(s.receive_a<wire::progress>());
  const auto sent = std::chrono::steady_clock::now();
  s.send(wire::stop{5, 0.3});
  const auto exit = s.receive_a<wire::exit_>();
  REQUIRE(exit);
  CHECK(*exit == wire::exit_{5, 0, 0, SIGKILL});
  CHECK(std::chrono::steady_clock::now() - sent >= 300ms);
  CHECK(agent.stop() == 0);
  CHECK(no_children());
}

TEST_CASE("live agent: a launch whose program cannot be executed reports exit code 127 and why") {
  fake_scheduler s;
  scratch_dir dir;
  agent_runner agent(test_options(s, dir));
  REQUIRE(s.accept_agent());
  wire::launch l;
  l.job_id = 6;
  l.command = {(dir.path() / "no-such-program").string()};
  s.send(l);
  const auto exit = s.receive_a<wire::exit_>();
  REQUIRE(exit);
  CHECK(exit->code == 127);
  REQUIRE(exit->reason);
  CHECK(exit->reason->find("cannot execute '" + l.command[0] + "'") == 0);
  CHECK(agent.stop() == 0);
  CHECK(agent.log().find("cannot execute") != std::string::npos);
}

TEST_CASE("live agent: a second launch of a running job rank is ignored") {
  fake_scheduler s;
  scratch_dir dir;
  agent_runner agent(test_options(s, dir));
  REQUIRE(s.accept_agent());
  s.send(emulated_launch(8, 1000.0, 1.0));
  REQUIRE(s.receive_a<wire::progress>());
  s.send(emulated_launch(8, 1000.0, 1.0));
  s.send(wire::stop{8, 5.0});
  REQUIRE(s.receive_a<wire::exit_>());
  // Two more heartbeats (0.1 s) without a second exit: only one worker ran.
  s.skipped().clear();
  REQUIRE(s.receive_a<wire::heartbeat>());
  REQUIRE(s.receive_a<wire::heartbeat>());
  for (const auto& m : s.skipped()) CHECK_FALSE(std::holds_alternative<wire::exit_>(m));
  CHECK(agent.stop() == 0);
  CHECK(agent.log().find("ignored: already running") != std::string::npos);
}

TEST_CASE("live agent: a launch of a newer generation stops the rank's older worker first, and each exit names its generation") {
  fake_scheduler s;
  scratch_dir dir;
  agent_runner agent(test_options(s, dir));
  REQUIRE(s.accept_agent());
  auto first = emulated_launch(8, 1000.0, 1.0);
  first.generation = 1;
  s.send(first);
  const auto p1 = s.receive_a<wire::progress>();
  REQUIRE(p1);
  CHECK(p1->generation == std::optional<uint64_t>{1});
  // The job's next assignment, with no stop between (the scheduler gave the first up).
  auto second = first;
  second.generation = 2;
  s.send(second);
  const auto old_exit = s.receive_a<wire::exit_>();
  REQUIRE(old_exit);
  CHECK(old_exit->generation == std::optional<uint64_t>{1});
  std::optional<wire::progress> p2;
  while ((p2 = s.receive_a<wire::progress>()) && p2->generation != std::optional<uint64_t>{2}) {}
  REQUIRE(p2);
  s.send(wire::stop{8, 5.0});
  const auto new_exit = s.receive_a<wire::exit_>();
  REQUIRE(new_exit);
  CHECK(new_exit->generation == std::optional<uint64_t>{2});
  CHECK(agent.stop() == 0);
  CHECK(agent.log().find("launch job 8 rank 0 of generation 2: pid") != std::string::npos);
  CHECK(no_children());
}

TEST_CASE("live agent: a register refused because another live agent holds its name stops its workers, which are "
          "listed as exited at its next registration") {
  fake_scheduler s;
  scratch_dir dir;
  const auto o = test_options(s, dir);
  agent_runner agent(o);
  REQUIRE(s.accept_agent());
  const pid_t pid = start_looping_worker(s, o, 14);
  REQUIRE(pid > 0);
  s.close_connection();
  const auto again = s.accept_agent();
  REQUIRE(again);
  CHECK(again->second.workers.size() == 1);
  s.send(wire::error{"server 'node-a' is held by a connected agent", std::string("name_held")});
  REQUIRE(eventually([&] { return ::kill(pid, 0) != 0; }));
  const auto third = s.accept_agent();
  REQUIRE(third);
  REQUIRE(third->second.workers.size() == 1);
  CHECK(third->second.workers[0].job_id == 14);
  CHECK(third->second.workers[0].exit_signal == std::optional<uint32_t>{SIGTERM});
  CHECK(agent.stop() == 0);
  CHECK(agent.log().find("displaced: another agent holds server node-a at the scheduler; SIGTERM to 1 worker(s)") !=
        std::string::npos);
}

TEST_CASE("live agent: a register refused for another reason leaves its workers running") {
  fake_scheduler s;
  scratch_dir dir;
  const auto o = test_options(s, dir);
  agent_runner agent(o);
  REQUIRE(s.accept_agent());
  const pid_t pid = start_looping_worker(s, o, 15);
  REQUIRE(pid > 0);
  s.close_connection();
  REQUIRE(s.accept_agent());
  s.send(wire::error{"unknown server 'node-a'"});
  const auto third = s.accept_agent();
  REQUIRE(third);
  REQUIRE(third->second.workers.size() == 1);
  CHECK_FALSE(third->second.workers[0].exit_code);
  CHECK(::kill(pid, 0) == 0);
  CHECK(agent.stop() == 0);
}

TEST_CASE("live agent: after the scheduler closes the connection it reconnects and reports its running worker") {
  fake_scheduler s;
  scratch_dir dir;
  agent_runner agent(test_options(s, dir));
  REQUIRE(s.accept_agent());
  s.send(emulated_launch(11, 1000.0, 1.0));
  const auto before = s.receive_a<wire::progress>();
  REQUIRE(before);
  s.close_connection();
  const auto again = s.accept_agent();
  REQUIRE(again);
  const auto& workers = again->second.workers;
  REQUIRE(workers.size() == 1);
  CHECK(workers[0].job_id == 11);
  CHECK(workers[0].rank == 0);
  CHECK(workers[0].gpus == std::vector<uint32_t>{1, 3});
  REQUIRE(workers[0].pid);
  const uint32_t pid = *workers[0].pid;
  CHECK(alive(pid));
  // The worker kept running: its progress continues past what was reported before.
  std::optional<wire::progress> p;
  while ((p = s.receive_a<wire::progress>()) && p->work_done <= before->work_done) {}
  CHECK(p);
  CHECK(agent.stop() == 0);
  CHECK_FALSE(alive(pid));
  CHECK(no_children());
}

TEST_CASE("live agent: an exit while disconnected is reported after re-registering") {
  fake_scheduler s;
  scratch_dir dir;
  const auto o = test_options(s, dir);
  agent_runner agent(o);
  REQUIRE(s.accept_agent());
  const auto ckpt = std::filesystem::path(o.work_dir) / "checkpoints" / "12";
  s.send(shell_launch(12, "echo $$ > \"$ARYL_CHECKPOINT_DIR/pid\"; "
                          "echo ARYL_PROGRESS work_done=2.5 step=9; "
                          "while [ ! -e \"$ARYL_CHECKPOINT_DIR/go\" ]; do sleep 0.01; done; exit 5"));
  REQUIRE(s.receive_a<wire::progress>());
  const pid_t pid = std::stoi(read_file(ckpt / "pid"));
  s.close_connection();
  REQUIRE(s.accept());
  REQUIRE(s.receive_a<wire::hello>());
  // Let the worker end and the agent reap it (the pid disappears) before hello_ok.
  std::ofstream(ckpt / "go").close();
  REQUIRE(eventually([&] { return ::kill(pid, 0) != 0; }));
  s.send(wire::hello_ok{});
  const auto reg = s.receive_a<wire::register_>();
  REQUIRE(reg);
  // Listed as exited, with its code, so that a restarted scheduler counts it where it ran.
  REQUIRE(reg->workers.size() == 1);
  CHECK(reg->workers[0].job_id == 12);
  CHECK(reg->workers[0].exit_code == std::optional<int32_t>{5});
  CHECK(reg->workers[0].exit_signal == std::optional<uint32_t>{0});
  const auto exit = s.receive_a<wire::exit_>();
  REQUIRE(exit);
  CHECK(*exit == wire::exit_{12, 0, 5, 0});
  CHECK(agent.stop() == 0);
}

TEST_CASE("live agent: with fencing, its worker runs on while its heartbeats are answered and is stopped once they are not") {
  fake_scheduler s;
  scratch_dir dir;
  auto o = test_options(s, dir);
  o.fence_after_s = 0.5;
  agent_runner agent(o);
  REQUIRE(s.accept_agent());
  const pid_t pid = start_looping_worker(s, o, 13);
  REQUIRE(pid > 0);
  // Answered for 1.5 s, three times the fencing time: it runs on.
  for (auto until = std::chrono::steady_clock::now() + 1500ms; std::chrono::steady_clock::now() < until;) {
    auto hb = s.receive_a<wire::heartbeat>();
    REQUIRE(hb);
    s.send(wire::heartbeat{hb->seq});
  }
  CHECK(::kill(pid, 0) == 0);
  // Then unanswered: stopped (SIGTERM) about 0.5 s later, and its exit reported.
  const auto silent_from = std::chrono::steady_clock::now();
  const auto exit = s.receive_a<wire::exit_>(5000ms);
  REQUIRE(exit);
  CHECK(exit->job_id == 13);
  CHECK(exit->signal == SIGTERM);
  CHECK(std::chrono::steady_clock::now() - silent_from >= 400ms);
  CHECK(::kill(pid, 0) != 0);
  CHECK(agent.stop() == 0);
  CHECK(agent.log().find("fenced: nothing heard from the scheduler for 0.5 s; SIGTERM to 1 worker(s)") !=
        std::string::npos);
}

TEST_CASE("live agent: a refused hello is logged with its reason and retried") {
  fake_scheduler s;
  scratch_dir dir;
  agent_runner agent(test_options(s, dir));
  REQUIRE(s.accept());
  REQUIRE(s.receive_a<wire::hello>());
  s.send(wire::error{"bad token"});
  s.close_connection();
  REQUIRE(s.accept());
  REQUIRE(s.receive_a<wire::hello>());
  CHECK(agent.stop() == 0);
  CHECK(agent.log().find("bad token") != std::string::npos);
}

TEST_CASE("live agent: a malformed frame drops the connection and the agent reconnects") {
  fake_scheduler s;
  scratch_dir dir;
  agent_runner agent(test_options(s, dir));
  REQUIRE(s.accept_agent());
  s.send_raw({0, 0, 0, 3, 0xc1, 0xc1, 0xc1});  // a body that is not msgpack
  CHECK(s.wait_closed());
  REQUIRE(s.accept_agent());
  CHECK(agent.stop() == 0);
  CHECK(agent.log().find("malformed frame") != std::string::npos);
}

TEST_CASE("live agent: on its own stop it terminates its workers, says bye and leaves no child") {
  fake_scheduler s;
  scratch_dir dir;
  agent_runner agent(test_options(s, dir));
  const auto first = s.accept_agent();
  REQUIRE(first);
  s.send(emulated_launch(13, 1000.0, 1.0));
  REQUIRE(s.receive_a<wire::progress>());
  CHECK(agent.stop() == 0);
  const auto exit = s.receive_a<wire::exit_>();
  REQUIRE(exit);
  CHECK(*exit == wire::exit_{13, 0, worker_preempted_exit, 0});
  CHECK(s.receive_a<wire::bye>());
  CHECK(s.wait_closed());
  CHECK(no_children());
}

TEST_CASE("live agent: a shutdown from the scheduler stops its workers and ends it with 0, without reconnecting") {
  fake_scheduler s;
  scratch_dir dir;
  agent_runner agent(test_options(s, dir));
  REQUIRE(s.accept_agent());
  s.send(emulated_launch(14, 1000.0, 1.0));
  REQUIRE(s.receive_a<wire::progress>());
  s.send(wire::shutdown{"the run is over"});
  const auto exit = s.receive_a<wire::exit_>();
  REQUIRE(exit);
  CHECK(exit->code == worker_preempted_exit);
  CHECK(agent.ended_by_itself());
  CHECK_FALSE(s.accept(300ms));  // no reconnect
  CHECK(agent.stop() == 0);
  CHECK(agent.log().find("shut down for good (the run is over)") != std::string::npos);
  CHECK(no_children());
}

TEST_CASE("live agent: give_up_after_s ends an agent that cannot register, with 3, and says so") {
  fake_scheduler s;  // listens, never answers: the connection waits for a hello_ok
  scratch_dir dir;
  auto o = test_options(s, dir);
  o.give_up_after_s = 0.3;
  agent_runner agent(o);
  CHECK(agent.ended_by_itself(3000ms));
  CHECK(agent.stop() == 3);
  CHECK(agent.log().find("giving up: not registered with the scheduler for 0.3 s") != std::string::npos);
}

TEST_CASE("live agent: nvidia-smi's listing gives the machine's GPU type and count, and mixed models are refused") {
  auto v100 = parse_gpu_listing("Tesla V100-SXM2-16GB\nTesla V100-SXM2-16GB\r\nTesla V100-SXM2-16GB\n"
                                "Tesla V100-SXM2-16GB\n");
  REQUIRE(v100);
  CHECK(v100->gpu_type == "V100");
  CHECK(v100->count == 4);
  auto a100 = parse_gpu_listing("NVIDIA A100-SXM4-80GB\n");
  REQUIRE(a100);
  CHECK(a100->gpu_type == "A100");
  CHECK(a100->count == 1);
  CHECK_FALSE(parse_gpu_listing(""));
  CHECK_FALSE(parse_gpu_listing("\n\n"));
  try {
    parse_gpu_listing("Tesla T4\nNVIDIA A100-SXM4-80GB\n");
    FAIL("mixed models accepted");
  } catch (const aryl::input_error& e) {
    CHECK(std::string(e.what()).find("several models (Tesla T4, NVIDIA A100-SXM4-80GB)") != std::string::npos);
  }
}

TEST_CASE("live agent: a worker's log is read from an offset, non-UTF-8 bytes marked, a cut character left whole") {
  scratch_dir dir;
  std::filesystem::create_directories(dir.path() / "logs");
  // "ab", an invalid byte, "c", then a 2-byte character (é) to be cut.
  std::ofstream(dir.path() / "logs" / "7-1.log", std::ios::binary) << "ab\xff" << "c\xc3\xa9";
  auto all = read_worker_log(dir.path().string(), "node-a", wire::log_fetch{1, 7, 1, 0, 1000});
  CHECK(all.request == 1);
  CHECK(all.size == 6);
  CHECK(all.text == "ab?c\xc3\xa9");
  CHECK_FALSE(all.error);
  // Five bytes would cut é: four come, and the next piece starts with it whole.
  auto first = read_worker_log(dir.path().string(), "node-a", wire::log_fetch{2, 7, 1, 0, 5});
  CHECK(first.text == "ab?c");
  auto rest = read_worker_log(dir.path().string(), "node-a", wire::log_fetch{3, 7, 1, first.text.size(), 5});
  CHECK(rest.text == "\xc3\xa9");
  auto missing = read_worker_log(dir.path().string(), "node-a", wire::log_fetch{4, 7, 2, 0, 1000});
  CHECK(missing.error == std::optional<std::string>("job 7 rank 2: no log on node-a"));
  CHECK(utf8_or_marks("\xed\xa0\x80ok\xc0\xaf") == "???ok??");  // a surrogate, an overlong '/'
}

TEST_CASE("live agent: a job id's log whose last launch was another user's is set aside, so no user reads "
          "another's output") {
  scratch_dir dir;
  std::filesystem::create_directories(dir.path() / "logs");
  const auto root = dir.path().string();
  auto write = [&](const std::string& user, const std::string& text) {
    std::string error;
    int fd = open_worker_log(root, 1, 0, user, error);
    REQUIRE_MESSAGE(fd >= 0, error);
    REQUIRE(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
    struct stat st {};
    REQUIRE(::fstat(fd, &st) == 0);
    ::close(fd);
    return st.st_mode & 0777;
  };
  auto read = [&] { return read_worker_log(root, "n", wire::log_fetch{1, 1, 0, 0, 1000}).text; };
  CHECK(write("alice", "alice's secret\n") == 0600);
  CHECK(write("alice", "alice again\n") == 0600);  // her restarts append
  CHECK(read() == "alice's secret\nalice again\n");
  write("bob", "bob's\n");  // job 1 of a later run, another user's
  CHECK(read() == "bob's\n");
  size_t aside = 0;
  for (auto& e : std::filesystem::directory_iterator(dir.path() / "logs"))
    aside += e.path().filename().string().rfind("1-0.log.", 0) == 0 && e.path().extension() != ".user";
  CHECK(aside == 1);
  CHECK(write("", "the agent's own\n") == 0644);
  CHECK(read() == "the agent's own\n");
}

TEST_CASE("live agent: a log fetch is answered with an error naming the limit while too much is unsent to the scheduler") {
  scratch_dir dir;
  std::filesystem::create_directories(dir.path() / "logs");
  std::ofstream(dir.path() / "logs" / "7-1.log", std::ios::binary) << "step=1\n";
  const wire::log_fetch f{5, 7, 1, 0, 1'000'000};
  auto piece = answer_log_fetch(dir.path().string(), "node-a", f, max_unsent_bytes_for_logs);
  CHECK(piece.text == "step=1\n");
  auto busy = answer_log_fetch(dir.path().string(), "node-a", f, max_unsent_bytes_for_logs + 1);
  CHECK(busy.request == 5);
  CHECK(busy.text.empty());
  CHECK(busy.error == std::optional<std::string>("job 7 rank 1: the agent of node-a holds more than 2 MiB unsent to the scheduler; ask again"));
  // However much is asked, a piece fits a frame.
  std::ofstream(dir.path() / "logs" / "7-2.log", std::ios::binary) << std::string(300'000, 'x');
  CHECK(read_worker_log(dir.path().string(), "node-a", wire::log_fetch{6, 7, 2, 0, 1'000'000}).text.size() <
        wire::max_string_bytes);
}

TEST_CASE("live agent: a worker's output line over 64 KiB is stored whole, without newlines added") {
  fake_scheduler s;
  scratch_dir dir;
  const auto o = test_options(s, dir);
  agent_runner agent(o);
  REQUIRE(s.accept_agent());
  // 200 KiB in one line, a short line, then 70 KiB that the end of the output ends.
  s.send(shell_launch(11, "head -c 204800 /dev/zero | tr '\\0' x; echo; echo short; head -c 71680 /dev/zero | tr '\\0' y"));
  REQUIRE(s.receive_a<wire::exit_>());
  const auto stored = read_file(std::filesystem::path(o.work_dir) / "logs" / "11-0.log");
  const auto expected = std::string(204800, 'x') + "\nshort\n" + std::string(71680, 'y') + "\n";
  CHECK_MESSAGE(stored == expected, "stored " << stored.size() << " bytes, " << std::count(stored.begin(), stored.end(), '\n')
                                              << " newlines; expected " << expected.size() << " bytes, 3 newlines");
  CHECK(agent.stop() == 0);
}

TEST_CASE("live agent: without TLS it dials no scheduler off loopback and returns 2 naming the ways out, and with insecure it dials") {
  fake_scheduler s;
  scratch_dir dir;
  auto o = test_options(s, dir);
  auto address = aryl::test::non_loopback_address();
  if (!address) {
    MESSAGE("skipped: this machine has no address but loopback");
    return;
  }
  aryl::test::listener away(*address);
  REQUIRE(away.ok());
  o.host = *address;
  o.port = away.port();
  o.give_up_after_s = 1;  // a dial that is not refused ends in 3
  const std::atomic<bool> stop{false};
  std::ostringstream log;
  CHECK(run_agent(o, stop, log) == 2);
  CHECK_FALSE(away.dialled());
  CHECK_MESSAGE(log.str().find(*address + ":" + std::to_string(o.port) + " is not a loopback address") != std::string::npos,
                log.str());
  CHECK_MESSAGE(log.str().find("--tls-ca FILE") != std::string::npos, log.str());
  CHECK_MESSAGE(log.str().find("--insecure") != std::string::npos, log.str());
  o.insecure = true;
  agent_runner dialling(o);
  CHECK(eventually([&] { return away.dialled(); }));
  dialling.stop();
}

TEST_CASE("live agent: invalid options return 2 with the reason logged") {
  fake_scheduler s;
  scratch_dir dir;
  auto o = test_options(s, dir);
  o.name.clear();
  const std::atomic<bool> stop{false};
  std::ostringstream log;
  CHECK(run_agent(o, stop, log) == 2);
  CHECK(log.str().find("name is empty") != std::string::npos);
}

TEST_CASE("live processes: destroying a child_process kills its whole process group") {
  // The child starts a grandchild in its group and prints its pid.
  std::optional<pid_t> grandchild;
  {
    auto child = child_process::spawn({{"/bin/sh", "-c", "sleep 100 & echo $!; wait"},
                                       current_environment(), -1, true, std::nullopt, {}, {}});
    std::string out;
    REQUIRE(eventually([&] {
      char buf[64];
      const ssize_t n = ::read(child.stdout_fd(), buf, sizeof buf);
      if (n > 0) out.append(buf, static_cast<size_t>(n));
      return out.find('\n') != std::string::npos;
    }));
    grandchild = std::stoi(out);
  }
  CHECK(no_children());
  // The grandchild was reparented: gone, or a zombie waiting for its new parent.
  CHECK(eventually([&] {
    const std::string stat = read_file("/proc/" + std::to_string(*grandchild) + "/stat");
    const auto paren = stat.rfind(')');
    return stat.empty() || (paren != std::string::npos && stat.substr(paren + 2, 1) == "Z");
  }));
}

namespace {
/// A worker that reports once, then sleeps (silent) until stopped.
wire::launch sleeping_launch(uint64_t job_id) {
  return shell_launch(job_id, "echo ARYL_PROGRESS work_done=0; exec sleep 30");
}

/// What an agent's thread did between two of its heartbeats.
struct idle_cost {
  long sleeps = 0;  ///< times it blocked: its loop's wake-ups
  std::chrono::nanoseconds cpu{};
};

/// An agent (heartbeat every 0.5 s) runs one sleeping worker; its cost from its 2nd heartbeat
/// to its 4th (1 s, timed by the agent itself: no sleep in the test).
idle_cost idle_cost_with_a_worker(bool poll_worker_exits) {
  fake_scheduler s;
  scratch_dir dir;
  auto o = test_options(s, dir);
  o.heartbeat_s = 0.5;
  o.poll_worker_exits = poll_worker_exits;
  agent_runner agent(o);
  REQUIRE(s.accept_agent());
  s.send(sleeping_launch(1));
  REQUIRE(s.receive_a<wire::progress>());
  REQUIRE(s.receive_a<wire::heartbeat>(2000ms));
  REQUIRE(s.receive_a<wire::heartbeat>(2000ms));
  const long sleeps = agent.sleeps();
  const auto cpu = agent.cpu_time();
  REQUIRE(s.receive_a<wire::heartbeat>(2000ms));
  REQUIRE(s.receive_a<wire::heartbeat>(2000ms));
  const idle_cost cost{agent.sleeps() - sleeps, agent.cpu_time() - cpu};
  CHECK(agent.stop() == 0);
  CHECK(no_children());
  return cost;
}
} // namespace

TEST_CASE("live agent: an idle agent sleeps until its next deadline instead of polling its worker") {
  // Over 1 s with one silent worker: two heartbeats and ten looks at the stop flag. The 5 ms
  // tick this replaces woke about 200 times (each with a waitid per worker), and the polling
  // that remains without a pidfd wakes as often, which shows the count would catch it.
  const idle_cost events = idle_cost_with_a_worker(false);
  const idle_cost polled = idle_cost_with_a_worker(true);
  MESSAGE("pidfd: " << events.sleeps << " wake-ups, " << events.cpu.count() / 1000 << " us CPU; polled: "
                    << polled.sleeps << " wake-ups, " << polled.cpu.count() / 1000 << " us CPU");
  CHECK(events.sleeps <= 40);
  CHECK(polled.sleeps >= 80);
  // Relative, not in ms: a sanitizer's build costs the same wake-ups 3 to 4 times as much
  // (measured: 0.7-1.0 ms against 3.7-6.1 ms polled in Release; 1.9-3.2 against 6.1-12.3
  // with AddressSanitizer).
  CHECK(events.cpu * 3 < polled.cpu * 2);
}

TEST_CASE("live agent: a worker's end is reported at once, from its pidfd or, without one, from polling") {
  // Ten workers stopped one after another, each dying of the SIGTERM: from stop to exit takes
  // a few ms. Reaping on the 100 ms stop-flag tick would take 50 ms on average.
  for (const bool poll_worker_exits : {false, true}) {
    CAPTURE(poll_worker_exits);
    fake_scheduler s;
    scratch_dir dir;
    auto o = test_options(s, dir);
    o.heartbeat_s = 10;
    o.poll_worker_exits = poll_worker_exits;
    agent_runner agent(o);
    REQUIRE(s.accept_agent());
    std::vector<double> ms_to_exit;
    for (uint64_t job = 1; job <= 10; ++job) {
      s.send(sleeping_launch(job));
      REQUIRE(s.receive_a<wire::progress>());
      const auto sent = std::chrono::steady_clock::now();
      s.send(wire::stop{job, 5.0});
      const auto exit = s.receive_a<wire::exit_>();
      REQUIRE(exit);
      CHECK(*exit == wire::exit_{job, 0, 0, SIGTERM});
      ms_to_exit.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - sent).count());
    }
    // The 8 quickest: a loaded machine may delay one or two.
    std::sort(ms_to_exit.begin(), ms_to_exit.end());
    const double mean = std::accumulate(ms_to_exit.begin(), ms_to_exit.begin() + 8, 0.0) / 8;
    MESSAGE("stop to exit, mean of the 8 quickest of 10: " << mean << " ms");
    CHECK(mean < 20);
    CHECK(agent.stop() == 0);
    CHECK(no_children());
    CHECK(agent.log().find("no pidfd") == std::string::npos);  // Linux 5.3 or later
  }
}

TEST_CASE("live agent: a worker whose stdout outlives it is reported 1 s after its end, on time") {
  // The worker leaves a process in a session of its own holding its stdout, and ends.
  fake_scheduler s;
  scratch_dir dir;
  const auto pid_file = dir.path() / "holder.pid";
  struct kill_holder {
    std::filesystem::path file;
    ~kill_holder() {
      if (const std::string pid = read_file(file); !pid.empty()) ::kill(std::stoi(pid), SIGKILL);
    }
  } holder{pid_file};
  agent_runner agent(test_options(s, dir));
  REQUIRE(s.accept_agent());
  const auto sent = std::chrono::steady_clock::now();
  // It ends once the holder leads its own session: before, the group's SIGKILL would take it.
  s.send(shell_launch(2, "setsid sleep 10 & h=$!; echo $h > '" + pid_file.string() +
                             "'; until [ \"$(cut -d' ' -f6 /proc/$h/stat)\" = $h ]; do :; done; exit 3"));
  const auto exit = s.receive_a<wire::exit_>();
  REQUIRE(exit);
  CHECK(*exit == wire::exit_{2, 0, 3, 0});
  const auto waited = std::chrono::steady_clock::now() - sent;
  CHECK(waited >= 1000ms);
  CHECK(waited < 1500ms);
  CHECK(agent.stop() == 0);
  CHECK(no_children());
}
