// The gateway under hostile load (runtime/live/gateway_listener, gateway_session): accept
// errors do not stop the listener; unauthenticated connections have a deadline, a byte cap
// and caps on their number; a client that floods status requests and never reads delays
// neither other clients nor agents.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <thread>

#include "runtime/live/gateway.hpp"
#include "tests/live/gateway_peer.hpp"

using namespace aryl;
using namespace std::chrono_literals;
using aryl::test::peer;

namespace {

/// Thread-safe, as the gateway's thread writes while the test reads.
struct log_sink : std::stringbuf {
  std::recursive_mutex m;  // xsputn calls overflow
  std::string text() {
    std::lock_guard lock(m);
    return str();
  }
  int sync() override { return 0; }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    std::lock_guard lock(m);
    return std::stringbuf::xsputn(s, n);
  }
  int overflow(int c) override {
    std::lock_guard lock(m);
    return std::stringbuf::overflow(c);
  }
};

struct limits_fixture {
  log_sink sink;
  std::ostream log{&sink};
  std::unique_ptr<live::gateway> g;
  std::atomic<int> asks{0};

  void start(live::gateway_options o) {
    o.token = "secret";
    o.checkpoint_root = "/tmp/aryl-gateway-limits-test";
    g = std::make_unique<live::gateway>(o, log);
    g->add_server(0, "t0", "V100", 8, wire::pool_kind::training);
    worker_router r;
    // As the driver's: a blocking ask costs the caller about 5 ms (a turn of the driver's
    // loop); an asynchronous one answers from another thread as late.
    r.status = [] {
      std::this_thread::sleep_for(5ms);
      return cluster_status{};
    };
    r.status_async = [this](std::function<void(cluster_status)> reply) {
      ++asks;
      std::thread([reply] {
        std::this_thread::sleep_for(5ms);
        cluster_status s;
        s.jobs = {{1, "j1", true, 4, "", 0, 0, 0, "", -1, "", true, ""}};
        reply(s);
      }).detach();
    };
    // Submits are numbered from 100 as asked and answered from another thread, the earlier
    // ones later (so answers could overtake each other), or held until release_submits.
    r.submit = [this](job_spec, std::function<void(submit_result)> reply) {
      int64_t job = next_job++;
      std::lock_guard lock(held_mutex);
      if (hold_submits) return held.push_back([reply, job] { reply(submit_result{job, "", {}}); });
      auto delay = std::chrono::milliseconds(std::max<int64_t>(0, 50 - 10 * (job - 100)));
      std::thread([reply, job, delay] {
        std::this_thread::sleep_for(delay);
        reply(submit_result{job, "", {}});
      }).detach();
    };
    r.cancel = [this](uint32_t job, std::function<void(std::string)> reply) {
      reply(job >= 100 && job < next_job ? std::string() : "job " + std::to_string(job) + ": no such job");
    };
    // Node orders are held as submits may be (an answer from another thread, later).
    r.node = [this](node_order o, std::function<void(node_answer)> reply) {
      ++node_asks;
      std::lock_guard lock(held_mutex);
      held.push_back([reply, o] { reply(node_answer{true, o.server + ": cordoned"}); });
    };
    g->set_router(r);
  }
  std::atomic<int> node_asks{0};
  void release_submits() {
    std::lock_guard lock(held_mutex);
    for (auto& f : held) f();
    held.clear();
  }
  std::atomic<int64_t> next_job{100};
  std::mutex held_mutex;
  bool hold_submits = false;
  std::vector<std::function<void()>> held;
  ~limits_fixture() {
    release_submits();
    if (g) g->close();
  }
  bool logged(const std::string& text) {
    for (auto until = std::chrono::steady_clock::now() + 5s; std::chrono::steady_clock::now() < until;
         std::this_thread::sleep_for(5ms))
      if (sink.text().find(text) != std::string::npos) return true;
    return false;
  }
};

void hello(peer& p, const std::string& name = "cli") {
  p.send(wire::hello{wire::peer_role::client, "secret", name});
  auto ok = p.receive();
  REQUIRE(ok);
  REQUIRE(std::holds_alternative<wire::hello_ok>(*ok));
}

