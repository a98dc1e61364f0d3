// The metrics endpoint's limits (runtime/live/metrics): a cap on connections (the oldest gives
// way), a deadline for the request, a bounded request head, and an accept loop that outlives
// running out of descriptors.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "runtime/live/gateway_access.hpp"
#include "runtime/live/metrics.hpp"

using namespace aryl;
using namespace std::chrono_literals;

namespace {

/// A socket with receives that give up after `timeout`: a test that waits for a close or an
/// answer fails instead of hanging.
int open_socket(std::chrono::milliseconds timeout = 3000ms) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

void connect_to(int fd, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
}

void send_all(int fd, const std::string& bytes) {
  REQUIRE(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size()));
}

/// Everything the peer sends until it closes; "TIMEOUT" appended if it does not close within
/// the socket's receive timeout.
std::string read_to_close(int fd) {
  std::string got;
  char buf[4096];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      got.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) got += "TIMEOUT";
    return got;
  }
}

/// GET `target` on a fresh connection: the whole answer, or "TIMEOUT" appended.
std::string get(uint16_t port, const std::string& target) {
  int fd = open_socket();
  connect_to(fd, port);
  send_all(fd, "GET " + target + " HTTP/1.1\r\nHost: localhost\r\n\r\n");
  auto answer = read_to_close(fd);
  ::close(fd);
  return answer;
}

live::health page() { return {true, "aryl_jobs_finished_total 3\n"}; }

} // namespace

TEST_CASE("metrics: beyond the connection cap the oldest idle connections are closed, and GET /metrics still answers") {
  std::ostringstream log;
  live::metrics_limits limits;
  limits.max_connections = 4;
  live::metrics_endpoint m("127.0.0.1", 0, page, log, {}, limits);
  std::vector<int> idle;
  for (int i = 0; i < 12; ++i) {
    idle.push_back(open_socket(2000ms));
    connect_to(idle.back(), m.port());
  }
  // The endpoint accepts in order: wait until it holds all that it will.
  std::this_thread::sleep_for(200ms);
  auto answer = get(m.port(), "/metrics");
  CHECK_MESSAGE(answer.rfind("HTTP/1.1 200", 0) == 0, answer);
  CHECK(answer.find("\r\n\r\naryl_jobs_finished_total 3\n") != std::string::npos);
  // The 12 idle ones and the GET went through a cap of 4: at most 4 are still held, the
  // newest; the first 8 were closed, long before the 5 s deadline.
  for (size_t i = 0; i < 8; ++i) CHECK_MESSAGE(read_to_close(idle[i]).empty(), "idle connection " << i << " is held");
  for (int fd : idle) ::close(fd);
}

TEST_CASE("metrics: a connection that sends part of a request is closed at the request deadline") {
  std::ostringstream log;
  live::metrics_limits limits;
  limits.request_deadline = 300ms;
  live::metrics_endpoint m("127.0.0.1", 0, page, log, {}, limits);
  int fd = open_socket(3000ms);
  connect_to(fd, m.port());
  auto start = std::chrono::steady_clock::now();
  send_all(fd, "GET /metrics HTTP/1.1\r\nHo");
  auto got = read_to_close(fd);
  auto waited = std::chrono::steady_clock::now() - start;
  ::close(fd);
  CHECK_MESSAGE(got.empty(), got);
  CHECK(waited >= 250ms);
  CHECK(waited < 2500ms);
  // And the endpoint still answers.
  CHECK(get(m.port(), "/metrics").rfind("HTTP/1.1 200", 0) == 0);
}

TEST_CASE("metrics: a request head longer than the limit is closed unanswered") {
  std::ostringstream log;
  live::metrics_endpoint m("127.0.0.1", 0, page, log);
  int fd = open_socket(3000ms);
  connect_to(fd, m.port());
  auto start = std::chrono::steady_clock::now();
  // Never ends its head: only the limit can close it before the deadline.
  std::string head = "GET /metrics HTTP/1.1\r\nX-Padding: " + std::string(live::metrics_limits{}.max_request_bytes, 'a');
  ::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
  auto got = read_to_close(fd);
  ::close(fd);
  CHECK_MESSAGE(got.find("HTTP/1.1 200") == std::string::npos, got);
  CHECK(got.find("TIMEOUT") == std::string::npos);
  CHECK(std::chrono::steady_clock::now() - start < 2500ms);
}

