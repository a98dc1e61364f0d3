// The scheduler's network front (runtime/live/gateway): each bad peer gets a reason and loses
// its own connection only; registered agents keep working; launches go out one frame per rank.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <tuple>

#include "runtime/live/client.hpp"
#include "tests/live/gateway_peer.hpp"
#include "runtime/live/gateway.hpp"
#include "runtime/wire/codec.hpp"

using namespace aryl;
using namespace std::chrono_literals;
using aryl::test::peer;

namespace {

struct gateway_fixture {
  std::ostringstream log_text;
  std::mutex log_mutex;
  std::shared_ptr<live::job_book> book = std::make_shared<live::job_book>();
  std::shared_ptr<node_link> t0, t1;
  std::unique_ptr<live::gateway> g;
  std::mutex seen_mutex;
  std::vector<std::string> seen;  ///< worker reports and failures, as text

  explicit gateway_fixture(double silence_s = 10, double grace_s = 30) {
    live::gateway_options o;
    o.token = "secret";
    o.checkpoint_root = "/tmp/aryl-gateway-test";
    o.agent_silence_s = silence_s;
    o.loss_grace_s = grace_s;
    o.book = book;
    g = std::make_unique<live::gateway>(o, log_text);
    t0 = g->add_server(0, "t0", "V100", 8, wire::pool_kind::training);
    t1 = g->add_server(1, "t1", "V100", 8, wire::pool_kind::training);
    g->set_router(worker_router{
        [this](int s, uint32_t job, uint32_t rank, double w) { note(fmt("progress", s, job, rank, w)); },
        [this](int s, uint32_t job, uint32_t rank, int code, int, const std::string&) { note(fmt("exit", s, job, rank, code)); },
        [this](int s) { note("lost server=" + std::to_string(s)); },
        [] {
          cluster_status s;
          s.jobs = {{3, "j3", true, 4, "", 0, 0, 0, "", -1, "", true, ""}, {5, "j5", false, 0, "", 0, 0, 0, "", -1, "", true, ""}};
          s.servers = {{"t0", "V100", 8, 4, false, "training", hold_state::up, ""}, {"i0", "T4", 8, 8, true, "loaned", hold_state::up, ""}};
          return s;
        },
        [this](int servers) { note("demand " + std::to_string(servers)); },
        {},
        {},
        [this](int s) { note("back server=" + std::to_string(s)); },
        [this](int s, std::vector<uint32_t> jobs, std::vector<uint32_t> ranks, uint64_t launches) {
          std::string w;
          for (size_t i = 0; i < jobs.size(); ++i) {  // appended piecewise: GCC 12 -Wrestrict misfires on " " + s
            w += ' ';
            w += std::to_string(jobs[i]);
            w += ':';
            w += std::to_string(ranks[i]);
          }
          note("reconcile server=" + std::to_string(s) + " launches=" + std::to_string(launches) + w);
        },
        {},
        {},
        {},
        {}});
  }
  ~gateway_fixture() { g->close(); }

  static std::string fmt(const char* what, int s, uint32_t job, uint32_t rank, double v) {
    std::ostringstream o;
    o << what << " server=" << s << " job=" << job << " rank=" << rank << " " << v;
    return o.str();
  }
  void note(std::string s) {
    std::lock_guard lock(seen_mutex);
    seen.push_back(std::move(s));
  }
  /// Waits up to 5 s for `n` agents to be connected.
  bool connected(int n) {
    for (auto until = std::chrono::steady_clock::now() + 5s; std::chrono::steady_clock::now() < until;
         std::this_thread::sleep_for(5ms))
      if (g->agents_connected() == n) return true;
    return false;
  }
  /// Waits up to 5 s for a report containing `text`.
  bool saw(const std::string& text) {
    for (auto until = std::chrono::steady_clock::now() + 5s; std::chrono::steady_clock::now() < until;
         std::this_thread::sleep_for(5ms)) {
      std::lock_guard lock(seen_mutex);
      for (auto& s : seen)
        if (s.find(text) != std::string::npos) return true;
    }
    return false;
  }
};

} // namespace

TEST_CASE_FIXTURE(gateway_fixture, "gateway: a wrong token is refused with its reason") {
  peer p(g->port());
  p.send(wire::hello{wire::peer_role::agent, "guess", "t0"});
  CHECK(p.refusal() == "wrong cluster token");
}

TEST_CASE_FIXTURE(gateway_fixture, "gateway: a malformed frame closes that connection only, and a registered agent keeps working") {
  peer agent(g->port());
  agent.register_as("t0");
  peer bad(g->port());
  bad.send_raw({0, 0, 0, 3, 0xc1, 0xc1, 0xc1});  // 0xc1 is never valid msgpack
  CHECK(bad.refusal().find("bad frame") == 0);
  agent.send(wire::progress{7, 0, 12.5, 3});
  CHECK(saw("progress server=0 job=7 rank=0 12.5"));
}

