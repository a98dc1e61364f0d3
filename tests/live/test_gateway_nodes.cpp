// The gateway's part of a changing inventory (runtime/live/gateway_nodes.cpp): a training agent
// of a new name joins a running cluster through the router and is then an agent like the
// others; an inference one is refused; a client's cordon, drain and resume reach the
// scheduler and its answer, or its refusal, reaches the client.
#include <doctest/doctest.h>

#include <functional>
#include <mutex>
#include <sstream>
#include <thread>

#include "runtime/live/gateway.hpp"
#include "runtime/live/metrics.hpp"
#include "tests/live/gateway_peer.hpp"

using namespace aryl;
using namespace std::chrono_literals;
using aryl::test::peer;

namespace {

struct nodes_fixture {
  std::ostringstream log_text;
  std::unique_ptr<live::gateway> g;
  std::mutex m;
  std::vector<std::string> seen;  ///< joins, orders and reports, as text

  nodes_fixture() {
    live::gateway_options o;
    o.token = "secret";
    o.checkpoint_root = "/tmp/aryl-gateway-nodes-test";
    g = std::make_unique<live::gateway>(o, log_text);
    g->add_server(0, "t0", "V100", 8, wire::pool_kind::training);
    worker_router r;
    r.progress = [this](int s, uint32_t job, uint32_t, double) {
      note("progress server=" + std::to_string(s) + " job=" + std::to_string(job));
    };
    // Answered at once, or held until release_joins.
    r.join = [this](node_join j, std::shared_ptr<node_link> link, std::function<void(join_answer)> reply) {
      note("join " + j.server + " " + std::to_string(j.gpus) + "x" + j.gpu_type);
      auto answer = !link                  ? join_answer{-1, "no link"}
                    : j.gpu_type == "V100" ? join_answer{1, {}}
                                           : join_answer{-1, "server '" + j.server + "': no such type"};
      std::lock_guard lock(m);
      if (hold_joins) return held.push_back([reply, answer] { reply(answer); });
      reply(answer);
    };
    r.node = [this](node_order o, std::function<void(node_answer)> reply) {
      note(o.action + " " + o.server + " reason=" + o.reason + (o.now ? " now" : ""));
      if (o.server != "t0") return reply(node_answer{false, "no server '" + o.server + "' (this cluster has: t0)"});
      reply(node_answer{true, o.server + ": drained now: 0 jobs stopped"});
    };
    g->set_router(std::move(r));
  }
  ~nodes_fixture() {
    release_joins();
    g->close();
  }
  bool hold_joins = false;
  std::vector<std::function<void()>> held;
  void release_joins() {
    std::vector<std::function<void()>> now;
    {
      std::lock_guard lock(m);
      now.swap(held);
    }
    for (auto& f : now) f();
  }
  void note(std::string s) {
    std::lock_guard lock(m);
    seen.push_back(std::move(s));
  }
  bool saw(const std::string& text) {
    for (auto until = std::chrono::steady_clock::now() + 5s; std::chrono::steady_clock::now() < until;
         std::this_thread::sleep_for(5ms)) {
      std::lock_guard lock(m);
      for (auto& s : seen)
        if (s == text) return true;
    }
    return false;
  }
};

} // namespace

TEST_CASE_FIXTURE(nodes_fixture, "gateway: a training agent of a new name joins a running cluster and reports as its server") {
  peer late(g->port());
  late.register_as("t5", "V100", 4);
  CHECK(saw("join t5 4xV100"));
  late.send(wire::heartbeat{1});
  auto answer = late.receive();
  REQUIRE(answer);
  CHECK(std::holds_alternative<wire::heartbeat>(*answer));  // registered: heartbeats are answered
  late.send(wire::progress{7, 0, 1.5, 1});
  CHECK(saw("progress server=1 job=7"));  // the id the scheduler gave
}

TEST_CASE_FIXTURE(nodes_fixture,
                  "gateway: a join waiting for the scheduler delays no other agent's heartbeat, and the joining agent's "
                  "frames sent meanwhile are read once it has joined") {
  {
    std::lock_guard lock(m);
    hold_joins = true;
  }
  peer t0(g->port());
  t0.register_as("t0");
  peer late(g->port());
  late.register_as("t5", "V100", 4);
  REQUIRE(saw("join t5 4xV100"));  // asked, not answered
  late.send(wire::heartbeat{1});   // sent before it has joined
  auto t_start = std::chrono::steady_clock::now();
  t0.send(wire::heartbeat{1});
  auto beat = t0.receive(1s);
  REQUIRE(beat);
  CHECK(std::holds_alternative<wire::heartbeat>(*beat));
  CHECK(std::chrono::steady_clock::now() - t_start < 500ms);
  CHECK_FALSE(late.receive(50ms));  // not registered yet: its heartbeat waits
  release_joins();
  auto answer = late.receive();
  REQUIRE(answer);
  CHECK(std::holds_alternative<wire::heartbeat>(*answer));
  late.send(wire::progress{7, 0, 1.5, 1});
  CHECK(saw("progress server=1 job=7"));
}