/// A peer that has sent a client's hello but for its last byte: counted before hello, as it
/// buffers (an idle peer, that sent nothing, is not). finish() sends the byte.
struct speaking {
  peer p;
  std::vector<uint8_t> frame;
  speaking(uint16_t port, const std::string& name, const char* from = nullptr)
      : p(port, from), frame(wire::encode_frame(wire::hello{wire::peer_role::client, "secret", name})) {
    p.send_raw({frame.begin(), frame.end() - 1});
  }
  void finish() {
    p.send_raw({frame.back()});
    auto ok = p.receive();
    REQUIRE(ok);
    REQUIRE(std::holds_alternative<wire::hello_ok>(*ok));
  }
};

/// Returns once the gateway's thread has handled what came before: a status asked through
/// `control` (past hello) is answered after the bytes of peers that sent theirs earlier.
void settle(peer& control) {
  control.send(wire::status_request{});
  auto m = control.receive();
  REQUIRE(m);
  REQUIRE(std::holds_alternative<wire::status_reply>(*m));
}

/// An agent's heartbeat is answered within a second.
void beat(peer& agent) {
  agent.send(wire::heartbeat{1});
  auto echo = agent.receive(1s);
  REQUIRE(echo);
  CHECK(std::holds_alternative<wire::heartbeat>(*echo));
}

size_t open_descriptors() {
  size_t n = 0;
  for ([[maybe_unused]] auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

/// Lowers the soft limit of open files for the test's span.
struct file_limit {
  rlimit before{};
  explicit file_limit(rlim_t soft) {
    REQUIRE(getrlimit(RLIMIT_NOFILE, &before) == 0);
    rlimit now = before;
    now.rlim_cur = soft;
    REQUIRE(setrlimit(RLIMIT_NOFILE, &now) == 0);
  }
  ~file_limit() { setrlimit(RLIMIT_NOFILE, &before); }
};

} // namespace

TEST_CASE_FIXTURE(limits_fixture,
                  "gateway: out of descriptors, waiting peers are refused with a reason, the error is logged, and "
                  "the listener accepts again once descriptors are free") {
  start({});
  // 40 sockets made now, connected once the limit leaves room for 3 accepted connections.
  std::vector<int> fds;
  for (int i = 0; i < 40; ++i) fds.push_back(socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(g->port());
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  {
    file_limit limit(open_descriptors() + 3);
    for (int fd : fds) REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    int refused = 0;
    for (int fd : fds) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 300) <= 0) continue;  // accepted: it waits for our hello
      uint8_t buf[512];
      auto n = recv(fd, buf, sizeof buf, 0);
      wire::frame_decoder d;
      if (n > 0) d.feed(buf, static_cast<size_t>(n));
      auto step = d.next();
      auto* m = std::get_if<wire::message>(&step);
      auto* e = m ? std::get_if<wire::error>(m) : nullptr;
      if (e && e->reason == "serve is out of file descriptors; try again later") ++refused;
    }
    CHECK(refused >= 30);
    CHECK(logged("accept failed: Too many open files"));
    for (int fd : fds) close(fd);
    // The gateway's ends of the accepted ones close as their peers do.
    std::this_thread::sleep_for(100ms);
    peer late(g->port());
    hello(late);
  }
}

TEST_CASE_FIXTURE(limits_fixture, "gateway: a peer trickling bytes without completing hello is closed at the hello deadline") {
  live::gateway_options o;
  o.hello_timeout_s = 0.5;
  start(o);
  peer slow(g->port());
  auto frame = wire::encode_frame(wire::hello{wire::peer_role::client, "secret", "slow"});
  auto began = std::chrono::steady_clock::now();
  // A byte every 100 ms until just before the deadline: each would restart a silence timer.
  for (size_t i = 0; i < 4; ++i) {
    slow.send_raw({frame[i]});
    std::this_thread::sleep_for(100ms);
  }
  CHECK(slow.refusal() == "no hello within 0.5 s of connecting");
  // At the deadline from the connection's start, not from its last byte (0.9 s).
  CHECK(std::chrono::steady_clock::now() - began < 800ms);
}