TEST_CASE_FIXTURE(gateway_fixture, "gateway: an agent for an unknown or differently sized server is refused naming it") {
  peer unknown(g->port());
  unknown.hello_as_agent("t9");
  unknown.send(wire::register_{"t9", "V100", 8, wire::pool_kind::training, {}});
  CHECK(unknown.refusal() == "unknown server 't9' (this cluster has: t0, t1)");
  peer wrong(g->port());
  wrong.hello_as_agent("t1");
  wrong.send(wire::register_{"t1", "T4", 4, wire::pool_kind::training, {}});
  CHECK(wrong.refusal() == "server 't1' is configured as 8 x V100 (training), the agent says 4 x T4 (training)");
}

TEST_CASE_FIXTURE(gateway_fixture, "gateway: a client cannot act as an agent") {
  peer client(g->port());
  client.send(wire::hello{wire::peer_role::client, "secret", "cli"});
  REQUIRE(client.receive());
  client.send(wire::register_{"t0", "V100", 8, wire::pool_kind::training, {}});
  CHECK(client.refusal() == "a client cannot send 'register'");
}

TEST_CASE_FIXTURE(gateway_fixture, "gateway: a launch reaches the registered agent as one frame per rank") {
  peer agent(g->port());
  agent.register_as("t1");
  // Registered once only t0 is missing (t0 never comes here).
  for (int i = 0; i < 500 && g->wait_for_agents(10ms) != std::vector<std::string>{"t0"}; ++i) {}
  REQUIRE(g->wait_for_agents(0ms) == std::vector<std::string>{"t0"});
  t1->launch(node_launch{4, "j4", 9, 2, 6, {5, 6}, 100, 2, 0.5, {}});
  for (uint32_t rank : {2u, 3u}) {
    auto m = agent.receive();
    REQUIRE(m);
    auto* l = std::get_if<wire::launch>(&*m);
    REQUIRE(l);
    CHECK(l->job_id == 4);
    CHECK(l->rank == rank);
    CHECK(l->world_size == 6);
    CHECK(l->gpus == std::vector<uint32_t>{rank + 3});
    CHECK(l->checkpoint_dir == "/tmp/aryl-gateway-test/job-4");
    CHECK(l->rendezvous == "file:///tmp/aryl-gateway-test/job-4/rendezvous-9");
    CHECK(l->env.at("ARYL_STARTUP_S") == "0.500000");
  }
  t1->stop(4);
  auto m = agent.receive();
  REQUIRE(m);
  CHECK(std::holds_alternative<wire::stop>(*m));
}

TEST_CASE_FIXTURE(gateway_fixture, "gateway: every worker gets the standard environment: rank 0's machine as "
                                   "MASTER_ADDR, one MASTER_PORT per launch, and its ranks and groups") {
  peer a0(g->port()), a1(g->port());
  a0.register_as("t0");  // at the address it connects from
  a1.hello_as_agent("t1");
  a1.send(wire::register_{"t1", "V100", 8, wire::pool_kind::training, {}, "node-1.example"});
  for (int i = 0; i < 500 && !g->wait_for_agents(10ms).empty(); ++i) {}
  REQUIRE(g->wait_for_agents(0ms).empty());
  auto env_of = [](peer& p) {
    auto m = p.receive();
    REQUIRE(m);
    REQUIRE(std::get_if<wire::launch>(&*m));
    return std::get<wire::launch>(*m).env;
  };
  // Job 4, launch 9: ranks 0-1 on t1 (the master), 2-3 on t0.
  node_launch on_t1{4, "j4", 9, 0, 4, {5, 6}, 100, 2, 0, {}, 0, "", 1, 0, 2};
  node_launch on_t0{4, "j4", 9, 2, 4, {0, 3}, 100, 2, 0, {}, 0, "", 1, 1, 2};
  t1->launch(on_t1);
  t0->launch(on_t0);
  for (auto [p, group, first] : {std::tuple{&a1, 0, 0}, std::tuple{&a0, 1, 2}})
    for (int local = 0; local < 2; ++local) {
      auto env = env_of(*p);
      CHECK(env.at("MASTER_ADDR") == "node-1.example");
      CHECK(env.at("MASTER_PORT") == "29500");
      CHECK(env.at("RANK") == std::to_string(first + local));
      CHECK(env.at("WORLD_SIZE") == "4");
      CHECK(env.at("LOCAL_RANK") == std::to_string(local));
      CHECK(env.at("LOCAL_WORLD_SIZE") == "2");
      CHECK(env.at("GROUP_RANK") == std::to_string(group));
      CHECK(env.at("GROUP_WORLD_SIZE") == "2");
      CHECK(env.at("CUDA_VISIBLE_DEVICES") == (group == 0 ? "5,6" : "0,3"));
    }
  // Another job mastered on t1 takes the next port; t0's jobs master at its connection's address.
  t1->launch(node_launch{5, "j5", 1, 0, 1, {7}, 100, 2, 0, {}, 0, "", 1, 0, 1});
  CHECK(env_of(a1).at("MASTER_PORT") == "29501");
  t0->launch(node_launch{6, "j6", 1, 0, 1, {1}, 100, 2, 0, {}, 0, "", 0, 0, 1});
  auto j6 = env_of(a0);
  CHECK(j6.at("MASTER_ADDR") == "127.0.0.1");
  CHECK(j6.at("MASTER_PORT") == "29500");
  // Job 4's next launch frees its earlier port.
  t1->launch(node_launch{4, "j4", 10, 0, 1, {5}, 100, 2, 0, {}, 0, "", 1, 0, 1});
  CHECK(env_of(a1).at("MASTER_PORT") == "29500");
}

