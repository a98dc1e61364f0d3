#pragma once
/// Live mode's metrics: Prometheus text exposition (format 0.0.4) of the scheduler's status,
/// served over HTTP (Boost.Beast) on `GET /metrics`, loopback by default.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "actors/cluster_status.hpp"

namespace aryl::net {
struct tls_context;
}

namespace aryl::live {

/// What the exposition shows besides the scheduler's status.
struct front_counts {
  int agents_configured = 0;
  int agents_connected = 0;
  bool journal_failing = false;        ///< `--state`: its writes fail now
  uint64_t journal_write_failures = 0;  ///< `--state`: failed writes so far
  /// Per machine: its agent connected, and seconds since it was last heard (< 0: not).
  struct agent {
    std::string server;
    bool up = false;
    double heard_s_ago = -1;
  };
  std::vector<agent> agents{};
  uint32_t scheduler_restarts = 0;  ///< `--state`: restarts of serve on this run's journal
  std::string version{};            ///< aryl_build_info's
};

/// The exposition text: jobs by state, jobs finished, GPUs by pool, GPU type and use, servers
/// by pool and mode, reclaims and their latency (a histogram, simulated seconds), reclaim SLO
/// misses, agents configured and connected. Pure.
std::string render_metrics(const cluster_status& s, const front_counts& f);

/// What `GET /metrics` or `GET /healthz` answers: 200 with `text` when ok (the exposition,
/// or healthy), else 503 with it (why not).
struct health {
  bool ok = true;
  std::string text = "ok";
};

/// What the metrics listener holds: a peer that opens many connections, or sends its request
/// a byte at a time, costs it a bounded number of descriptors and never stops its answers.
struct metrics_limits {
  /// Connections open at once; a new one beyond it closes the oldest.
  size_t max_connections = 64;
  /// To send the request head, then again to read the answer; closed after either.
  std::chrono::milliseconds request_deadline{5000};
  /// A request head longer than this, or a request with a body, is closed unanswered.
  size_t max_request_bytes = 8192;
};

/// Who may read the metrics: the bearer token of a request's `Authorization: Bearer TOKEN`
/// header ("" when it has none) -> "" if it may, else why not (answered 401).
using bearer_check = std::function<std::string(std::string_view token)>;

/// An HTTP listener on its own thread (HTTPS with `tls`: the handshake counts in the request's
/// deadline): `GET /metrics` answers `render()` (a 503 is logged
/// with its reason), `GET /healthz` answers `check()` (always ok if unset), anything else
/// 404. Each call may block its thread: bound them (serve waits at most 1.5 s for the
/// scheduler). Holds `limits`; keeps accepting after an accept error (out of descriptors: after
/// a back-off, logged once a second).
class metrics_endpoint {
 public:
  /// Throws aryl::input_error naming the address if it cannot listen.
  metrics_endpoint(const std::string& bind, uint16_t port, std::function<health()> render, std::ostream& log,
                   std::function<health()> check = {}, metrics_limits limits = {}, bearer_check authorize = {},
                   std::shared_ptr<net::tls_context> tls = nullptr);
  ~metrics_endpoint();
  metrics_endpoint(const metrics_endpoint&) = delete;
  metrics_endpoint& operator=(const metrics_endpoint&) = delete;
  uint16_t port() const;

  struct impl;

 private:
  std::unique_ptr<impl> impl_;
};

} // namespace aryl::live