TEST_CASE_FIXTURE(limits_fixture,
                  "gateway: idle connections that came together are closed over 1 to 1.5 times the hello deadline, "
                  "not together") {
  live::gateway_options o;
  o.hello_timeout_s = 0.4;
  o.pre_hello_closes_per_s = 100;  // all 20 closed, none silenced: the spread is what is timed
  start(o);
  std::vector<std::unique_ptr<peer>> idle;
  for (int i = 0; i < 20; ++i) idle.push_back(std::make_unique<peer>(g->port()));
  auto began = std::chrono::steady_clock::now();
  // When each one's error frame came, s after the last dial, watching all at once.
  std::vector<double> closed(idle.size(), -1);
  while (std::count(closed.begin(), closed.end(), -1) > 0 && std::chrono::steady_clock::now() - began < 2s) {
    std::vector<pollfd> fds;
    for (auto& p : idle) fds.push_back({p->fd(), POLLIN, 0});
    poll(fds.data(), fds.size(), 5);
    auto now = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    for (size_t i = 0; i < fds.size(); ++i)
      if (fds[i].revents && closed[i] < 0) closed[i] = now;
  }
  for (auto& p : idle) CHECK(p->refusal().starts_with("no hello within "));
  std::sort(closed.begin(), closed.end());
  REQUIRE(closed.front() >= 0);
  MESSAGE("first close " << closed.front() << " s, last " << closed.back() << " s");
  CHECK(closed.back() < 0.75);
  CHECK(closed.back() - closed.front() > 0.1);  // the same instant, unspread
}

TEST_CASE_FIXTURE(limits_fixture, "gateway: more than pre_hello_bytes before hello closes the connection naming the limit") {
  start({});
  peer big(g->port());
  // A frame announcing 100,000 bytes (under the 1 MiB frame limit), then 20,000 of them.
  std::vector<uint8_t> bytes(4 + 20000, 0x90);
  bytes[0] = 0x00, bytes[1] = 0x01, bytes[2] = 0x86, bytes[3] = 0xa0;
  big.send_raw(bytes);
  CHECK(big.refusal() == "a first frame of 100000 bytes, more than the 8192 allowed before hello");
}

TEST_CASE_FIXTURE(limits_fixture,
                  "gateway: a first frame announcing more than pre_hello_bytes is judged at its 4 length bytes") {
  start({});  // hello deadline 10 s
  peer big(g->port());
  auto t0 = std::chrono::steady_clock::now();
  big.send_raw({0x00, 0x01, 0x86, 0xa0});  // 100,000 bytes announced, none of them sent
  CHECK(big.refusal() == "a first frame of 100000 bytes, more than the 8192 allowed before hello");
  CHECK(std::chrono::steady_clock::now() - t0 < 1s);
}

TEST_CASE_FIXTURE(limits_fixture,
                  "gateway: past pre_hello_closes_per_s of its address, an attacker dialling again every connection "
                  "closed before hello is silenced, not cycled, and a client of its address is served at once") {
  live::gateway_options o;
  // Idle connections end 0.2 to 0.3 s after they came. Their silence limit is the same, as
  // with serve's defaults (10 s each): both timers come due together, and neither may close
  // a connection the other silenced.
  o.hello_timeout_s = o.agent_silence_s = 0.2;
  start(o);  // 10 closes before hello a second per address, 10 at once
  std::vector<std::unique_ptr<peer>> idle;
  for (int i = 0; i < 50; ++i) idle.push_back(std::make_unique<peer>(g->port(), "127.0.0.2"));
  auto began = std::chrono::steady_clock::now();
  int redials = 0;
  std::vector<pollfd> fds(idle.size());
  while (std::chrono::steady_clock::now() - began < 1200ms) {
    for (size_t i = 0; i < idle.size(); ++i) fds[i] = {idle[i]->fd(), POLLIN, 0};
    if (poll(fds.data(), fds.size(), 10) <= 0) continue;
    for (size_t i = 0; i < idle.size(); ++i)
      if (fds[i].revents) {  // an error frame, or the close: dial again at once
        idle[i] = std::make_unique<peer>(g->port(), "127.0.0.2");
        ++redials;
      }
  }
  MESSAGE("the attacker dialled " << redials << " times again in 1.2 s");
  // Closed at every deadline, the 50 and their successors would come back about 200 times.
  // With the budget: 10 at once, then 10 a second from about 0.2 s, so about 20.
  CHECK(redials >= 10);
  CHECK(redials <= 25);
  CHECK(logged("silenced, not closed: no hello within 0."));
  CHECK(logged("(127.0.0.2 is past its 10 closes before hello a second)"));
  auto t0 = std::chrono::steady_clock::now();
  peer client(g->port(), "127.0.0.2");
  hello(client, "operator");
  settle(client);
  CHECK(std::chrono::steady_clock::now() - t0 < 250ms);
}