TEST_CASE("gateway: a silent agent is dropped, and its server reported lost once the detection grace has passed") {
  gateway_fixture f(10, 0.3);
  peer agent(f.g->port());
  agent.register_as("t0");
  // Nothing more from the agent: dropped after the grace (shorter than the silence limit),
  // and its server reported lost, once.
  CHECK(f.saw("lost server=0"));
  std::this_thread::sleep_for(300ms);
  f.g->close();  // its log is complete
  CHECK(f.log_text.str().find("server t0: its agent was not heard for 0.3 s: reported lost") != std::string::npos);
  std::lock_guard lock(f.seen_mutex);
  CHECK(std::count(f.seen.begin(), f.seen.end(), "lost server=0") == 1);
}

TEST_CASE("gateway: an agent back within the grace is not reported lost") {
  gateway_fixture f(10, 0.6);
  {
    peer agent(f.g->port());
    agent.register_as("t0");
  }  // disconnected
  peer again(f.g->port());
  again.register_as("t0");
  again.send(wire::heartbeat{1});
  CHECK(f.saw("back server=0"));
  for (int i = 0; i < 8; ++i) {  // heard every 0.1 s for 0.8 s: longer than the grace
    std::this_thread::sleep_for(100ms);
    again.send(wire::heartbeat{static_cast<uint64_t>(i + 2)});
  }
  std::lock_guard lock(f.seen_mutex);
  CHECK(std::find(f.seen.begin(), f.seen.end(), "lost server=0") == f.seen.end());
}

TEST_CASE("gateway: a returning agent's workers are reconciled at its first heartbeat, then its server is back") {
  gateway_fixture f(10, 30);
  {
    peer agent(f.g->port());
    agent.register_as("t1");
    REQUIRE(f.connected(1));
  }
  REQUIRE(f.connected(0));
  // Away: one launch (job 2, ranks 0 and 1) is kept for it.
  f.t1->launch(node_launch{2, "j2", 1, 0, 2, {0, 1}, 10, 1, 0, {}});
  peer again(f.g->port());
  again.hello_as_agent("t1");
  wire::register_ r{"t1", "V100", 8, wire::pool_kind::training, {}};
  r.workers.push_back({7, 3, {4}, std::nullopt, std::nullopt, std::nullopt});  // still running from before
  again.send(r);
  again.send(wire::exit_{5, 0, 0, 0});  // kept while away: passed on before the reconcile
  again.send(wire::heartbeat{1});
  CHECK(f.saw("reconcile server=1 launches=1 7:3 2:0 2:1"));
  CHECK(f.saw("back server=1"));
  std::lock_guard lock(f.seen_mutex);
  auto at = [&](const std::string& prefix) {
    for (size_t i = 0; i < f.seen.size(); ++i)
      if (f.seen[i].rfind(prefix, 0) == 0) return static_cast<int>(i);
    return -1;
  };
  CHECK(at("exit server=1 job=5") >= 0);
  CHECK(at("exit server=1 job=5") < at("reconcile server=1"));
  CHECK(at("reconcile server=1") < at("back server=1"));
}

TEST_CASE_FIXTURE(gateway_fixture, "gateway: a peer or server name holding a control character is refused, and logged escaped") {
  peer named(g->port());
  named.send(wire::hello{wire::peer_role::agent, "secret", "t0\nforged line"});
  auto why = named.refusal();
  CHECK_MESSAGE(why.find("control character") != std::string::npos, why);
  peer agent(g->port());
  agent.hello_as_agent("t0");
  agent.send(wire::register_{"t0\x1b[2J", "V100", 8, wire::pool_kind::training, {}});
  why = agent.refusal();
  CHECK_MESSAGE(why.find("control character") != std::string::npos, why);
  CHECK(why.find('\x1b') == std::string::npos);
  g->close();  // its log is complete
  auto log = log_text.str();
  CHECK_MESSAGE(log.find("\nforged") == std::string::npos, log);
  CHECK_MESSAGE(log.find('\x1b') == std::string::npos, log);
}

