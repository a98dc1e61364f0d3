#pragma once
/// Test support for the live agent: a scheduler stand-in on 127.0.0.1 (port chosen by the
/// OS) that speaks the real codec, one connection at a time, with blocking calls bounded
/// by timeouts (poll); an agent runner that stops its agent on destruction; scratch
/// folders; waiting for a condition.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/node/agent.hpp"
#include "runtime/wire/codec.hpp"

namespace aryl::live::test {

using namespace std::chrono_literals;
using ms = std::chrono::milliseconds;

/// Milliseconds left until `deadline`, for poll(); 0 once passed.
inline int remaining_ms(std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<ms>(deadline - std::chrono::steady_clock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

/// True as soon as `condition` holds; false if it still does not after `timeout`
/// (checked every 5 ms: for states no message announces, e.g. a reaped pid).
inline bool eventually(const std::function<bool()>& condition, ms timeout = 5000ms) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
}

/// A fresh folder under the system temp folder, removed with everything in it at the end.
class scratch_dir {
 public:
  scratch_dir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("aryl-live-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~scratch_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// The whole content of a file; empty if it cannot be read.
inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// The scheduler end of the protocol, driven step by step by the test.
class fake_scheduler {
 public:
  fake_scheduler() {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof addr;
    if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listen_fd_, 8) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      throw std::runtime_error("fake scheduler: cannot listen on 127.0.0.1");
    port_ = ntohs(addr.sin_port);
  }
  ~fake_scheduler() {
    close_connection();
    ::close(listen_fd_);
  }
  fake_scheduler(const fake_scheduler&) = delete;
  fake_scheduler& operator=(const fake_scheduler&) = delete;

  uint16_t port() const { return port_; }

  /// Waits for the next connection, closing the current one. False on timeout.
  bool accept(ms timeout = 5000ms) {
    close_connection();
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) != 1) return false;
    conn_fd_ = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    decoder_ = wire::frame_decoder{};
    closed_ = false;
    return conn_fd_ >= 0;
  }

  /// The next message on the current connection; nullopt on timeout, when the agent closed
  /// the connection (peer_closed()), or on a frame the codec refuses.
  std::optional<wire::message> receive(ms timeout = 5000ms) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      auto step = decoder_.next();
      if (auto* m = std::get_if<wire::message>(&step)) return std::move(*m);
      if (std::holds_alternative<wire::decode_error>(step) || conn_fd_ < 0 || closed_)
        return std::nullopt;
      pollfd p{conn_fd_, POLLIN, 0};
      if (::poll(&p, 1, remaining_ms(deadline)) != 1) return std::nullopt;
      uint8_t buf[4096];
      const ssize_t n = ::read(conn_fd_, buf, sizeof buf);
      if (n <= 0) {
        closed_ = true;
        return std::nullopt;
      }
      decoder_.feed(buf, static_cast<size_t>(n));
    }
  }

  /// The next message of type T; messages of other types before it are kept in skipped().
  template <class T>
  std::optional<T> receive_a(ms timeout = 5000ms) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (auto m = receive(ms(remaining_ms(deadline)))) {
      if (auto* t = std::get_if<T>(&*m)) return std::move(*t);
      skipped_.push_back(std::move(*m));
    }
    return std::nullopt;
  }

  /// Messages receive_a passed over, oldest first.
  std::vector<wire::message>& skipped() { return skipped_; }

  /// True once the agent closed the current connection (seen by receive).
  bool peer_closed() const { return closed_; }

  /// Waits until the agent closes the current connection; false on timeout.
  bool wait_closed(ms timeout = 5000ms) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!closed_ && std::chrono::steady_clock::now() < deadline) {
      if (!receive(ms(remaining_ms(deadline))) && decoder_.failed()) return false;
    }
    return closed_;
  }

  void send(const wire::message& m) { send_raw(wire::encode_frame(m)); }

  void send_raw(const std::vector<uint8_t>& bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::send(conn_fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n <= 0) throw std::runtime_error("fake scheduler: send failed");
      done += static_cast<size_t>(n);
    }
  }

  /// Accepts a connection and completes the handshake: hello (returned), hello_ok, register
  /// (returned). Nullopt if any step times out.
  std::optional<std::pair<wire::hello, wire::register_>> accept_agent(ms timeout = 5000ms) {
    if (!accept(timeout)) return std::nullopt;
    auto h = receive_a<wire::hello>(timeout);
    if (!h) return std::nullopt;
    send(wire::hello_ok{});
    auto r = receive_a<wire::register_>(timeout);
    if (!r) return std::nullopt;
    return std::pair{*h, *r};
  }

  void close_connection() {
    if (conn_fd_ >= 0) ::close(conn_fd_);
    conn_fd_ = -1;
  }

 private:
  int listen_fd_ = -1;
  int conn_fd_ = -1;
  uint16_t port_ = 0;
  bool closed_ = false;
  wire::frame_decoder decoder_;
  std::vector<wire::message> skipped_;
};

/// run_agent on its own thread; stopped (stop flag, join) by stop() or the destructor, so
/// the agent's worker processes end with the test even when the test fails.
class agent_runner {
 public:
  explicit agent_runner(agent_options o) : options_(std::move(o)) {
    thread_ = std::thread([this] {
      tid_ = ::gettid();
      code_ = run_agent(options_, stop_, log_);
      done_ = true;
    });
  }
  ~agent_runner() { stop(); }
  agent_runner(const agent_runner&) = delete;
  agent_runner& operator=(const agent_runner&) = delete;

  /// Stops the agent and waits for run_agent to return; its exit code.
  int stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    return code_;
  }
  /// True once run_agent has returned on its own (not told to stop), within `timeout`.
  bool ended_by_itself(ms timeout = 5000ms) {
    return eventually([this] { return done_.load(); }, timeout);
  }
  /// The agent's log; read it only after stop().
  std::string log() const { return log_.str(); }

  /// CPU time the agent's thread has used so far (user and system); while it runs.
  std::chrono::nanoseconds cpu_time() {
    clockid_t clock{};
    timespec t{};
    if (pthread_getcpuclockid(thread_.native_handle(), &clock) != 0 || ::clock_gettime(clock, &t) != 0)
      throw std::runtime_error("agent runner: cannot read the agent thread's CPU clock");
    return std::chrono::seconds(t.tv_sec) + std::chrono::nanoseconds(t.tv_nsec);
  }

  /// How many times the agent's thread has blocked (its voluntary context switches, from
  /// /proc): one per wake-up of an idle event loop; while it runs.
  long sleeps() const {
    std::ifstream in("/proc/self/task/" + std::to_string(tid_.load()) + "/status");
    std::string line;
    while (std::getline(in, line))
      if (line.starts_with("voluntary_ctxt_switches:")) return std::stol(line.substr(line.find(':') + 1));
    throw std::runtime_error("agent runner: no voluntary_ctxt_switches for the agent thread");
  }

 private:
  agent_options options_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> done_{false};
  std::atomic<pid_t> tid_{0};
  std::ostringstream log_;
  int code_ = -1;
  std::thread thread_;
};

} // namespace aryl::live::test