TEST_CASE_FIXTURE(limits_fixture,
                  "gateway: a silenced connection whose peer has gone is let go without the budget of closes before "
                  "hello") {
  live::gateway_options o;
  o.hello_timeout_s = 0.2;
  o.pre_hello_closes_per_s = 0.5;  // one close at once, the next 2 s later
  start(o);
  auto began = std::chrono::steady_clock::now();
  std::array<std::unique_ptr<peer>, 2> two{std::make_unique<peer>(g->port(), "127.0.0.2"),
                                          std::make_unique<peer>(g->port(), "127.0.0.2")};
  // Both reach their deadline by 0.3 s: the first is closed (the budget's one close), the
  // other silenced, and judged again 0.2 to 0.3 s later.
  std::this_thread::sleep_for(400ms);
  std::array<pollfd, 2> fds{pollfd{two[0]->fd(), POLLIN, 0}, pollfd{two[1]->fd(), POLLIN, 0}};
  poll(fds.data(), fds.size(), 0);
  REQUIRE((fds[0].revents != 0) != (fds[1].revents != 0));
  size_t silent = fds[0].revents ? 1 : 0;
  CHECK(two[1 - silent]->refusal().starts_with("no hello within 0."));
  auto descriptors = open_descriptors();
  two[silent].reset();  // the peer closes; the budget stays empty until about 2.2 s
  CHECK(logged("let go: its peer had gone while it was silenced (no hello within 0."));
  CHECK(std::chrono::steady_clock::now() - began < 1500ms);
  CHECK(open_descriptors() == descriptors - 2);  // the peer's end and the gateway's
}

TEST_CASE_FIXTURE(limits_fixture,
                  "gateway: a hello refused past its address's budget of closes before hello is still answered at "
                  "once, and let go when its peer closes") {
  live::gateway_options o;
  o.hello_timeout_s = 2;  // a silenced connection is judged 2 to 3 s later
  o.pre_hello_closes_per_s = 0.5;  // one close at once, the next 2 s later
  start(o);
  peer first(g->port(), "127.0.0.2");
  first.send(wire::hello{wire::peer_role::client, "wrong", "first"});
  CHECK(first.refusal() == "wrong cluster token");  // the budget's one close
  auto t0 = std::chrono::steady_clock::now();
  auto second = std::make_unique<peer>(g->port(), "127.0.0.2");
  second->send(wire::hello{wire::peer_role::client, "wrong", "second"});
  auto m = second->receive(1500ms);  // held silent until judged, it would hear nothing here
  REQUIRE(m);
  auto* e = std::get_if<wire::error>(&*m);
  REQUIRE(e);
  CHECK(e->reason == "wrong cluster token");
  CHECK(std::chrono::steady_clock::now() - t0 < 500ms);
  CHECK(logged("silenced, not closed: wrong cluster token"));
  CHECK_FALSE(second->receive(300ms));  // held: not closed within the budget
  auto descriptors = open_descriptors();
  second.reset();  // the client closes on its error, as aryl's does
  CHECK(logged("let go: its peer had gone while it was silenced (wrong cluster token)"));
  CHECK(open_descriptors() == descriptors - 2);
}