TEST_CASE_FIXTURE(gateway_fixture, "gateway: a submitted job name holding a control character is refused") {
  peer client(g->port());
  client.send(wire::hello{wire::peer_role::client, "secret", "cli"});
  REQUIRE(client.receive());
  wire::submit job;
  job.name = "a\nforged line";
  client.send(job);
  auto why = client.refusal();
  CHECK_MESSAGE(why.find("control character") != std::string::npos, why);
}

TEST_CASE("status table: names holding control characters stay on their line, escaped") {
  wire::status_reply s;
  s.jobs = {{1, "a\nb\x1b[2J", wire::job_state::running, 2, std::nullopt, std::nullopt, std::nullopt,
             std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt}};
  s.servers = {{"t0\r", "V100", 8, 6, wire::pool_kind::training, std::nullopt, std::nullopt, std::nullopt}};
  std::ostringstream out;
  live::print_status(out, s);
  auto text = out.str();
  // Header, one job, a blank line, header, one server.
  CHECK_MESSAGE(std::count(text.begin(), text.end(), '\n') == 5, text);
  CHECK(text.find('\r') == std::string::npos);
  CHECK(text.find('\x1b') == std::string::npos);
  CHECK_MESSAGE(text.find("a\\nb\\x1b[2J") != std::string::npos, text);
}

TEST_CASE_FIXTURE(gateway_fixture, "gateway: a client gets the scheduler's status, loans included") {
  peer client(g->port());
  client.send(wire::hello{wire::peer_role::client, "secret", "cli"});
  REQUIRE(client.receive());
  client.send(wire::status_request{});
  auto m = client.receive();
  REQUIRE(m);
  auto* s = std::get_if<wire::status_reply>(&*m);
  REQUIRE(s);
  REQUIRE(s->jobs.size() == 2);
  CHECK(s->jobs[0].job_id == 3);
  CHECK(s->jobs[0].name == "j3");
  CHECK(s->jobs[0].state == wire::job_state::running);
  CHECK(s->jobs[0].workers == 4);
  CHECK(!s->jobs[0].reason);
  CHECK(s->jobs[1].state == wire::job_state::queued);
  REQUIRE(s->servers.size() == 2);
  CHECK(s->servers[1].pool == wire::pool_kind::inference);
  CHECK(s->loans == std::vector<wire::loan_info>{{"i0", wire::loan_state::loaned}});
}

namespace {

/// Job 9 of the book: submitted, started, preempted, then cancelled (as the run's outputs
/// hooks feed it); job 10 ended done after it.
void fill_book(live::job_book& book) {
  job_spec spec;
  spec.index = 9;
  spec.name = "nine";
  spec.gpus = 2;
  spec.min_workers = 1;
  spec.max_workers = 4;
  spec.duration_s = 3600;
  spec.predicted = false;
  spec.command = {"train.sh"};
  book.spec(spec);
  book.event({1'000'000, "scheduler", "submit", "job-9 gpus=2 elastic=1 name=nine", ""});
  book.event({2'000'000, "scheduler", "start", "job-9 workers=2 V100 [t0:2]", "fits its base demand"});
  book.event({2'000'000, "scheduler", "start", "job-90 workers=1 V100 [t1:1]", "another job's line"});
  book.event({2'500'000, "inference", "loan", "servers=1", "not a job's line"});
  book.event({5'000'000, "scheduler", "preempt", "job-9 workers=0", "preempted for job 3"});
  job_record nine;
  nine.index = 9;
  nine.name = "nine";
  nine.gpus = 2;
  nine.submit_us = 1'000'000;
  nine.first_start_us = 2'000'000;
  nine.end_us = 7'000'000;
  nine.duration_s = 3600;
  nine.outcome = job_outcome::cancelled;
  nine.predicted = false;
  book.event({7'000'000, "scheduler", "cancel", "job-9 workers=0", "cancelled by a client"});
  book.ended(nine);
  job_record ten = nine;
  ten.index = 10;
  ten.name = "ten";
  ten.outcome = job_outcome::done;
  ten.end_us = 8'000'000;
  book.ended(ten);
}

} // namespace

