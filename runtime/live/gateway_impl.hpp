#pragma once
/// Private to the gateway (gateway.cpp, gateway_waits.cpp): its shared state. The network
/// thread and the callers of gateway's methods share what `m` guards.
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange

#include <boost/asio.hpp>

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "runtime/control_chars.hpp"
#include "runtime/live/gateway.hpp"
#include "runtime/live/log_relay.hpp"

namespace aryl::live {

class session;

struct gateway::impl {
  struct server_slot {
    int id = 0;
    std::string gpu_type;
    int gpus = 0;
    wire::pool_kind pool = wire::pool_kind::training;
    std::weak_ptr<session> agent;  ///< the registered agent's connection, if any
    bool registered = false;       ///< has registered at least once
    uint64_t registrations = 0;    ///< a loss timer counts only if none came since it started
    uint64_t launches = 0;         ///< launches taken for the machine (launch_on calls)
    /// Launches and stops for the machine while its agent is away, sent when it registers
    /// again (it keeps its workers meanwhile).
    std::vector<wire::message> backlog;
    /// Workers listed at its first registration and told to stop, until their exits.
    std::set<std::pair<uint32_t, uint32_t>> found;
    /// hold_found_workers: the ones listed and not exited since, until settled; then the
    /// adopted ones, until a router takes their reports.
    std::vector<wire::running_worker> listed;
    std::set<std::pair<uint32_t, uint32_t>> held;
  };
  /// Exits of listed (then held) workers that came while no router was set, passed on when
  /// one is: (server id, job, rank, code, signal).
  std::vector<std::tuple<int, uint32_t, uint32_t, int, int>> early_exits;

  gateway_options opts;
  std::ostream& log_stream;
  std::mutex log_mutex;
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor acceptor{io};
  std::thread thread;
  uint64_t next_session = 1;

  log_relay logs;  ///< `aryl logs` (network thread only)

  std::mutex m;  // guards what follows: the network thread and the caller share it
  std::condition_variable registered_cv;
  /// Agents told to shut down whose connection is not closed yet (send_shutdown).
  int farewells = 0;
  bool farewells_told = false;  ///< every connected agent has been told
  std::condition_variable farewell_cv;
  std::map<std::string, server_slot> slots;
  worker_router router;
  /// gateway_options::join: agents of any name are taken until the inventory is fixed
  /// (join_agents), in the order they registered.
  bool joining = false;
  std::vector<std::string> join_order;

  /// Calls `f` with the router, holding the lock: set_router waits for calls in progress.
  template <class F>
  void with_router(F&& f) {
    std::lock_guard lock(m);
    f(router);
  }

  impl(gateway_options o, std::ostream& l) : opts(std::move(o)), log_stream(l) {}

  void log(const std::string& line) {
    std::lock_guard lock(log_mutex);
    log_stream << "[serve] " << escape_control(line) << '\n' << std::flush;
  }

  void accept();
  void launch_on(const std::string& server, const node_launch& l);
  void stop_on(const std::string& server, uint32_t job);
  /// Sends `msg` to the server's agent, or keeps it for when the agent is back.
  void deliver(const std::string& server, wire::message msg);
};

} // namespace aryl::live