TEST_CASE("metrics: the endpoint keeps accepting after running out of file descriptors") {
  std::ostringstream log;
  {
    live::metrics_endpoint m("127.0.0.1", 0, page, log);
    int client = open_socket(3000ms);
    // UndefinedBehaviorSanitizer checks the object of a virtual call it has not seen through a
    // pipe, which cannot be made once every descriptor is taken: the formatting the accept
    // error's log line does is checked (and cached) here, before, or it is taken for a bad call.
    CHECK(fmt::format("accept failed: {} ({})", std::string("Too many open files"), 1) ==
          "accept failed: Too many open files (1)");
    // Every free descriptor taken, under a lowered limit (restored below, also on failure).
    rlimit before{};
    REQUIRE(::getrlimit(RLIMIT_NOFILE, &before) == 0);
    rlimit low = before;
    low.rlim_cur = 256;
    REQUIRE(::setrlimit(RLIMIT_NOFILE, &low) == 0);
    std::vector<int> filler;
    for (int fd; (fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) filler.push_back(fd);
    const bool exhausted = errno == EMFILE;
    // The kernel completes the handshake into the backlog; the endpoint's accept fails
    // (EMFILE) and must try again later.
    connect_to(client, m.port());
    std::this_thread::sleep_for(300ms);
    for (int fd : filler) ::close(fd);
    ::setrlimit(RLIMIT_NOFILE, &before);
    REQUIRE(exhausted);
    send_all(client, "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n");
    auto answer = read_to_close(client);
    ::close(client);
    CHECK_MESSAGE(answer.rfind("HTTP/1.1 200", 0) == 0, answer);
    CHECK(get(m.port(), "/healthz").rfind("HTTP/1.1 200", 0) == 0);
  }
  CHECK_MESSAGE(log.str().find("[serve] metrics: accept failed: Too many open files") != std::string::npos, log.str());
}

TEST_CASE("metrics: with a bearer check, a request without a reader's or admin's token is answered 401") {
  auto path = std::filesystem::temp_directory_path() / ("aryl-metrics-auth-" + std::to_string(::getpid()));
  std::filesystem::remove(path);
  live::identity_registry ids(path.string());
  auto reader = ids.create({"mon", live::role::reader, "", "", "", false});
  auto user = ids.create({"alice", live::role::user, "", "", "", false});
  std::ostringstream log;
  live::metrics_endpoint m("127.0.0.1", 0, page, log, {}, {},
                           [&ids](std::string_view token) { return live::metrics_refusal(ids, token); });
  auto with = [&](const std::string& target, const std::string& header) {
    int fd = open_socket();
    connect_to(fd, m.port());
    send_all(fd, "GET " + target + " HTTP/1.1\r\nHost: localhost\r\n" + header + "\r\n");
    auto answer = read_to_close(fd);
    ::close(fd);
    return answer;
  };
  for (auto target : {"/metrics", "/healthz"}) {
    CHECK(with(target, "").rfind("HTTP/1.1 401", 0) == 0);
    CHECK(with(target, "").find("WWW-Authenticate: Bearer") != std::string::npos);
    CHECK(with(target, "Authorization: Bearer aryl_wrong\r\n").find("unknown token") != std::string::npos);
    CHECK(with(target, "Authorization: Bearer " + user + "\r\n").find("alice (role user) may not read metrics") !=
          std::string::npos);
    CHECK(with(target, "Authorization: Bearer " + reader + "\r\n").rfind("HTTP/1.1 200", 0) == 0);
    CHECK(with(target, "authorization: bearer " + reader + "\r\n").rfind("HTTP/1.1 200", 0) == 0);
  }
  CHECK(with("/metrics", "Authorization: Bearer " + reader + "\r\n").find("aryl_jobs_finished_total 3") !=
        std::string::npos);
  REQUIRE(ids.revoke("mon"));
  CHECK(with("/metrics", "Authorization: Bearer " + reader + "\r\n").find("the credential of mon was revoked") !=
        std::string::npos);
  std::filesystem::remove(path);
}