TEST_CASE_FIXTURE(gateway_fixture, "gateway: show gives an ended job's spec, every allocation change with time and reason, and its outcome") {
  fill_book(*book);
  peer client(g->port());
  client.send(wire::hello{wire::peer_role::client, "secret", "cli"});
  REQUIRE(client.receive());
  client.send(wire::show_request{9});
  auto m = client.receive();
  REQUIRE(m);
  auto* s = std::get_if<wire::show_reply>(&*m);
  REQUIRE_MESSAGE(s, wire::type_of(*m));
  CHECK(s->job.name == "nine");
  CHECK(s->job.state == wire::job_state::cancelled);
  CHECK(s->job.min_workers == 1u);
  CHECK(s->job.max_workers == 4u);
  CHECK(s->job.predicted == false);
  CHECK(s->job.run_s == 5.0);  // first start to end
  CHECK(s->command == std::vector<std::string>{"train.sh"});
  CHECK(s->submit_s == 1.0);
  CHECK(s->end_s == 7.0);
  // Its own lines only, oldest first, the job's name taken off the detail.
  REQUIRE(s->history.size() == 4);
  CHECK(s->history[1] == wire::history_entry{2.0, "start", "workers=2 V100 [t0:2]", "fits its base demand"});
  CHECK(s->history[2].event == "preempt");
  CHECK(s->history[3].why == "cancelled by a client");
  // Several requests share the connection: an active job is shown as the scheduler has it.
  client.send(wire::show_request{3});
  auto active = client.receive();
  REQUIRE(active);
  auto* a = std::get_if<wire::show_reply>(&*active);
  REQUIRE(a);
  CHECK(a->job.state == wire::job_state::running);
  CHECK(a->job.workers == 4);
  client.send(wire::show_request{42});
  CHECK(client.refusal() == "job 42: no such job");
}

TEST_CASE_FIXTURE(gateway_fixture, "gateway: status with all lists ended jobs after the active ones, the latest end first") {
  fill_book(*book);
  peer client(g->port());
  client.send(wire::hello{wire::peer_role::client, "secret", "cli"});
  REQUIRE(client.receive());
  client.send(wire::status_request{});
  auto active = client.receive();
  REQUIRE(active);
  CHECK(std::get<wire::status_reply>(*active).jobs.size() == 2);  // without `all`: active only
  client.send(wire::status_request{.all = true});
  auto m = client.receive();
  REQUIRE(m);
  auto& jobs = std::get<wire::status_reply>(*m).jobs;
  REQUIRE(jobs.size() == 4);
  CHECK(jobs[0].job_id == 3);
  CHECK(jobs[1].job_id == 5);
  CHECK(jobs[2].job_id == 10);
  CHECK(jobs[2].state == wire::job_state::done);
  CHECK(jobs[3].job_id == 9);
  CHECK(jobs[3].state == wire::job_state::cancelled);
}

TEST_CASE_FIXTURE(gateway_fixture, "gateway: a client's bye closes its connection without a log line or an error frame") {
  peer client(g->port());
  client.send(wire::hello{wire::peer_role::client, "secret", "cli"});
  REQUIRE(client.receive());
  client.send(wire::bye{});
  CHECK_FALSE(client.receive());  // closed, nothing sent
  g->close();  // nothing more is logged
  CHECK_MESSAGE(log_text.str().find("bye") == std::string::npos, log_text.str());
  CHECK_MESSAGE(log_text.str().find("closing") == std::string::npos, log_text.str());
}

TEST_CASE_FIXTURE(gateway_fixture, "gateway: a client's logs request is fetched from the agent the worker was launched on") {
  peer agent(g->port());
  agent.register_as("t1");
  REQUIRE(connected(1));
  t1->launch(node_launch{4, "j4", 1, 2, 4, {0, 1}, 10, 1, 0, {}});  // ranks 2 and 3 on t1
  REQUIRE(agent.receive());
  REQUIRE(agent.receive());
  peer client(g->port());
  client.send(wire::hello{wire::peer_role::client, "secret", "cli"});
  REQUIRE(client.receive());
  client.send(wire::logs_request{4, 3, 10});
  auto fetch = agent.receive();
  REQUIRE(fetch);
  auto* f = std::get_if<wire::log_fetch>(&*fetch);
  REQUIRE_MESSAGE(f, wire::type_of(*fetch));
  CHECK(f->job_id == 4);
  CHECK(f->rank == 3);
  CHECK(f->offset == 10);
  CHECK(f->max_bytes < wire::max_string_bytes);
  agent.send(wire::log_chunk{f->request, "step=5\n", 17, std::nullopt});
  auto reply = client.receive();
  REQUIRE(reply);
  auto* r = std::get_if<wire::logs_reply>(&*reply);
  REQUIRE_MESSAGE(r, wire::type_of(*reply));
  CHECK(*r == wire::logs_reply{4, 3, "t1", 10, "step=5\n", 17, true});
  // A worker never launched: refused by name.
  client.send(wire::logs_request{4, 9, 0});
  CHECK(client.refusal() == "job 4 rank 9: no worker of it was launched");
}

TEST_CASE_FIXTURE(gateway_fixture, "gateway: shutting down for good sends each connected agent a shutdown frame, then closes") {
  peer agent(g->port());
  agent.register_as("t0");
  REQUIRE(connected(1));
  g->send_shutdown("the run is over", 2s);
  auto m = agent.receive();
  REQUIRE(m);
  auto* s = std::get_if<wire::shutdown>(&*m);
  REQUIRE_MESSAGE(s, wire::type_of(*m));
  CHECK(s->reason == "the run is over");
  CHECK_FALSE(agent.receive());  // then closed
}

