#pragma once
/// Private to the agent (agent_loop.hpp and its sources): its timing constants, small text
/// helpers, and the records it keeps per worker process and per connection to the scheduler.
#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

// After <utility>: Boost 1.74's asio/awaitable.hpp uses std::exchange without including it.
#include <boost/asio.hpp>

#include "runtime/node/agent.hpp"
#include "runtime/node/processes.hpp"
#include "runtime/wire/codec.hpp"
#include "runtime/wire/tls_stream.hpp"

namespace aryl::live::agent_detail {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using tcp = asio::ip::tcp;
using clock_type = std::chrono::steady_clock;
using time_point = clock_type::time_point;

/// Longest interval between two housekeeping ticks, which otherwise run at the agent's next
/// deadline (SIGKILL after a grace, progress flush, heartbeat, handshake timeout, reconnect,
/// output drain, bye flush, fencing, giving up) and after events that may bring one closer.
// The stop flag is set from a signal handler (or a test's thread) that can do no more than
// store it, so it is polled. 100 ms: a stop starts at most that late, small beside the workers'
// shutdown grace (5 s by default), and ten wake-ups a second cost an idle agent under 0.1 % of
// a core.
constexpr auto stop_poll_period = std::chrono::milliseconds(100);
/// A worker without a pidfd (a kernel before Linux 5.3, or poll_worker_exits) is polled with
/// waitid this often. Short, because its exit is reported when seen and a rescale waits for it.
constexpr auto reap_poll_period = std::chrono::milliseconds(5);
/// A worker output line is held (to parse it as progress) up to this long; a longer one is
/// written through to the log in pieces, whole, and not parsed.
constexpr size_t max_line_bytes = 64 * 1024;
/// After a worker was reaped, how long its stdout may stay open (held by a process that
/// left its group) before the exit is reported anyway.
constexpr auto output_drain_limit = std::chrono::seconds(1);
/// How long the final `bye` may take to be written before the connection is closed.
constexpr auto bye_flush_limit = std::chrono::seconds(1);
/// Frames queued for a scheduler that does not read them; beyond, the connection is dropped.
constexpr size_t max_queued_frames = 10000;

inline clock_type::duration seconds(double s) {
  if (!std::isfinite(s) || s < 0) s = 0;
  s = std::min(s, 1e7);
  return std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(s));
}

inline std::string format_double(double x) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, r.ptr);
}

inline std::string join(const std::vector<uint32_t>& v) {
  std::string s;
  for (auto x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

/// 128 random bits in hex: one agent process's register.instance.
inline std::string random_instance() {
  std::random_device rd;
  std::string out;
  for (int i = 0; i < 8; ++i) {
    static constexpr char digits[] = "0123456789abcdef";
    const auto v = rd();
    for (int k = 0; k < 4; ++k) out += digits[(v >> (4 * k)) & 0xf];
  }
  return out;
}

inline std::string worker_label(uint64_t job_id, uint32_t rank) {
  return "job " + std::to_string(job_id) + " rank " + std::to_string(rank);
}

template <class... F>
struct overloaded : F... {
  using F::operator()...;
};
template <class... F>
overloaded(F...) -> overloaded<F...>;

/// One worker process this agent started, until its exit is reported.
struct worker {
  uint64_t id = 0;  ///< unique per agent; handlers find their worker by it
  uint64_t job_id = 0;
  uint32_t rank = 0;
  std::vector<uint32_t> gpus;
  std::optional<uint64_t> generation;  ///< its launch's, when the scheduler gave one
  child_process proc;
  std::unique_ptr<asio::posix::stream_descriptor> out;  ///< stdout; null once closed
  /// The process's pidfd, readable once it ended; null: polled every reap_poll_period.
  std::unique_ptr<asio::posix::stream_descriptor> ended;
  std::shared_ptr<std::array<char, 4096>> buf = std::make_shared<std::array<char, 4096>>();
  std::string partial;  ///< output after the last newline
  /// The line in progress was longer than max_line_bytes: written through so far, its end
  /// still to come.
  bool overlong = false;
  int log_fd = -1;      ///< logs/<job>-<rank>.log, append-only
  std::optional<wire::progress> pending;  ///< latest progress not yet sent
  time_point last_sent{};
  std::optional<time_point> kill_at;  ///< SIGKILL deadline after a SIGTERM
  bool killed = false;
  std::optional<exit_status> status;  ///< once reaped
  time_point reaped_at{};

  ~worker() {
    ended.reset();
    out.reset();
    if (log_fd >= 0) ::close(log_fd);
  }
};

/// One TCP connection to the scheduler, from connect to drop.
struct connection {
  enum class phase { connecting, hello_sent, registered };
  connection(asio::io_context& io, const agent_options& o) : stream(net::client_stream(io, o.tls, o.host)), resolver(io) {}
  std::unique_ptr<net::byte_stream> stream;  ///< plain TCP, or TLS over it
  tcp::resolver resolver;
  wire::frame_decoder decoder;
  std::array<uint8_t, 64 * 1024> read_buf{};
  std::deque<std::vector<uint8_t>> out;
  size_t out_bytes = 0;  ///< in `out`
  bool writing = false;
  phase state = phase::connecting;
  /// The scheduler has sent something other than an error since register: it took it.
  bool accepted = false;
  time_point handshake_deadline{};
  time_point next_heartbeat{};
  uint64_t seq = 0;
};

} // namespace aryl::live::agent_detail