TEST_CASE_FIXTURE(limits_fixture,
                  "gateway: at the cap on connections that sent bytes before hello of an address the oldest of them "
                  "is evicted, and a hello or a close frees a place") {
  live::gateway_options o;
  o.max_before_hello_per_address = 3;
  o.max_before_hello = 5;
  start(o);
  peer control(g->port());
  hello(control, "control");
  std::vector<std::unique_ptr<speaking>> waiting;
  for (int i = 0; i < 3; ++i) {
    waiting.push_back(std::make_unique<speaking>(g->port(), "w" + std::to_string(i)));
    settle(control);
  }
  // Before hello from 127.0.0.1: 3 of 3. A fourth takes the place of the oldest.
  speaking fourth(g->port(), "fourth");
  CHECK(waiting[0]->p.refusal() ==
        "evicted: 127.0.0.1 holds its limit of 3 connections before hello, and this was the oldest");
  CHECK(logged("closing: evicted: 127.0.0.1 holds its limit of 3"));
  fourth.finish();  // past hello: no longer counted
  waiting[1]->finish();
  waiting.pop_back();  // closed: its place is free
  settle(control);
  // Before hello now: none but w... of waiting[0], evicted; 3 places free.
  speaking a(g->port(), "a"), b(g->port(), "b"), c(g->port(), "c");
  settle(control);
  a.finish();
  b.finish();
  c.finish();
}

TEST_CASE_FIXTURE(limits_fixture,
                  "gateway: at the cap on connections that sent bytes before hello in all the oldest of any address "
                  "is evicted") {
  live::gateway_options o;
  o.max_before_hello_per_address = 3;
  o.max_before_hello = 4;
  start(o);
  peer control(g->port());
  hello(control, "control");
  speaking oldest(g->port(), "oldest", "127.0.0.2");
  settle(control);
  speaking second(g->port(), "second", "127.0.0.3");
  settle(control);
  speaking third(g->port(), "third", "127.0.0.3");
  settle(control);
  speaking fourth(g->port(), "fourth", "127.0.0.4");
  settle(control);
  speaking fifth(g->port(), "fifth", "127.0.0.5");
  CHECK(oldest.p.refusal() == "evicted: serve holds its limit of 4 connections before hello, and this was the oldest");
  CHECK(logged("(127.0.0.2:"));
  second.finish();
  fifth.finish();
}

TEST_CASE_FIXTURE(limits_fixture,
                  "gateway: at the cap on connections the oldest of the address holding the most that sent nothing "
                  "gives way, and with none such the newcomer is refused") {
  live::gateway_options o;
  o.max_connections = 5;
  start(o);
  peer control(g->port());
  hello(control, "control");
  // Connections: control (past hello), two idle of 127.0.0.2, one of 127.0.0.3 = 4 of 5.
  peer a1(g->port(), "127.0.0.2"), a2(g->port(), "127.0.0.2"), b1(g->port(), "127.0.0.3");
  settle(control);
  peer fifth(g->port(), "127.0.0.3");
  settle(control);
  // 5 of 5: a sixth (of 127.0.0.3) takes the place of 127.0.0.2's oldest, not of b1, older.
  peer sixth(g->port(), "127.0.0.3");
  CHECK(a1.refusal() == "evicted: serve holds its limit of 5 connections, and this was the oldest connection of "
                        "127.0.0.2, which holds the most that sent nothing");
  // Every one past hello: then a newcomer is refused.
  hello(a2, "a2");
  hello(b1, "b1");
  hello(fifth, "fifth");
  hello(sixth, "sixth");
  peer seventh(g->port());
  CHECK(seventh.refusal() == "serve holds its limit of 5 connections; try again later");
  CHECK(logged("refused a connection: serve holds its limit of 5 connections"));
}

