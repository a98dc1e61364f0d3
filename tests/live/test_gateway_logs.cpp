// `aryl logs` through the gateway (runtime/live/log_relay.hpp) against raw socket peers: a
// client that pipelines requests without reading, or many clients at once, cannot make serve
// ask an agent for more than a few log pieces at a time.
#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <sstream>
#include <thread>
#include <vector>

#include "runtime/live/gateway.hpp"
#include "runtime/live/log_relay.hpp"
#include "tests/live/gateway_peer.hpp"

using namespace aryl;
using namespace std::chrono_literals;
using aryl::test::peer;

namespace {

/// A gateway with server t0 whose agent is registered, and job 4's ranks 0 and 1 launched there.
struct logs_fixture {
  std::ostringstream log_text;
  std::unique_ptr<live::gateway> g;
  std::shared_ptr<node_link> t0;
  std::unique_ptr<peer> agent;

  logs_fixture() {
    live::gateway_options o;
    o.token = "secret";
    o.checkpoint_root = "/tmp/aryl-gateway-test";
    o.book = std::make_shared<live::job_book>();
    g = std::make_unique<live::gateway>(o, log_text);
    t0 = g->add_server(0, "t0", "V100", 8, wire::pool_kind::training);
    agent = std::make_unique<peer>(g->port());
    agent->register_as("t0");
    for (auto until = std::chrono::steady_clock::now() + 5s; g->agents_connected() != 1;
         std::this_thread::sleep_for(5ms))
      REQUIRE(std::chrono::steady_clock::now() < until);
    t0->launch(node_launch{4, "j4", 1, 0, 2, {0, 1}, 10, 1, 0, {}, 0});
    REQUIRE(agent->receive());
    REQUIRE(agent->receive());
  }
  ~logs_fixture() { g->close(); }

  std::unique_ptr<peer> client() {
    auto c = std::make_unique<peer>(g->port());
    c->send(wire::hello{wire::peer_role::client, "secret", "cli"});
    auto ok = c->receive();
    REQUIRE(ok);
    REQUIRE(std::holds_alternative<wire::hello_ok>(*ok));
    return c;
  }

  /// The log_fetches the agent receives until none comes for 300 ms (serve forwards at once:
  /// a quiet 300 ms means it holds the rest back).
  std::vector<wire::log_fetch> fetches() {
    std::vector<wire::log_fetch> out;
    while (auto m = agent->receive(300ms)) {
      auto* f = std::get_if<wire::log_fetch>(&*m);
      REQUIRE_MESSAGE(f, wire::type_of(*m));
      out.push_back(*f);
    }
    return out;
  }

  void answer(const wire::log_fetch& f) { agent->send(wire::log_chunk{f.request, "step=1\n", 7, std::nullopt}); }
};

/// `n` logs requests of (job 4, rank 0) in one write, as a client that does not wait for replies.
std::vector<uint8_t> pipelined(size_t n) {
  std::vector<uint8_t> bytes;
  for (size_t i = 0; i < n; ++i) {
    auto f = wire::encode_frame(wire::logs_request{4, 0, 0});
    bytes.insert(bytes.end(), f.begin(), f.end());
  }
  return bytes;
}

} // namespace

TEST_CASE_FIXTURE(logs_fixture, "gateway: a client pipelining logs requests has 4 fetched at a time, the next one as one is answered") {
  auto c = client();
  c->send_raw(pipelined(50));
  auto first = fetches();
  CHECK(first.size() == live::log_relay::max_requests_per_client);
  REQUIRE_FALSE(first.empty());
  answer(first[0]);
  auto reply = c->receive();
  REQUIRE(reply);
  CHECK(std::holds_alternative<wire::logs_reply>(*reply));
  CHECK(fetches().size() == 1);  // its place taken, no more
}

TEST_CASE_FIXTURE(logs_fixture, "gateway: an agent is asked for 16 log pieces at a time however many clients ask, the rest as it answers") {
  std::vector<std::unique_ptr<peer>> clients;
  for (int i = 0; i < 6; ++i) {
    clients.push_back(client());
    clients.back()->send_raw(pipelined(live::log_relay::max_requests_per_client));
  }
  auto sent = fetches();
  CHECK(sent.size() == live::log_relay::max_fetches_per_agent);
  for (auto& f : sent) answer(f);
  auto rest = fetches();
  CHECK(rest.size() == 6 * live::log_relay::max_requests_per_client - live::log_relay::max_fetches_per_agent);
  for (auto& f : rest) answer(f);
  for (auto& c : clients)
    for (size_t i = 0; i < live::log_relay::max_requests_per_client; ++i) {
      auto m = c->receive();
      REQUIRE(m);
      CHECK(std::holds_alternative<wire::logs_reply>(*m));
    }
}
