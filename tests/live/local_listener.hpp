#pragma once
// A listening socket on one of this machine's addresses that is not loopback, for tests of
// what a client or an agent may dial in plain text (tests/live/test_*.cpp).
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <optional>
#include <string>

namespace aryl::test {

/// This machine's first IPv4 address that is up and not loopback; nothing on a machine with
/// loopback only.
inline std::optional<std::string> non_loopback_address() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return std::nullopt;
  std::optional<std::string> found;
  for (auto* i = list; i && !found; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK))
      continue;
    char text[INET_ADDRSTRLEN];
    auto* a = reinterpret_cast<sockaddr_in*>(i->ifa_addr);
    if (inet_ntop(AF_INET, &a->sin_addr, text, sizeof text)) found = text;
  }
  freeifaddrs(list);
  return found;
}

/// Listens on `address`, port 0 (the OS chooses); closed with it.
class listener {
 public:
  explicit listener(const std::string& address) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    inet_pton(AF_INET, address.c_str(), &a.sin_addr);
    socklen_t size = sizeof a;
    ok_ = fd_ >= 0 && bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && listen(fd_, 16) == 0 &&
          getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &size) == 0;
    port_ = ntohs(a.sin_port);
  }
  ~listener() {
    if (fd_ >= 0) close(fd_);
  }
  listener(const listener&) = delete;
  listener& operator=(const listener&) = delete;

  bool ok() const { return ok_; }
  int fd() const { return fd_; }
  uint16_t port() const { return port_; }
  /// A connection is waiting to be accepted: someone dialled (the kernel completes a TCP
  /// handshake without the program, so a dial shows here as soon as connect returns).
  bool dialled() const {
    pollfd p{fd_, POLLIN, 0};
    return poll(&p, 1, 0) > 0;
  }

 private:
  int fd_ = -1;
  bool ok_ = false;
  uint16_t port_ = 0;
};

} // namespace aryl::test