TEST_CASE_FIXTURE(limits_fixture,
                  "gateway: an attacker of 127.0.0.1 holding more idle connections than its places before hello, "
                  "and dialling again whatever is closed, neither cycles them nor evicts a client of 127.0.0.1 "
                  "whose hello comes late") {
  start({});  // serve's defaults: 256 places before hello per address
  // The client dials first and says hello only after the attacker's 300 connections.
  peer late(g->port());
  std::atomic<bool> stop{false};
  std::atomic<int> redials{0};
  std::atomic<bool> ready{false};
  struct joined {  // stopped and joined however the test ends
    std::atomic<bool>& stop;
    std::thread t;
    ~joined() {
      stop = true;
      if (t.joinable()) t.join();
    }
  } attacker{stop, std::thread([&] {
    std::vector<std::unique_ptr<peer>> idle;
    for (int i = 0; i < 300; ++i) idle.push_back(std::make_unique<peer>(g->port()));
    ready = true;
    std::vector<pollfd> fds(idle.size());
    while (!stop) {
      for (size_t i = 0; i < idle.size(); ++i) fds[i] = {idle[i]->fd(), POLLIN, 0};
      if (poll(fds.data(), fds.size(), 10) <= 0) continue;
      for (size_t i = 0; i < idle.size(); ++i)
        if (fds[i].revents) {  // an error frame, or the close: dial again at once
          idle[i] = std::make_unique<peer>(g->port());
          ++redials;
        }
    }
  })};
  while (!ready) std::this_thread::sleep_for(1ms);
  peer control(g->port());
  hello(control, "control");
  hello(late, "late");
  // Clients of 127.0.0.1 meanwhile: each a new connection, hello, status.
  std::chrono::steady_clock::duration worst{};
  for (int i = 0; i < 20; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    peer client(g->port());
    hello(client, "operator");
    settle(client);
    worst = std::max(worst, std::chrono::steady_clock::now() - t0);
  }
  stop = true;
  attacker.t.join();
  MESSAGE("worst status " << std::chrono::duration<double, std::milli>(worst).count() << " ms; the attacker dialled "
                          << redials.load() << " times again");
  // Idle connections are held until the hello deadline (10 s), not evicted: nothing to redial.
  CHECK(redials.load() == 0);
  CHECK(worst < 250ms);
}

TEST_CASE_FIXTURE(limits_fixture,
                  "gateway: a client pipelining status requests without reading delays neither another client's "
                  "status nor an agent's heartbeat") {
  start({});
  peer agent(g->port());
  agent.send(wire::hello{wire::peer_role::agent, "secret", "t0"});
  REQUIRE(agent.receive());
  agent.send(wire::register_{"t0", "V100", 8, wire::pool_kind::training, {}});

  peer flood(g->port());
  hello(flood, "flood");
  // 100,000 requests written without waiting, never a reply read (as much as the socket takes).
  auto one = wire::encode_frame(wire::status_request{});
  std::vector<uint8_t> many;
  for (int i = 0; i < 100000; ++i) many.insert(many.end(), one.begin(), one.end());
  fcntl(flood.fd(), F_SETFL, fcntl(flood.fd(), F_GETFL) | O_NONBLOCK);
  size_t sent = 0;
  for (auto until = std::chrono::steady_clock::now() + 1s; std::chrono::steady_clock::now() < until && sent < many.size();) {
    auto n = ::send(flood.fd(), many.data() + sent, many.size() - sent, MSG_NOSIGNAL);
    if (n > 0) sent += static_cast<size_t>(n);
    else std::this_thread::sleep_for(1ms);
  }
  MESSAGE("flooding client wrote " << sent / one.size() << " status requests");

  peer other(g->port());
  hello(other, "other");
  std::chrono::steady_clock::duration worst{}, worst_beat{};
  for (uint64_t i = 1; i <= 20; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    other.send(wire::status_request{});
    auto m = other.receive();
    REQUIRE(m);
    auto* s = std::get_if<wire::status_reply>(&*m);
    REQUIRE(s);
    CHECK(s->jobs.size() == 1);
    worst = std::max(worst, std::chrono::steady_clock::now() - t0);
    t0 = std::chrono::steady_clock::now();
    agent.send(wire::heartbeat{i});
    auto h = agent.receive();
    REQUIRE(h);
    REQUIRE(std::holds_alternative<wire::heartbeat>(*h));
    worst_beat = std::max(worst_beat, std::chrono::steady_clock::now() - t0);
  }
  MESSAGE("worst status " << std::chrono::duration<double, std::milli>(worst).count() << " ms, worst heartbeat "
                          << std::chrono::duration<double, std::milli>(worst_beat).count() << " ms; scheduler asked "
                          << asks.load() << " times");
  CHECK(worst < 250ms);
  CHECK(worst_beat < 100ms);
}