TEST_CASE_FIXTURE(gateway_fixture, "gateway: a client's demand reaches the run") {
  peer client(g->port());
  client.send(wire::hello{wire::peer_role::client, "secret", "cli"});
  REQUIRE(client.receive());
  client.send(wire::demand{3});
  CHECK(saw("demand 3"));
}

TEST_CASE_FIXTURE(gateway_fixture, "gateway: without a run in progress a status request is refused") {
  g->set_router({});
  peer client(g->port());
  client.send(wire::hello{wire::peer_role::client, "secret", "cli"});
  REQUIRE(client.receive());
  client.send(wire::status_request{});
  CHECK(client.refusal() == "no run in progress");
}

TEST_CASE_FIXTURE(gateway_fixture, "gateway: launches and stops for an agent that is away are sent when it registers") {
  t1->launch(node_launch{2, "j2", 1, 0, 1, {0}, 10, 1, 0, {}});
  t1->stop(5);
  // Whether they reach the network thread before or after the registration, the agent gets
  // both, in order.
  peer agent(g->port());
  agent.register_as("t1");
  auto first = agent.receive();
  REQUIRE(first);
  CHECK(std::get_if<wire::launch>(&*first));
  auto second = agent.receive();
  REQUIRE(second);
  auto* s = std::get_if<wire::stop>(&*second);
  REQUIRE(s);
  CHECK(s->job_id == 5);
}

namespace {

/// A gateway with servers t0 and t1 and no router yet, as `aryl serve` has while it waits
/// for its agents.
struct waiting_gateway {
  std::ostringstream log_text;
  std::unique_ptr<live::gateway> g;
  explicit waiting_gateway(bool hold) {
    live::gateway_options o;
    o.token = "secret";
    o.checkpoint_root = "/tmp/aryl-gateway-test";
    o.stop_grace_s = 2;
    o.hold_found_workers = hold;
    g = std::make_unique<live::gateway>(o, log_text);
    g->add_server(0, "t0", "V100", 8, wire::pool_kind::training);
    g->add_server(1, "t1", "V100", 8, wire::pool_kind::training);
  }
  ~waiting_gateway() { g->close(); }
};

wire::register_ listing(const std::string& server, std::vector<std::pair<uint64_t, uint32_t>> workers) {
  wire::register_ r{server, "V100", 8, wire::pool_kind::training, {}};
  uint32_t gpu = 0;
  for (auto& [job, rank] : workers) r.workers.push_back({job, rank, {gpu++}, std::nullopt, std::nullopt, std::nullopt});
  return r;
}

} // namespace

TEST_CASE("gateway: workers an agent lists at its first registration are stopped, and waited for until they exit") {
  waiting_gateway w(false);
  peer agent(w.g->port());
  agent.hello_as_agent("t0");
  agent.send(listing("t0", {{4, 0}, {4, 1}}));
  auto m = agent.receive();
  REQUIRE(m);
  auto* stop = std::get_if<wire::stop>(&*m);
  REQUIRE(stop);
  CHECK(stop->job_id == 4);
  CHECK(stop->grace_s == 2);
  CHECK(w.g->wait_for_found_workers(50ms) == std::vector<std::string>{"t0 job 4 rank 0", "t0 job 4 rank 1"});
  agent.send(wire::exit_{4, 0, 143, 0});
  agent.send(wire::exit_{4, 1, 143, 0});
  CHECK(w.g->wait_for_found_workers(5s).empty());
}

TEST_CASE("gateway: held workers of an adopted job keep running and their early exits reach the router, and the others are stopped") {
  waiting_gateway w(true);
  peer a0(w.g->port()), a1(w.g->port());
  a0.hello_as_agent("t0");
  a0.send(listing("t0", {{4, 0}, {4, 1}, {6, 0}}));
  a1.hello_as_agent("t1");
  a1.send(listing("t1", {{4, 2}, {4, 3}}));
  REQUIRE(w.g->wait_for_agents(5s).empty());
  auto found = w.g->found_workers();
  REQUIRE(found.size() == 2);
  CHECK(found["t0"].size() == 3);
  CHECK(found["t1"].size() == 2);
  w.g->settle_found_workers({4});
  // Only job 6 is stopped; job 4's workers run on.
  auto m = a0.receive();
  REQUIRE(m);
  auto* stop = std::get_if<wire::stop>(&*m);
  REQUIRE(stop);
  CHECK(stop->job_id == 6);
  CHECK(w.g->wait_for_found_workers(50ms) == std::vector<std::string>{"t0 job 6 rank 0"});
  a0.send(wire::exit_{6, 0, 143, 0});
  a1.send(wire::exit_{4, 3, 0, 0});  // an adopted worker ends before the run hears of it
  CHECK(w.g->wait_for_found_workers(5s).empty());
  // Wait until the gateway has read t1's exit too: a heartbeat after it on the same stream.
  a1.send(wire::heartbeat{1});
  std::this_thread::sleep_for(200ms);
  std::mutex mu;
  std::vector<std::string> exits;
  worker_router r;
  r.exit = [&](int s, uint32_t job, uint32_t rank, int code, int, const std::string&) {
    std::lock_guard lock(mu);
    exits.push_back(std::to_string(s) + " " + std::to_string(job) + ":" + std::to_string(rank) + " " +
                    std::to_string(code));
  };
  w.g->set_router(r);
  a1.send(wire::exit_{4, 2, 0, 0});  // and one after: passed on as it comes
  for (auto until = std::chrono::steady_clock::now() + 5s; std::chrono::steady_clock::now() < until;
       std::this_thread::sleep_for(5ms)) {
    std::lock_guard lock(mu);
    if (exits.size() >= 2) break;
  }
  w.g->set_router({});
  CHECK(exits == std::vector<std::string>{"1 4:3 0", "1 4:2 0"});
}

