// A torchrun job in live mode: one node (process) per server, kept through a rescale that
// leaves its server's share alone, stopped where the job leaves a server, started where it
// comes; TorchElastic re-forms the group (docs/live.md, "Elastic jobs through torchrun").
#include <doctest/doctest.h>
#include <fmt/format.h>

#include "actors/job.hpp"
#include "actors/server.hpp"
#include "solvers/cluster_ledger.hpp"
#include "tests/actors/sim_fixture.hpp"

using namespace aryl;
using namespace aryl::test;

namespace {

/// A machine: what its server actor told it, as text.
struct node_calls : node_link {
  std::string name;
  std::shared_ptr<std::vector<std::string>> calls;
  void launch(const node_launch& l) override {
    calls->push_back(fmt::format("{}: launch node {} of {} worker(s), rendezvous {}{}", name, l.rank_offset,
                                 l.gpus.size(), l.rdzv_epoch, l.torchrun ? "" : " (not torchrun)"));
  }
  void stop(uint32_t job) override { calls->push_back(fmt::format("{}: stop job {}", name, job)); }
};

struct torchrun_fixture : sim_fixture {
  std::shared_ptr<recorded> rec = std::make_shared<recorded>();
  recorder_actor recorder = sys->spawn(recording_recorder, rec);
  std::shared_ptr<std::vector<std::string>> calls = std::make_shared<std::vector<std::string>>();
  std::vector<server_actor> servers;
  std::shared_ptr<std::vector<seen>> log = std::make_shared<std::vector<seen>>();
  scheduler_actor scheduler = sys->spawn(recording_scheduler, log, tb);
  job_actor job;

  torchrun_fixture() {
    for (auto name : {"t0", "i0"}) {
      auto n = std::make_shared<node_calls>();
      n->name = name;
      n->calls = calls;
      servers.push_back(sys->spawn(server_behavior, std::string(name), 2, static_cast<int>(server_mode::training),
                                   recorder, std::shared_ptr<node_link>(n)));
    }
    job_spec s;
    s.index = 5;
    s.name = "el";
    s.gpus = 2;
    s.min_workers = 2;
    s.max_workers = 4;
    s.elastic = true;
    s.duration_s = 100;
    s.command = {"torchrun", "--nnodes=1:2", "--nproc_per_node=2", "train.py"};
    worker_settings w;
    w.follow_workers = true;
    w.node_per_server = [](const std::vector<std::string>& c) { return !c.empty() && c[0] == "torchrun"; };
    job = sys->spawn(job_behavior, s,
                     job_env{tb, throughput_model{}, scheduler.address(), recorder, true, w,
                             std::make_shared<server_directory>(servers)});
  }
  ~torchrun_fixture() {
    caf::anon_send_exit(job, caf::exit_reason::user_shutdown);
    for (auto& s : servers) caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
    drain();
  }
  /// A round as the scheduler sends it: each server's removals and placements, then the job's
  /// assignment (generation g, workers per server).
  void assign(uint64_t g, std::vector<int> before, std::vector<int> after) {
    std::vector<int> sids, shares;
    int total = 0;
    for (int s = 0; s < 2; ++s) {
      std::vector<uint32_t> removed, placed;
      std::vector<int> gpus;
      if (before[static_cast<size_t>(s)] > 0) removed.push_back(5);
      if (after[static_cast<size_t>(s)] > 0) {
        placed.push_back(5);
        gpus.push_back(after[static_cast<size_t>(s)]);
        sids.push_back(s);
        shares.push_back(after[static_cast<size_t>(s)]);
        total += after[static_cast<size_t>(s)];
      }
      if (!removed.empty() || !placed.empty())
        caf::anon_send(servers[static_cast<size_t>(s)], changes_atom::value, removed, placed, gpus);
    }
    caf::anon_send(job, assign_atom::value, job_assignment{g, total, 1.0, 0, sids, shares});
    drain();
  }
  void exit(int server, uint32_t slot, int code) {
    caf::anon_send(servers[static_cast<size_t>(server)], wexit_atom::value, uint32_t{5}, worker_exit{slot, code, 0});
    drain();
  }
  int count(const std::string& what) const {
    int n = 0;
    for (auto& s : *log) n += s.what == what;
    return n;
  }
  /// Lets a parked node's time run out.
  void park_ends() {
    while (step()) {
    }
  }
};

} // namespace

TEST_CASE_FIXTURE(torchrun_fixture, "a torchrun job runs one node per server and keeps the node whose share a rescale leaves alone") {
  assign(1, {0, 0}, {2, 2});
  CHECK(*calls == std::vector<std::string>{"t0: launch node 0 of 2 worker(s), rendezvous 1",
                                           "i0: launch node 1 of 2 worker(s), rendezvous 1"});
  // A reclaim of i0: 4 -> 2. t0's node runs on; i0's is stopped once its park ends.
  calls->clear();
  assign(2, {2, 2}, {2, 0});
  CHECK(calls->empty());
  park_ends();
  CHECK(*calls == std::vector<std::string>{"i0: stop job 5"});
  int acks = count("ack");
  exit(1, 1, 143);  // i0's node leaves: expected, no failure
  CHECK(count("wfail") == 0);
  CHECK(count("ack") == acks + 1);  // the reclaim's assignment is acknowledged once it left
  // i0 lent again: 2 -> 4. A node is started on i0 only, in the same rendezvous.
  calls->clear();
  assign(3, {2, 0}, {2, 2});
  park_ends();
  CHECK(*calls == std::vector<std::string>{"i0: launch node 1 of 2 worker(s), rendezvous 1"});
  // Training done: both nodes exit 0, the job is finished once.
  exit(0, 0, 0);
  CHECK(count("finished") == 0);
  exit(1, 1, 0);
  CHECK(count("finished") == 1);
  CHECK(rec->violations.empty());
}

TEST_CASE_FIXTURE(torchrun_fixture, "a torchrun node whose share changes is restarted under its slot, and a preempted job starts afresh once its nodes exited") {
  assign(1, {0, 0}, {2, 2});
  calls->clear();
  assign(2, {2, 2}, {1, 2});  // t0's share changes, i0's does not
  CHECK(*calls == std::vector<std::string>{"t0: stop job 5", "t0: launch node 0 of 1 worker(s), rendezvous 1"});
  calls->clear();
  assign(3, {1, 2}, {0, 0});  // preempted: both nodes stop
  park_ends();
  CHECK(calls->size() == 2);
  assign(4, {0, 0}, {2, 0});  // placed again before they exited: waits for them
  CHECK(calls->size() == 2);
  exit(0, 0, 143);
  exit(1, 1, 143);
  CHECK(calls->back() == "t0: launch node 0 of 2 worker(s), rendezvous 4");  // a rendezvous of its own
  CHECK(count("wfail") == 0);
  CHECK(rec->violations.empty());
}