TEST_CASE_FIXTURE(limits_fixture, "gateway: status --all and show are answered from the asynchronous status") {
  live::gateway_options o;
  o.book = std::make_shared<live::job_book>();
  start(o);
  peer client(g->port());
  hello(client);
  client.send(wire::status_request{.all = true});
  auto m = client.receive();
  REQUIRE(m);
  auto* s = std::get_if<wire::status_reply>(&*m);
  REQUIRE(s);
  REQUIRE(s->jobs.size() == 1);
  CHECK(s->jobs[0].name == "j1");
  client.send(wire::show_request{1});
  m = client.receive();
  REQUIRE(m);
  auto* shown = std::get_if<wire::show_reply>(&*m);
  REQUIRE(shown);
  CHECK(shown->job.job_id == 1);
  CHECK(asks.load() == 2);
  client.send(wire::show_request{7});
  m = client.receive();
  REQUIRE(m);
  auto* e = std::get_if<wire::error>(&*m);
  REQUIRE(e);
  CHECK(e->reason == "job 7: no such job");
}

TEST_CASE_FIXTURE(limits_fixture,
                  "gateway: a submit waiting for the scheduler delays neither an agent's heartbeat nor another "
                  "client's status") {
  hold_submits = true;
  start({});
  peer agent(g->port());
  agent.register_as("t0");
  peer submitter(g->port());
  hello(submitter, "submitter");
  wire::submit job;
  job.name = "slow";
  job.gpus = 1;
  submitter.send(job);
  for (int i = 0; i < 50 && next_job.load() == 100; ++i) std::this_thread::sleep_for(10ms);
  REQUIRE(next_job.load() == 101);  // asked, not answered
  beat(agent);
  peer other(g->port());
  hello(other, "other");
  other.send(wire::status_request{});
  auto status = other.receive(1s);
  REQUIRE(status);
  CHECK(std::holds_alternative<wire::status_reply>(*status));
  CHECK_FALSE(submitter.receive(50ms));  // still waiting
  release_submits();
  auto ok = submitter.receive();
  REQUIRE(ok);
  auto* s = std::get_if<wire::submit_ok>(&*ok);
  REQUIRE_MESSAGE(s, "expected submit_ok, got " << wire::type_of(*ok));
  CHECK(s->job_id == 100);
  CHECK(logged("client submitter: submitted job 100 (slow)"));
}

TEST_CASE_FIXTURE(limits_fixture,
                  "gateway: a node order waiting for the scheduler delays neither an agent's heartbeat nor another "
                  "client's status") {
  start({});
  peer agent(g->port());
  agent.register_as("t0");
  peer operator_(g->port());
  hello(operator_, "operator");
  operator_.send(wire::node_request{"t0", "cordon", std::string("maintenance"), std::nullopt});
  for (int i = 0; i < 50 && node_asks.load() == 0; ++i) std::this_thread::sleep_for(10ms);
  REQUIRE(node_asks.load() == 1);  // asked, not answered
  auto t0 = std::chrono::steady_clock::now();
  beat(agent);
  peer other(g->port());
  hello(other, "other");
  settle(other);
  CHECK(std::chrono::steady_clock::now() - t0 < 500ms);
  CHECK_FALSE(operator_.receive(50ms));  // still waiting
  release_submits();
  auto reply = operator_.receive();
  REQUIRE(reply);
  auto* r = std::get_if<wire::node_reply>(&*reply);
  REQUIRE_MESSAGE(r, "expected node_reply, got " << wire::type_of(*reply));
  CHECK(r->text == "t0: cordoned");
  CHECK(logged("client operator: t0: cordoned"));
}