TEST_CASE_FIXTURE(gateway_fixture, "gateway: each agent heartbeat is answered with a heartbeat of the same seq") {
  peer agent(g->port());
  agent.register_as("t0");
  for (uint64_t seq : {1u, 2u, 7u}) {
    agent.send(wire::heartbeat{seq});
    auto m = agent.receive();
    REQUIRE(m);
    auto* h = std::get_if<wire::heartbeat>(&*m);
    REQUIRE(h);
    CHECK(h->seq == seq);
  }
}

TEST_CASE_FIXTURE(gateway_fixture, "gateway: a second agent under a connected agent's name is refused, and the first keeps its launches") {
  peer first(g->port());
  first.register_as("t0");
  REQUIRE(connected(1));
  first.send(wire::heartbeat{1});
  REQUIRE(first.receive());  // its heartbeat's answer: registered and heard
  peer second(g->port());
  second.register_as("t0");
  auto why = second.refusal();
  CHECK_MESSAGE(why.find("server 't0' is held by a connected agent") == 0, why);
  t0->launch(node_launch{4, "j4", 1, 0, 1, {2}, 100, 1, 0, {}});
  auto m = first.receive();
  REQUIRE(m);
  auto* l = std::get_if<wire::launch>(&*m);
  REQUIRE(l);
  CHECK(l->job_id == 4);
  CHECK(g->agents_connected() == 1);
}

TEST_CASE_FIXTURE(gateway_fixture, "gateway: a register refused for a held name says so by code, so that its agent stops its workers") {
  peer first(g->port());
  first.hello_as_agent("t0");
  first.send(wire::register_{"t0", "V100", 8, wire::pool_kind::training, {}, std::nullopt, std::string("aaaa")});
  REQUIRE(connected(1));
  first.send(wire::heartbeat{1});
  REQUIRE(first.receive());
  peer second(g->port());
  second.hello_as_agent("t0");
  second.send(wire::register_{"t0", "V100", 8, wire::pool_kind::training, {}, std::nullopt, std::string("bbbb")});
  auto m = second.receive();
  REQUIRE(m);
  auto* e = std::get_if<wire::error>(&*m);
  REQUIRE(e);
  CHECK(e->code == std::optional<std::string>{"name_held"});
  CHECK(e->reason.find("server 't0' is held by a connected agent") == 0);
}

TEST_CASE_FIXTURE(gateway_fixture, "gateway: a new connection of the same agent process takes back the name its old one still holds") {
  peer first(g->port());
  first.hello_as_agent("t0");
  first.send(wire::register_{"t0", "V100", 8, wire::pool_kind::training, {}, std::nullopt, std::string("aaaa")});
  REQUIRE(connected(1));
  first.send(wire::heartbeat{1});
  REQUIRE(first.receive());  // heard just now: the name is held
  peer again(g->port());
  again.hello_as_agent("t0");
  again.send(wire::register_{"t0", "V100", 8, wire::pool_kind::training, {}, std::nullopt, std::string("aaaa")});
  again.send(wire::heartbeat{1});
  auto m = again.receive();
  REQUIRE(m);
  CHECK(std::holds_alternative<wire::heartbeat>(*m));
  // The old connection is told it was replaced, and closed.
  auto old = first.receive();
  REQUIRE(old);
  auto* e = std::get_if<wire::error>(&*old);
  REQUIRE(e);
  CHECK(e->reason.find("replaced by a new connection of the same agent") != std::string::npos);
}