TEST_CASE_FIXTURE(nodes_fixture, "gateway: a joining agent the scheduler refuses, or an inference one, is told why") {
  peer odd(g->port());
  odd.register_as("t6", "A100", 4);
  CHECK(odd.refusal() == "server 't6': no such type");
  peer inference(g->port());
  inference.hello_as_agent("i9");
  inference.send(wire::register_{"i9", "T4", 4, wire::pool_kind::inference, {}});
  CHECK(inference.refusal() == "server 'i9': an inference machine joins only before the run starts (aryl serve "
                               "--join); a running cluster takes training machines");
}

TEST_CASE_FIXTURE(nodes_fixture, "gateway: a client's drain reaches the scheduler and its answer the client, and a refusal closes") {
  peer client(g->port());
  client.send(wire::hello{wire::peer_role::client, "secret", "ops"});
  REQUIRE(client.receive());
  client.send(wire::node_request{"t0", "drain", "disk swap", true});
  auto reply = client.receive();
  REQUIRE(reply);
  auto* r = std::get_if<wire::node_reply>(&*reply);
  REQUIRE(r);
  CHECK(r->text == "t0: drained now: 0 jobs stopped");
  CHECK(saw("drain t0 reason=disk swap now"));
  client.send(wire::node_request{"t9", "cordon", std::nullopt, std::nullopt});
  CHECK(client.refusal() == "no server 't9' (this cluster has: t0)");
  peer bad(g->port());
  bad.send(wire::hello{wire::peer_role::client, "secret", "ops"});
  REQUIRE(bad.receive());
  bad.send(wire::node_request{"t0", "cordon", std::nullopt, true});
  CHECK(bad.refusal() == "node_request: now is for drain only (cordon t0)");
}

TEST_CASE("metrics: a held server's GPUs are counted held, and each held server is listed with its hold") {
  cluster_status s;
  s.servers = {{"t0", "V100", 8, 8, false, "training", hold_state::up, ""},
               {"t1", "V100", 8, 0, false, "cordoned", hold_state::drained, "disk swap"}};
  auto text = live::render_metrics(s, {2, 2});
  CHECK(text.find("aryl_gpus{pool=\"training\",gpu_type=\"V100\",use=\"held\"} 8\n") != std::string::npos);
  CHECK(text.find("aryl_gpus{pool=\"training\",gpu_type=\"V100\",use=\"free\"} 8\n") != std::string::npos);
  CHECK(text.find("aryl_servers{pool=\"training\",mode=\"cordoned\"} 1\n") != std::string::npos);
  CHECK(text.find("aryl_server_held{server=\"t1\",hold=\"drained\"} 1\n") != std::string::npos);
  CHECK(text.find("aryl_server_held{server=\"t0\"") == std::string::npos);
}

TEST_CASE_FIXTURE(nodes_fixture, "gateway: a joining agent with a GPU count beyond the limit is refused before the scheduler hears of it") {
  peer huge(g->port());
  huge.register_as("x1", "V100", 4294967295u);
  CHECK(huge.refusal() == "register: server 'x1': 4294967295 GPUs; a machine registers 1 to 1024");
  peer fine(g->port());
  fine.register_as("x2", "V100", 4);
  CHECK(saw("join x2 4xV100"));
  std::lock_guard lock(m);
  for (auto& s : seen) CHECK(s.find("join x1") == std::string::npos);
}

TEST_CASE_FIXTURE(nodes_fixture, "gateway: a machine that joined a running cluster counts as configured from then on") {
  CHECK(g->agents_configured() == 1);  // t0
  peer odd(g->port());
  odd.register_as("t6", "A100", 4);
  CHECK(odd.refusal() == "server 't6': no such type");
  CHECK(g->agents_configured() == 1);  // a refused join is not in the cluster
  peer late(g->port());
  late.register_as("t5", "V100", 4);
  late.send(wire::heartbeat{1});
  auto answer = late.receive();
  REQUIRE(answer);
  REQUIRE(std::holds_alternative<wire::heartbeat>(*answer));  // joined and registered
  CHECK(g->agents_configured() == 2);
  CHECK(g->agents_connected() == 1);  // t0's agent never came: connected counts t5 only
}

TEST_CASE("gateway: with --join, an agent the cluster cannot take is refused with its reason and the others join") {
  std::ostringstream log;
  live::gateway_options o;
  o.token = "secret";
  o.checkpoint_root = "/tmp/aryl-gateway-nodes-test";
  o.join = true;
  o.join_problem = [](const std::string& name, const std::string& type) {
    return type == "H100" ? "agent " + name + " reports GPU type H100, which the config has no speed for: set gpu_speed.H100"
                          : std::string{};
  };
  live::gateway g(o, log);
  peer odd(g.port());
  odd.register_as("gpu-x", "H100", 4);
  CHECK(odd.refusal() ==
        "may not join: agent gpu-x reports GPU type H100, which the config has no speed for: set gpu_speed.H100");
  peer a(g.port());
  a.register_as("gpu-a", "V100", 4);
  // Two agents came, one refused: the inventory is taken at once, not after the timeout.
  auto start = std::chrono::steady_clock::now();
  auto joined = g.join_agents(2, 10s);
  CHECK(std::chrono::steady_clock::now() - start < 5s);
  REQUIRE(joined.size() == 1);
  CHECK(joined[0].name == "gpu-a");
  REQUIRE(g.refused_joins().size() == 1);
  CHECK(g.refused_joins()[0].find("set gpu_speed.H100") != std::string::npos);
  g.close();
}
