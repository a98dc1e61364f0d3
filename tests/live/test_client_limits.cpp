// What a client command (runtime/live/client.hpp) refuses before a byte leaves: plain text to
// a scheduler that is not on this machine (runtime/wire/plain_text.hpp), a request over the
// protocol's frame limit; and the scheduler's reason when it closes while a request is sent.
#include <doctest/doctest.h>

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <string>
#include <thread>
#include <vector>

#include "runtime/live/client.hpp"
#include "runtime/wire/codec.hpp"
#include "runtime/wire/plain_text.hpp"
#include "solvers/input_error.hpp"
#include "tests/live/local_listener.hpp"

using namespace aryl;
using boost::asio::ip::make_address;

namespace {

/// The message of the input_error `f` throws; empty if it throws none.
template <class F>
std::string refusal_of(F&& f) {
  try {
    f();
  } catch (const input_error& e) {
    return e.what();
  }
  return {};
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

} // namespace

TEST_CASE("client: plain text goes to loopback addresses only, judged on what the name resolved to, unless insecure") {
  CHECK(net::plain_text_refusal("127.0.0.1", 7000, {make_address("127.0.0.1")}, false).empty());
  CHECK(net::plain_text_refusal("127.3.2.1", 7000, {make_address("127.3.2.1")}, false).empty());
  CHECK(net::plain_text_refusal("::1", 7000, {make_address("::1")}, false).empty());
  CHECK(net::plain_text_refusal("::ffff:127.0.0.1", 7000, {make_address("::ffff:127.0.0.1")}, false).empty());
  // "localhost" is what the resolver says it is.
  boost::asio::io_context io;
  std::vector<boost::asio::ip::address> local;
  for (auto& r : boost::asio::ip::tcp::resolver(io).resolve("localhost", "7000")) local.push_back(r.endpoint().address());
  CHECK(net::plain_text_refusal("localhost", 7000, local, false).empty());

  auto why = net::plain_text_refusal("10.0.0.5", 7000, {make_address("10.0.0.5")}, false);
  CHECK_MESSAGE(has(why, "10.0.0.5:7000 is not a loopback address"), why);
  CHECK_MESSAGE(has(why, "--tls-ca FILE"), why);
  CHECK_MESSAGE(has(why, "--insecure"), why);
  CHECK(net::plain_text_refusal("10.0.0.5", 7000, {make_address("10.0.0.5")}, true).empty());
  // A name is refused by its addresses: one of them off this machine is enough.
  why = net::plain_text_refusal("sched", 7000, {make_address("127.0.0.1"), make_address("fd00::5")}, false);
  CHECK_MESSAGE(has(why, "sched:7000 (fd00::5) is not a loopback address"), why);
  CHECK_FALSE(net::plain_text_refusal("sched", 7000, {}, false).empty());
}

TEST_CASE("client: without a CA a client refuses a scheduler off loopback before dialling, and --insecure dials it") {
  auto address = test::non_loopback_address();
  if (!address) {
    MESSAGE("skipped: this machine has no address but loopback");
    return;
  }
  test::listener away(*address);
  REQUIRE(away.ok());
  live::client_options o;
  o.host = *address;
  o.port = away.port();
  o.token = "a-cluster-token-of-some-length";
  o.timeout_s = 0.3;
  auto why = refusal_of([&] { live::ask(o, wire::status_request{}, true); });
  CHECK_MESSAGE(has(why, *address + ":" + std::to_string(o.port) + " is not a loopback address"), why);
  CHECK_MESSAGE(has(why, "--tls-ca FILE"), why);
  CHECK_MESSAGE(has(why, "--insecure"), why);
  CHECK_FALSE(away.dialled());  // not even a TCP handshake, let alone the token
  // Told so, it dials (and waits in vain for an answer: nobody accepts).
  o.insecure = true;
  why = refusal_of([&] { live::ask(o, wire::status_request{}, true); });
  CHECK_MESSAGE(has(why, "no answer within"), why);
  CHECK(away.dialled());
  // Loopback needs neither.
  test::listener here("127.0.0.1");
  REQUIRE(here.ok());
  o.insecure = false;
  o.host = "127.0.0.1";
  o.port = here.port();
  refusal_of([&] { live::ask(o, wire::status_request{}, true); });
  CHECK(here.dialled());
}

TEST_CASE("client: a submit over the protocol's frame limit is refused before dialling, naming the limit and the command") {
  test::listener here("127.0.0.1");
  REQUIRE(here.ok());
  live::client_options o;
  o.port = here.port();
  o.token = "a-cluster-token-of-some-length";
  o.timeout_s = 0.3;
  wire::submit job;
  job.name = "big";
  job.command.assign(20, std::string(60'000, 'a'));  // 1.2 MB
  auto why = refusal_of([&] { live::ask(o, job, true); });
  CHECK_MESSAGE(has(why, "submit: the request is 1200"), why);
  CHECK_MESSAGE(has(why, "over the protocol's 1048576-byte (1 MiB) frame limit"), why);
  CHECK_MESSAGE(has(why, "shrink the job's command"), why);
  CHECK_FALSE(here.dialled());
}

TEST_CASE("client: the scheduler's error frame is reported when it closes the connection while a request is sent") {
  test::listener here("127.0.0.1");
  REQUIRE(here.ok());
  // A scheduler that takes the hello, then refuses and closes before reading the request.
  std::thread scheduler([&] {
    int fd = ::accept(here.fd(), nullptr, nullptr);
    if (fd < 0) return;
    uint8_t buf[4096];
    wire::frame_decoder d;
    while (std::holds_alternative<wire::need_more>(d.next())) {
      auto n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      d.feed(buf, static_cast<size_t>(n));
    }
    auto ok = wire::encode_frame(wire::hello_ok{});
    auto no = wire::encode_frame(wire::error{"a frame of 999999 bytes is over this scheduler's limit"});
    ok.insert(ok.end(), no.begin(), no.end());
    [[maybe_unused]] auto sent = ::send(fd, ok.data(), ok.size(), MSG_NOSIGNAL);
    ::close(fd);
  });
  live::client_options o;
  o.port = here.port();
  o.token = "a-cluster-token-of-some-length";
  o.timeout_s = 5;
  wire::submit job;
  job.name = "big";
  job.command.assign(16, std::string(60'000, 'a'));  // under the limit, over any socket buffer
  auto why = refusal_of([&] { live::ask(o, job, true); });
  scheduler.join();
  CHECK_MESSAGE(why == "127.0.0.1:" + std::to_string(o.port) + ": refused: a frame of 999999 bytes is over this scheduler's limit",
                why);
}