TEST_CASE_FIXTURE(gateway_fixture, "gateway: a report of an earlier generation of a rank is dropped, the latest launch's reaches the router") {
  peer agent(g->port());
  agent.register_as("t0");
  REQUIRE(connected(1));
  t0->launch(node_launch{4, "j4", 1, 0, 1, {2}, 100, 1, 0, {}});
  auto m1 = agent.receive();
  REQUIRE(m1);
  REQUIRE(std::get_if<wire::launch>(&*m1));
  CHECK(std::get<wire::launch>(*m1).generation == std::optional<uint64_t>{1});
  t0->launch(node_launch{4, "j4", 2, 0, 1, {2}, 100, 1, 0, {}});
  auto m2 = agent.receive();
  REQUIRE(m2);
  REQUIRE(std::get_if<wire::launch>(&*m2));
  CHECK(std::get<wire::launch>(*m2).generation == std::optional<uint64_t>{2});
  // The first launch's worker reports, then exits (code 7); then the second's exits (code 0).
  agent.send(wire::progress{4, 0, 55, 1, std::uint64_t{1}});
  agent.send(wire::exit_{4, 0, 7, 0, std::uint64_t{1}});
  agent.send(wire::progress{4, 0, 66, 2, std::uint64_t{2}});
  agent.send(wire::exit_{4, 0, 0, 0, std::uint64_t{2}});
  REQUIRE(saw("exit server=0 job=4 rank=0 0"));
  std::lock_guard lock(seen_mutex);
  CHECK(std::count_if(seen.begin(), seen.end(), [](auto& s) { return s.rfind("exit", 0) == 0; }) == 1);
  CHECK(std::find(seen.begin(), seen.end(), "progress server=0 job=4 rank=0 55") == seen.end());
  CHECK(std::find(seen.begin(), seen.end(), "progress server=0 job=4 rank=0 66") != seen.end());
  CHECK(log_text.str().find("job 4 rank 0 of generation 1 exited (code 7, signal 0): a worker of an earlier launch, "
                            "its report dropped") != std::string::npos);
}

TEST_CASE_FIXTURE(gateway_fixture, "gateway: an agent that closed its connection is replaced at once by its next registration") {
  {
    peer first(g->port());
    first.register_as("t0");
    REQUIRE(connected(1));
  }  // closed; the gateway may not have read the close yet
  peer again(g->port());
  again.register_as("t0");
  again.send(wire::heartbeat{1});
  auto m = again.receive();
  REQUIRE(m);
  CHECK(std::holds_alternative<wire::heartbeat>(*m));
}

TEST_CASE_FIXTURE(gateway_fixture, "gateway: a registration beyond the limits is refused to that agent only, naming the field") {
  peer agent(g->port());
  agent.register_as("t1");
  REQUIRE(connected(1));
  auto refused = [&](wire::register_ r) {
    peer p(g->port());
    p.hello_as_agent("x");
    p.send(r);
    return p.refusal();
  };
  CHECK(refused({"t0", "V100", 4294967295u, wire::pool_kind::training, {}}) ==
        "register: server 't0': 4294967295 GPUs; a machine registers 1 to 1024");
  CHECK(refused({"t0", "V100", 0, wire::pool_kind::training, {}}) ==
        "register: server 't0': 0 GPUs; a machine registers 1 to 1024");
  CHECK(refused({"", "V100", 8, wire::pool_kind::training, {}}) == "register: server name is empty");
  CHECK(refused({std::string(64, 'x'), "V100", 8, wire::pool_kind::training, {}}) ==
        "register: server name is 64 bytes, at most 63 are allowed");
  CHECK(refused({"t 0", "V100", 8, wire::pool_kind::training, {}}) ==
        "register: server name holds byte 0x20 at byte 1: letters, digits, '.', '_' and '-' only");
  CHECK(refused({"t0", "", 8, wire::pool_kind::training, {}}) == "register: server 't0': gpu_type is empty");
  wire::register_ listed{"t0", "V100", 8, wire::pool_kind::training, {}};
  listed.workers.push_back({3, 0, {8}, std::nullopt, std::nullopt, std::nullopt});
  CHECK(refused(listed) == "register: server 't0': job 3 rank 0 is listed on GPU 8, beyond its 8 GPUs");
  wire::register_ addressed{"t0", "V100", 8, wire::pool_kind::training, {}, "10.0.0.7 && rm"};
  CHECK(refused(addressed) == "register: server 't0': address '10.0.0.7 && rm' is not a host name or an IP address");
  addressed.address = "";
  CHECK(refused(addressed) == "register: server 't0': address is empty or over 253 bytes");
  wire::register_ versioned{"t0", "V100", 8, wire::pool_kind::training, {}};
  versioned.version = "0.14 beta";
  CHECK(refused(versioned) == "register: server 't0': version '0.14 beta' is not 1 to 64 printable ASCII bytes "
                              "without spaces");
  versioned.version = std::string(65, '1');
  CHECK(refused(versioned).find("is not 1 to 64 printable ASCII bytes") != std::string::npos);
  agent.send(wire::progress{7, 0, 2.5, 3});
  CHECK(saw("progress server=1 job=7 rank=0 2.5"));
}
