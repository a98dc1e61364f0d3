// Live-mode recovery in the server and job actors, on the deterministic scheduler: a lost
// machine's workers are given up, a returning agent is reconciled, and a worker that fails on
// its own takes the simulated worker-crash path.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include "actors/job.hpp"
#include "actors/server.hpp"
#include "solvers/cluster_ledger.hpp"
#include "tests/actors/sim_fixture.hpp"

using namespace aryl;
using namespace aryl::test;

namespace {

/// The machine behind the server actor: what it was told, as text.
struct fake_node : node_link {
  std::vector<std::string> calls;
  void launch(const node_launch& l) override {
    calls.push_back(fmt::format("launch job {} ranks {}..{}", l.job, l.rank_offset, l.rank_offset + l.gpus.size() - 1));
  }
  void stop(uint32_t job) override { calls.push_back(fmt::format("stop job {}", job)); }
};

/// A job that launches `r` on each assignment and records its workers' reports.
job_actor::behavior_type stand_in_job(job_actor::pointer self, server_actor server, launch_request r,
                                      std::shared_ptr<std::vector<std::string>> seen) {
  return {
      [=](assign_atom, const job_assignment&) { self->send(server, launch_atom::value, r); },
      [=](tick_atom) {},
      [=](crash_atom, int) {},
      [=](ckpt_atom, uint64_t, double) {},
      [=](ckfault_atom, const checkpoint_fault&) {},
      [=](wprogress_atom, uint32_t rank, double) { seen->push_back(fmt::format("progress rank {}", rank)); },
      [=](wexit_atom, const worker_exit& e) {
        seen->push_back(fmt::format("exit rank {} code {} signal {}", e.rank, e.code, e.signal));
      },
      [=](adopt_atom, const job_assignment&) {},
  };
}

struct live_fixture : sim_fixture {
  std::shared_ptr<recorded> rec = std::make_shared<recorded>();
  recorder_actor recorder = sys->spawn(recording_recorder, rec);
  std::shared_ptr<fake_node> node = std::make_shared<fake_node>();
  server_actor server = sys->spawn(server_behavior, std::string("t0"), 8, static_cast<int>(server_mode::training),
                                   recorder, std::shared_ptr<node_link>(node));
  std::vector<job_actor> jobs;  ///< every job actor a test spawned

  // The server holds its jobs' handles and each job holds the server's: the cycle outlives the
  // actor system unless the actors are ended.
  ~live_fixture() {
    for (auto& j : jobs) caf::anon_send_exit(j, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(server, caf::exit_reason::user_shutdown);
    drain();
  }

  /// Places `workers` GPUs for `job` here and has its stand-in launch ranks 0..workers-1.
  job_actor place_and_launch(uint32_t job, int workers, std::shared_ptr<std::vector<std::string>> seen) {
    launch_request r;
    r.job = job;
    r.job_name = fmt::format("j{}", job);
    r.workers = workers;
    r.world_size = static_cast<uint32_t>(workers);
    auto j = sys->spawn(stand_in_job, server, r, seen);
    jobs.push_back(j);
    caf::anon_send(server, place_atom::value, job, workers);
    caf::anon_send(j, assign_atom::value, job_assignment{});
    drain();
    return j;
  }
  void mode(server_mode m) {
    caf::anon_send(server, mode_atom::value, static_cast<int>(m));
    drain();
  }
  void exit(uint32_t job, uint32_t rank, int code) {
    caf::anon_send(server, wexit_atom::value, job, worker_exit{rank, code, 0});
    drain();
  }
};

const std::string lost_exit = fmt::format("code {} signal {}", worker_lost_code, worker_lost_signal);

} // namespace

TEST_CASE_FIXTURE(live_fixture, "a lost server gives up the workers launched there, and drops their later reports") {
  auto seen = std::make_shared<std::vector<std::string>>();
  place_and_launch(3, 2, seen);
  CHECK(node->calls == std::vector<std::string>{"launch job 3 ranks 0..1"});
  // The scheduler's recovery: the job is removed, then the server marked down.
  caf::anon_send(server, remove_atom::value, uint32_t{3});
  mode(server_mode::down);
  CHECK(*seen == std::vector<std::string>{"exit rank 0 " + lost_exit, "exit rank 1 " + lost_exit});
  // The agent, back later, reports what its workers did meanwhile: nothing reaches the job.
  caf::anon_send(server, wprogress_atom::value, uint32_t{3}, uint32_t{0}, 5.0);
  exit(3, 0, 143);
  CHECK(seen->size() == 2);
  CHECK(rec->violations.empty());
}

TEST_CASE_FIXTURE(live_fixture, "a returning agent's missing workers are given up, those launched after it registered are not") {
  auto seen3 = std::make_shared<std::vector<std::string>>();
  auto seen4 = std::make_shared<std::vector<std::string>>();
  place_and_launch(3, 2, seen3);  // launch 1: ranks 0, 1
  place_and_launch(4, 1, seen4);  // launch 2: rank 0
  // The agent registered again having taken launch 1 only, and runs job 3's rank 0.
  caf::anon_send(server, reconcile_atom::value, std::vector<uint32_t>{3}, std::vector<uint32_t>{0}, uint64_t{1});
  drain();
  CHECK(*seen3 == std::vector<std::string>{"exit rank 1 " + lost_exit});
  CHECK(seen4->empty());  // launch 2 went out after: judged by its own reports
  exit(3, 0, 0);
  CHECK(seen3->back() == "exit rank 0 code 0 signal 0");
}

TEST_CASE_FIXTURE(live_fixture, "a worker still running for a job moved away is stopped, and its exit is not taken for the next launch's") {
  auto seen = std::make_shared<std::vector<std::string>>();
  auto j = place_and_launch(3, 1, seen);
  caf::anon_send(server, remove_atom::value, uint32_t{3});
  mode(server_mode::down);  // partitioned for longer than the grace: rank 0 given up
  mode(server_mode::training);
  node->calls.clear();
  // Healed: the agent still runs job 3's rank 0, which is no longer placed here.
  caf::anon_send(server, reconcile_atom::value, std::vector<uint32_t>{3}, std::vector<uint32_t>{0}, uint64_t{1});
  drain();
  CHECK(node->calls == std::vector<std::string>{"stop job 3"});
  // Placed here again before the old worker's exit arrives: that exit is the old worker's.
  caf::anon_send(server, place_atom::value, uint32_t{3}, 1);
  caf::anon_send(j, assign_atom::value, job_assignment{});
  drain();
  seen->clear();
  exit(3, 0, 143);
  CHECK(seen->empty());
  exit(3, 0, 0);
  CHECK(*seen == std::vector<std::string>{"exit rank 0 code 0 signal 0"});
}

namespace {

struct live_job_fixture : live_fixture {
  std::shared_ptr<std::vector<seen>> log = std::make_shared<std::vector<seen>>();
  scheduler_actor scheduler = sys->spawn(recording_scheduler, log, tb);

