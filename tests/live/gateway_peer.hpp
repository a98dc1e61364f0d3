#pragma once
// A test peer of the gateway on a raw socket (tests/live/test_gateway*.cpp).
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "runtime/wire/codec.hpp"

namespace aryl::test {

using namespace std::chrono_literals;

/// A blocking peer on a raw socket, speaking frames.
class peer {
 public:
  /// Connects to 127.0.0.1:`port`, from `from` (another loopback address) if given.
  explicit peer(uint16_t port, const char* from = nullptr) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd_ >= 0);
    if (from) {
      sockaddr_in local{};
      local.sin_family = AF_INET;
      REQUIRE(inet_pton(AF_INET, from, &local.sin_addr) == 1);
      REQUIRE(bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof local) == 0);
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  }
  ~peer() { close(fd_); }
  peer(const peer&) = delete;
  peer& operator=(const peer&) = delete;

  void send(const wire::message& m) { send_raw(wire::encode_frame(m)); }
  void send_raw(const std::vector<uint8_t>& bytes) {
    REQUIRE(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size()));
  }

  /// The next message, or nothing if the connection closed or `within` passed.
  std::optional<wire::message> receive(std::chrono::milliseconds within = 5s) {
    auto deadline = std::chrono::steady_clock::now() + within;
    for (;;) {
      auto step = decoder_.next();
      if (auto* m = std::get_if<wire::message>(&step)) return *m;
      if (std::holds_alternative<wire::decode_error>(step)) return std::nullopt;
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd p{fd_, POLLIN, 0};
      if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) return std::nullopt;
      uint8_t buf[4096];
      auto n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return std::nullopt;
      decoder_.feed(buf, static_cast<size_t>(n));
    }
  }

  /// The reason of the error frame the gateway sends before closing, then the close itself.
  std::string refusal() {
    auto m = receive();
    REQUIRE(m);
    auto* e = std::get_if<wire::error>(&*m);
    REQUIRE_MESSAGE(e, "expected an error frame, got " << wire::type_of(*m));
    CHECK_FALSE(receive());  // closed
    return e->reason;
  }

  void hello_as_agent(const std::string& server, const std::string& token = "secret") {
    send(wire::hello{wire::peer_role::agent, token, server});
    auto ok = receive();
    REQUIRE(ok);
    REQUIRE(std::holds_alternative<wire::hello_ok>(*ok));
  }
  void register_as(const std::string& server, const std::string& type = "V100", uint32_t gpus = 8) {
    hello_as_agent(server);
    send(wire::register_{server, type, gpus, wire::pool_kind::training, {}});
  }

 int fd() const { return fd_; }

 private:
  int fd_ = -1;
  wire::frame_decoder decoder_;
};

} // namespace aryl::test
