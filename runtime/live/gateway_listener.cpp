#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange

#include "runtime/live/accept_errors.hpp"
#include "runtime/live/gateway_impl.hpp"

#include <algorithm>

#include <fcntl.h>
#include <malloc.h>
#include <unistd.h>

#include <fmt/format.h>

#include "runtime/wire/codec.hpp"

namespace aryl::live {
void gateway::impl::accept() {
  acceptor.async_accept([this](boost::system::error_code ec, tcp::socket s) {
    if (!acceptor.is_open() || ec == asio::error::operation_aborted) return;  // closed
    if (!ec) {
      accept_backoff = std::chrono::milliseconds{0};
      admit(std::move(s));
      return accept();
    }
    // Never give up: free a descriptor to refuse one waiting peer with the reason, then try
    // again, at once if that made room in the backlog, else after a back-off that doubles
    // while the errors last (1 s at most).
    bool refused = false;
    if (out_of_resources(ec) && reserve_fd >= 0) {
      ::close(reserve_fd);
      reserve_fd = -1;
      boost::system::error_code again;
      tcp::socket spare(io);
      acceptor.non_blocking(true, again);
      acceptor.accept(spare, again);
      acceptor.non_blocking(false, again);
      if (!again && spare.is_open()) {
        refuse(spare, "serve is out of file descriptors; try again later", "out of descriptors");
        refused = true;
      }
      reserve_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    }
    accept_backoff = refused ? accept_first_backoff : std::clamp(accept_backoff * 2, accept_first_backoff, accept_last_backoff);
    ++accept_errors;
    auto now = std::chrono::steady_clock::now();
    if (now - accept_error_logged >= std::chrono::seconds(1)) {
      accept_error_logged = now;
      log(fmt::format("accept failed: {} ({} time{} since the last such line); accepting again in {} ms",
                      ec.message(), accept_errors, accept_errors == 1 ? "" : "s", refused ? 0 : accept_backoff.count()));
      accept_errors = 0;
    }
    if (refused) return accept();
    accept_retry.expires_after(accept_backoff);
    accept_retry.async_wait([this](boost::system::error_code e) {
      if (!e) accept();
    });
  });
}

void gateway::impl::admit(tcp::socket s) {
  boost::system::error_code ec;
  auto ep = s.remote_endpoint(ec);
  if (ec) return;  // gone already
  auto address = ep.address().to_string();
  // At the cap on connections an idle one gives way if there is one, else the newcomer is
  // refused: a connection that never sent a byte lost nothing.
  if (connections >= opts.max_connections && !evict_idle())
    return refuse(s, fmt::format("serve holds its limit of {} connections; try again later", opts.max_connections),
                  "connection limit");
  // A newcomer is idle until its first bytes (spoke): the caps before hello bound what
  // connections buffer, and an idle one buffers nothing. Holding idle connections, rather
  // than closing the oldest at once, is what keeps an attacker from cycling its connections
  // through the listen backlog ahead of a real client of its address (each close brings a
  // new dial).
  auto id = next_session++;
  ++connections;
  // Counted before it starts: a session may end within its start.
  idle.add(id, address, {});
  auto who = start_session(std::move(s), this, id, std::move(address));
  if (auto it = idle.by_id.find(id); it != idle.by_id.end()) it->second.who = who;
}

void gateway::impl::hello_pool::add(uint64_t id, const std::string& address, std::weak_ptr<session> who) {
  by_address[address].insert(id);
  by_id[id] = {address, std::move(who)};
}

bool gateway::impl::hello_pool::remove(uint64_t id) {
  auto it = by_id.find(id);
  if (it == by_id.end()) return false;
  if (auto a = by_address.find(it->second.address); a != by_address.end()) {
    a->second.erase(id);
    if (a->second.empty()) by_address.erase(a);
  }
  by_id.erase(it);
  return true;
}

void gateway::impl::spoke(uint64_t id) {
  auto it = idle.by_id.find(id);
  if (it == idle.by_id.end()) return;  // counted already, or past hello
  auto address = it->second.address;
  auto who = it->second.who;
  idle.remove(id);
  // At a cap the oldest other connection before hello gives way, not the newcomer: an
  // attacker holding an address's places cannot lock out a client or an agent of the same
  // address (loopback), which says hello at once.
  if (auto a = before_hello.by_address.find(address);
      a != before_hello.by_address.end() && a->second.size() >= opts.max_before_hello_per_address)
    evict(*a->second.begin(),
          fmt::format("evicted: {} holds its limit of {} connections before hello, and this was the oldest", address,
                      opts.max_before_hello_per_address),
          eviction::may_silence);
  if (before_hello.by_id.size() >= opts.max_before_hello)
    evict(before_hello.by_id.begin()->first,
          fmt::format("evicted: serve holds its limit of {} connections before hello, and this was the oldest",
                      opts.max_before_hello),
          eviction::may_silence);
  before_hello.add(id, address, std::move(who));
}

bool gateway::impl::evict_idle() {
  const std::set<uint64_t>* most = nullptr;
  std::string address;
  for (auto& [a, ids] : idle.by_address)
    if (!most || ids.size() > most->size()) most = &ids, address = a;
  if (!most) return false;
  // Its place is free now, though its close is still being written (ended skips it).
  auto id = *most->begin();
  --connections;
  uncounted.insert(id);
  evict(id, fmt::format("evicted: serve holds its limit of {} connections, and this was the oldest "
                                    "connection of {}, which holds the most that sent nothing",
                                    opts.max_connections, address),
        eviction::close);
  return true;
}

void gateway::impl::evict(uint64_t id, const std::string& why, eviction how) {
  auto& pool = idle.by_id.count(id) ? idle : before_hello;
  auto it = pool.by_id.find(id);
  if (it == pool.by_id.end()) return;
  auto who = it->second.who.lock();
  hello_taken(id);  // its place is free now, though its close is still being written
  if (!who) return;
  if (how == eviction::close) close_session_now(*who, why);
  else close_session(*who, why);
}

bool gateway::impl::may_close_before_hello(const std::string& address) {
  const double rate = opts.pre_hello_closes_per_s, burst = std::max(1.0, rate);
  auto now = std::chrono::steady_clock::now();
  auto refilled = [&](const close_budget& b) {
    return std::min(burst, b.tokens + rate * std::chrono::duration<double>(now - b.filled).count());
  };
  // A full bucket is as good as none: dropped once there are many, so that peers of many
  // addresses cost no memory once they are gone.
  if (close_budgets.size() >= prune_budgets_at) {
    std::erase_if(close_budgets, [&](const auto& kv) { return refilled(kv.second) >= burst; });
    prune_budgets_at = std::max<size_t>(1024, 2 * close_budgets.size());
  }
  auto [it, fresh] = close_budgets.try_emplace(address, close_budget{burst, now});
  auto& b = it->second;
  b.tokens = refilled(b);
  b.filled = now;
  if (b.tokens < 1) return false;
  b.tokens -= 1;
  return true;
}

void gateway::impl::silenced(uint64_t id, const std::string& address, std::weak_ptr<session> who) {
  before_hello.remove(id);
  idle.add(id, address, std::move(who));
}

void gateway::impl::refuse(tcp::socket& s, const std::string& reason, const std::string& kind) {
  // Best effort, without waiting: a fresh socket's buffer takes one small frame.
  boost::system::error_code ec;
  s.non_blocking(true, ec);
  auto frame = wire::encode_frame(wire::error{reason});
  asio::write(s, asio::buffer(frame), ec);
  s.shutdown(tcp::socket::shutdown_both, ec);
  s.close(ec);
  log_counted(kind, "refused a connection: " + reason);
}

void gateway::impl::log_counted(const std::string& kind, const std::string& line) {
  // A flood of connections must not flood the log: past 20 such lines in a second, the rest
  // of that second is counted, and the counts logged with the next line.
  constexpr uint64_t lines_a_second = 20;
  auto now = std::chrono::steady_clock::now();
  if (now - counted_since >= std::chrono::seconds(1)) {
    counted_since = now;
    counted_lines = 0;
  }
  if (++counted_lines > lines_a_second) {
    ++counted_unlogged[kind];
    return;
  }
  std::string counts;
  for (auto& [k, n] : counted_unlogged) counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, k);
  counted_unlogged.clear();
  log(counts.empty() ? line : fmt::format("{} (not logged before it: {})", line, counts));
}

void gateway::impl::hello_taken(uint64_t id) {
  if (!idle.remove(id)) before_hello.remove(id);
}

void gateway::impl::ended(uint64_t id) {
  if (!uncounted.erase(id)) --connections;
  hello_taken(id);
  trim_later();
}

void gateway::impl::trim_later() {
  if (++ended_since_trim < 64 || trim_armed) return;
  trim_armed = true;
  trim_timer.expires_after(std::chrono::seconds(1));
  trim_timer.async_wait([this](const boost::system::error_code& ec) {
    trim_armed = false;
    if (ec) return;
    ended_since_trim = 0;
    ::malloc_trim(0);
  });
}

} // namespace aryl::live