TEST_CASE_FIXTURE(limits_fixture,
                  "gateway: pipelined submits and cancels of one connection are asked one at a time and answered in "
                  "order") {
  start({});
  peer client(g->port());
  hello(client);
  // Five submits, a cancel of the second, a status: one write. The scheduler answers each
  // earlier submit later than the next (50 ms down to 10 ms).
  std::vector<uint8_t> bytes;
  for (int i = 0; i < 5; ++i) {
    wire::submit job;
    job.name = "j" + std::to_string(i);
    job.gpus = 1;
    auto f = wire::encode_frame(job);
    bytes.insert(bytes.end(), f.begin(), f.end());
  }
  for (auto& f : {wire::encode_frame(wire::cancel{101}), wire::encode_frame(wire::status_request{})})
    bytes.insert(bytes.end(), f.begin(), f.end());
  client.send_raw(bytes);
  for (uint64_t want = 100; want < 105; ++want) {
    auto m = client.receive();
    REQUIRE_MESSAGE(m, sink.text());
    auto* s = std::get_if<wire::submit_ok>(&*m);
    REQUIRE_MESSAGE(s, "expected submit_ok, got " << wire::type_of(*m));
    CHECK(s->job_id == want);
  }
  auto m = client.receive();  // the cancel done has no reply: then the status
  REQUIRE(m);
  CHECK(std::holds_alternative<wire::status_reply>(*m));
  CHECK(logged("client cli: cancelled job 101"));
  // A cancel refused closes the connection with the reason.
  client.send(wire::cancel{7});
  CHECK(client.refusal() == "job 7: no such job");
}

TEST_CASE("gateway: a status asked while the scheduler does not answer is late within the limit, asks it once, and "
          "holds no lock the network thread needs") {
  std::ostringstream log;
  live::gateway_options o;
  o.token = "secret";
  o.checkpoint_root = "/tmp/aryl-gateway-limits-test";
  live::gateway g(o, log);
  g.add_server(0, "t0", "V100", 8, wire::pool_kind::training);
  CHECK(g.status_within(10ms).what == live::gateway::status_answer::outcome::no_run);
  std::atomic<int> asks{0}, progress{0};
  std::mutex m;
  std::function<void(cluster_status)> unanswered;
  worker_router r;
  r.status_async = [&](std::function<void(cluster_status)> reply) {  // a stuck scheduler
    ++asks;
    std::lock_guard lock(m);
    unanswered = reply;
  };
  r.progress = [&](int, uint32_t, uint32_t, double) { ++progress; };
  g.set_router(r);
  peer agent(g.port());
  agent.register_as("t0");
  // Two callers wait at once (a scrape of /metrics, one of /healthz): one ask.
  auto began = std::chrono::steady_clock::now();
  std::thread other([&] { CHECK(g.status_within(400ms).what == live::gateway::status_answer::outcome::late); });
  // Meanwhile the network thread passes an agent's progress on to the router (under the lock).
  agent.send(wire::progress{1, 0, 5.0});
  for (int i = 0; i < 100 && progress == 0; ++i) std::this_thread::sleep_for(2ms);
  CHECK(progress == 1);
  CHECK(std::chrono::steady_clock::now() - began < 300ms);
  CHECK(g.status_within(300ms).what == live::gateway::status_answer::outcome::late);
  other.join();
  CHECK(asks == 1);
  // Once it answers, the next call asks again and gets the answer.
  {
    std::lock_guard lock(m);
    cluster_status s;
    s.jobs_finished = 4;
    unanswered(s);
  }
  r.status_async = [](std::function<void(cluster_status)> reply) {
    cluster_status s;
    s.jobs_finished = 5;
    reply(s);
  };
  g.set_router(r);
  auto answer = g.status_within(1s);
  CHECK(answer.what == live::gateway::status_answer::outcome::answered);
  CHECK(answer.status.jobs_finished == 5);
  g.close();
}