  job_actor spawn_job() {
    job_spec s;
    s.index = 7;
    s.name = "j7";
    s.gpus = 2;
    s.duration_s = 100;
    worker_settings w;
    w.follow_workers = true;
    auto j = sys->spawn(job_behavior, s,
                        job_env{tb, throughput_model{}, scheduler.address(), recorder, true, w,
                                std::make_shared<server_directory>(std::vector<server_actor>{server})});
    jobs.push_back(j);
    return j;
  }
  int count(const std::string& what) const {
    int n = 0;
    for (auto& s : *log) n += s.what == what;
    return n;
  }
};

} // namespace

TEST_CASE_FIXTURE(live_job_fixture, "a live worker failing on its own sends wfail once, and the next launch waits for the others") {
  auto j = spawn_job();
  caf::anon_send(server, place_atom::value, uint32_t{7}, 2);
  caf::anon_send(j, assign_atom::value, job_assignment{1, 2, 1.0, 0, {0}, {2}});
  drain();
  CHECK(node->calls == std::vector<std::string>{"launch job 7 ranks 0..1"});
  exit(7, 1, 1);  // rank 1 fails on its own
  CHECK(count("wfail") == 1);
  CHECK(rec->failures.empty());  // the run goes on
  // The scheduler requeues it (workers 0): rank 0, being stopped, exits 143: expected.
  caf::anon_send(server, remove_atom::value, uint32_t{7});
  caf::anon_send(j, assign_atom::value, job_assignment{2, 0, 1.0, 0, {}, {}});
  drain();
  int acks = count("ack");
  exit(7, 0, 143);
  CHECK(count("wfail") == 1);
  CHECK(count("ack") == acks + 1);  // the requeue is acknowledged once every worker exited
  // Started again: a new launch (resuming from the checkpoint).
  caf::anon_send(server, place_atom::value, uint32_t{7}, 2);
  caf::anon_send(j, assign_atom::value, job_assignment{3, 2, 1.0, 0, {0}, {2}});
  drain();
  CHECK(node->calls.back() == "launch job 7 ranks 0..1");
  exit(7, 0, 0);
  exit(7, 1, 0);
  CHECK(count("finished") == 1);
}

TEST_CASE_FIXTURE(live_job_fixture, "workers adopted after a scheduler restart are followed without a launch, to the job's end") {
  auto j = spawn_job();
  // The agent runs job 7's ranks 0 and 1 on GPUs 5 and 2, from before the restart.
  caf::anon_send(server, adopt_atom::value, uint32_t{7}, std::vector<uint32_t>{0, 1}, std::vector<uint32_t>{5, 2}, j);
  caf::anon_send(j, adopt_atom::value, job_assignment{1, 2, 1.0, 0, {0}, {2}});
  drain();
  CHECK(node->calls.empty());  // nothing launched
  // Their GPUs are taken: a job placed next gets the first others (0, 1), without a violation.
  auto seen = std::make_shared<std::vector<std::string>>();
  place_and_launch(8, 6, seen);
  CHECK(node->calls == std::vector<std::string>{"launch job 8 ranks 0..5"});
  CHECK(rec->violations.empty());
  exit(7, 0, 0);
  CHECK(count("finished") == 0);
  exit(7, 1, 0);
  CHECK(count("finished") == 1);
  CHECK(count("wfail") == 0);
}

TEST_CASE_FIXTURE(live_job_fixture, "an adopted job that is reassigned has its adopted workers stopped before the new launch") {
  auto j = spawn_job();
  caf::anon_send(server, adopt_atom::value, uint32_t{7}, std::vector<uint32_t>{0, 1}, std::vector<uint32_t>{0, 1}, j);
  caf::anon_send(j, adopt_atom::value, job_assignment{1, 2, 1.0, 0, {0}, {2}});
  drain();
  // A rescale to one worker: the removal stops the adopted pair, the launch waits for them.
  caf::anon_send(server, remove_atom::value, uint32_t{7});
  caf::anon_send(server, place_atom::value, uint32_t{7}, 1);
  caf::anon_send(j, assign_atom::value, job_assignment{2, 1, 1.0, 0, {0}, {1}});
  drain();
  CHECK(node->calls == std::vector<std::string>{"stop job 7"});
  exit(7, 0, 143);
  exit(7, 1, 143);
  CHECK(node->calls == std::vector<std::string>{"stop job 7", "launch job 7 ranks 0..0"});
  CHECK(count("wfail") == 0);
  CHECK(rec->violations.empty());
}
