#include "runtime/live/client.hpp"

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange

#include <boost/asio.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <thread>

#include "solvers/control_chars.hpp"
#include "solvers/input_error.hpp"
#include "runtime/live/array_rows.hpp"
#include "runtime/live/status_view.hpp"
#include "runtime/wire/plain_text.hpp"
#include "runtime/wire/tls_stream.hpp"
#include "runtime/wire/codec.hpp"

namespace aryl::live {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

/// The frame of `m`, or input_error when its body is over the protocol's limit: the scheduler
/// would refuse it and close while it is still being sent.
std::vector<uint8_t> checked_frame(const wire::message& m) {
  auto frame = wire::encode_frame(m);
  if (frame.size() - 4 <= wire::default_max_frame_bytes) return frame;
  throw input_error(fmt::format("{}: the request is {} bytes, over the protocol's {}-byte ({} MiB) frame limit{}",
                                wire::type_of(m), frame.size() - 4, wire::default_max_frame_bytes,
                                wire::default_max_frame_bytes >> 20,
                                std::holds_alternative<wire::submit>(m)
                                    ? ": shrink the job's command (its arguments) and name, or have the command "
                                      "read what it needs from a file"
                                    : ""));
}

/// One blocking connection with a deadline for every read.
class connection {
 public:
  connection(const client_options& o)
      : o_(o), where_(fmt::format("{}:{}", o.host, o.port)),
        stream_(net::client_stream(
            io_, o.tls_ca_file.empty() ? nullptr : net::tls_client_context(o.tls_ca_file, o.tls_cert_file, o.tls_key_file),
            o.host)) {
    boost::system::error_code ec;
    auto address = asio::ip::make_address(o.host, ec);
    if (ec) throw input_error(fmt::format("--host {}: not an IP address", o.host));
    // The hello carries the token: refused here, before a byte leaves.
    if (o.tls_ca_file.empty())
      if (auto why = net::plain_text_refusal(o.host, o.port, {address}, o.insecure); !why.empty()) throw input_error(why);
    stream_->socket().connect(tcp::endpoint{address, o.port}, ec);
    if (ec) throw input_error(where_ + ": cannot connect: " + ec.message());
    std::optional<std::string> failed;  // plain: answered at once
    stream_->async_handshake([&](const std::string& e) { failed = e; });
    if (!failed) run();
    if (!failed) throw input_error(fmt::format("{}: no TLS handshake within {:g} s", where_, o_.timeout_s));
    if (!failed->empty()) throw input_error(where_ + ": TLS handshake failed: " + *failed);
  }

  void send(const wire::message& m) {
    auto frame = checked_frame(m);
    boost::system::error_code result = asio::error::would_block;
    stream_->async_write(asio::buffer(frame), [&](const boost::system::error_code& ec, size_t) { result = ec; });
    run();
    if (result == asio::error::would_block) throw input_error(fmt::format("{}: cannot send within {:g} s", where_, o_.timeout_s));
    // The scheduler writes why before it closes on a frame it refuses: that is the news, not
    // the broken pipe it leaves.
    if (result) {
      if (auto why = refusal_after_close()) throw input_error(where_ + ": refused: " + *why);
      throw input_error(where_ + ": cannot send: " + result.message());
    }
  }

  wire::message receive() {
    for (;;) {
      auto step = decoder_.next();
      if (auto* m = std::get_if<wire::message>(&step)) {
        if (auto* e = std::get_if<wire::error>(m)) throw input_error(where_ + ": refused: " + e->reason);
        return std::move(*m);
      }
      if (auto* e = std::get_if<wire::decode_error>(&step)) throw input_error(where_ + ": bad answer: " + e->reason);
      size_t n = read_some();
      decoder_.feed(buf_.data(), n);
    }
  }

 private:
  /// The error frame among what the scheduler wrote before it closed, if any: what is left
  /// of a closed connection reads at once, so this takes no more than the timeout.
  std::optional<std::string> refusal_after_close() {
    try {
      for (;;) {
        auto step = decoder_.next();
        if (auto* m = std::get_if<wire::message>(&step)) {
          if (auto* e = std::get_if<wire::error>(m)) return e->reason;
          continue;
        }
        if (std::holds_alternative<wire::decode_error>(step)) return std::nullopt;
        size_t n = read_some();
        decoder_.feed(buf_.data(), n);
      }
    } catch (const input_error&) {
      return std::nullopt;  // closed, reset or silent: nothing said
    }
  }

  size_t read_some() {
    boost::system::error_code result = asio::error::would_block;
    size_t n = 0;
    stream_->async_read_some(asio::buffer(buf_), [&](const boost::system::error_code& ec, size_t got) {
      result = ec;
      n = got;
    });
    run();
    if (result == asio::error::would_block) throw input_error(fmt::format("{}: no answer within {:g} s", where_, o_.timeout_s));
    if (result == asio::error::eof) throw input_error(where_ + ": the scheduler closed the connection");
    if (result) throw input_error(where_ + ": " + result.message());
    return n;
  }

  /// Runs the operation begun, for at most the timeout.
  void run() {
    io_.restart();
    io_.run_for(std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(o_.timeout_s)));
  }

  const client_options& o_;
  std::string where_;
  asio::io_context io_;
  std::unique_ptr<net::byte_stream> stream_;
  wire::frame_decoder decoder_;
  std::array<uint8_t, 16384> buf_{};
};

const char* server_state_text(wire::server_state s) {
  switch (s) {
    case wire::server_state::up: return "up";
    case wire::server_state::unreachable: return "unreachable";
    case wire::server_state::lost: return "lost";
  }
  return "?";
}

std::string state_text(wire::job_state s) { return std::string(state_name(s)); }

} // namespace

namespace {

void greet(connection& c, const client_options& o) {
  c.send(wire::hello{wire::peer_role::client, o.token, "aryl-cli"});
  auto ok = c.receive();
  if (!std::holds_alternative<wire::hello_ok>(ok))
    throw input_error(fmt::format("{}:{}: expected hello_ok, got '{}'", o.host, o.port, wire::type_of(ok)));
}

} // namespace

std::string cancel(const client_options& o, uint64_t job) {
  connection c(o);
  greet(c, o);
  // What the job was doing, for the confirmation: the status just before the cancel.
  c.send(wire::status_request{});
  auto before = c.receive();
  std::optional<wire::job_info> was;
  if (auto* s = std::get_if<wire::status_reply>(&before))
    for (auto& j : s->jobs)
      if (j.job_id == job) was = j;
  c.send(wire::cancel{job});
  // cancel has no reply; a refusal arrives before the answer to the next request.
  c.send(wire::status_request{});
  c.receive();
  c.send(wire::bye{});
  if (!was) return fmt::format("cancelled job {}", job);
  auto what = fmt::format("cancelled job {} ({})", job, escape_control(was->name));
  if (was->state == wire::job_state::running)
    return what + fmt::format(": it was running on {} worker{}, now stopped", was->workers, was->workers == 1 ? "" : "s");
  return what + ": it was queued";
}

void logs(const client_options& o, uint64_t job, std::optional<uint32_t> task, uint32_t rank, bool follow,
          std::ostream& out, double poll_s) {
  connection c(o);
  greet(c, o);
  uint64_t offset = 0;
  for (;;) {
    c.send(wire::logs_request{job, rank, offset, task});
    auto m = c.receive();
    auto* r = std::get_if<wire::logs_reply>(&m);
    if (!r) throw input_error(fmt::format("logs: the scheduler answered '{}'", wire::type_of(m)));
    out << r->text << std::flush;
    offset += r->text.size();
    if (offset < r->size && !r->text.empty()) continue;  // more there now
    if (!follow || !r->active) break;
    // Well inside the scheduler's 10 s idle limit: the next request keeps the connection.
    std::this_thread::sleep_for(std::chrono::duration<double>(poll_s));
  }
  c.send(wire::bye{});
}

endpoint resolve_endpoint(const std::string& command, const std::string& host, std::optional<uint16_t> port,
                          const std::string& token_file, const std::function<const char*(const char*)>& env,
                          bool certificate) {
  endpoint e;
  e.host = host.empty() ? "127.0.0.1" : host;
  if (port) {
    e.port = *port;
  } else if (const char* addr = env("ARYL_ADDR"); addr && *addr) {
    std::string a = addr;
    auto colon = a.rfind(':');
    auto bad = [&] {
      return input_error(fmt::format("{}: ARYL_ADDR '{}' is not HOST:PORT (e.g. 127.0.0.1:7000)", command,
                                     escape_control(a)));
    };
    if (colon == std::string::npos || colon == 0 || colon + 1 == a.size()) throw bad();
    unsigned long p = 0;
    for (size_t i = colon + 1; i < a.size(); ++i) {
      if (a[i] < '0' || a[i] > '9') throw bad();
      p = p * 10 + static_cast<unsigned long>(a[i] - '0');
      if (p > 65535) throw bad();
    }
    if (p == 0) throw bad();
    if (host.empty()) e.host = a.substr(0, colon);
    e.port = static_cast<uint16_t>(p);
  } else {
    throw input_error(command + ": no scheduler address: give --port (and --host) or set ARYL_ADDR=HOST:PORT");
  }
  e.token_file = token_file;
  if (e.token_file.empty())
    if (const char* f = env("ARYL_TOKEN_FILE"); f && *f) e.token_file = f;
  if (e.token_file.empty() && !certificate)
    throw input_error(command + ": no token: give --token-file or set ARYL_TOKEN_FILE, or present a TLS client "
                                "certificate (--tls-cert) whose name is an identity");
  return e;
}

std::optional<wire::message> ask(const client_options& o, const wire::message& request, bool expect_reply) {
  checked_frame(request);  // before connecting: nothing to send there
  connection c(o);
  greet(c, o);
  c.send(request);
  std::optional<wire::message> reply;
  if (expect_reply) reply = c.receive();
  c.send(wire::bye{});
  return reply;
}

void ask_each(const client_options& o, const wire::message& first,
              const std::function<std::optional<wire::message>(const wire::message& reply)>& next) {
  checked_frame(first);
  connection c(o);
  greet(c, o);
  std::optional<wire::message> request = first;
  while (request) {
    c.send(*request);
    request = next(c.receive());
  }
  c.send(wire::bye{});
}

void print_status(std::ostream& out, const wire::status_reply& s, const std::vector<std::string>& ids) {
  // User and tenant columns only where some job has one: a cluster without identities or
  // tenants reads as before.
  const bool tenants = std::any_of(s.jobs.begin(), s.jobs.end(), [](auto& j) { return j.tenant.has_value(); });
  const bool users = std::any_of(s.jobs.begin(), s.jobs.end(), [](auto& j) { return j.user.has_value(); });
  auto row = [&](auto job, auto name, const std::string& user, const std::string& tenant, auto state, auto workers,
                 auto gpus, auto range, auto type, auto time, auto servers, auto why) {
    out << fmt::format("{:>6}  {:<20} ", job, name);
    if (users) out << fmt::format("{:<12} ", user);
    if (tenants) out << fmt::format("{:<12} ", tenant);
    out << fmt::format("{:<9} {:>7} {:>4} {:>7}  {:<6} {:>10}  {:<16} {}\n", state, workers, gpus, range, type, time,
                       servers, why);
  };
  row("JOB", "NAME", "USER", "TENANT", "STATE", "WORKERS", "GPUS", "MIN-MAX", "TYPE", "TIME", "SERVERS", "WAITING BECAUSE");
  auto opt = [](const std::optional<uint32_t>& v) { return v ? std::to_string(*v) : std::string("-"); };
  // Names come from users and agents: escaped, one row each.
  for (size_t i = 0; i < s.jobs.size(); ++i) {
    auto& j = s.jobs[i];
    std::string name = escape_control(j.name);
    if (j.predicted && !*j.predicted) name += " (no estimate)";
    // An ended job: its outcome (a newer scheduler's, finer than its state) and its exits.
    std::string state = j.outcome ? escape_control(*j.outcome) : j.held && *j.held ? "held" : state_text(j.state);
    std::string why = j.exits ? "exits " + escape_control(*j.exits) : escape_control(j.reason.value_or(""));
    row(i < ids.size() ? ids[i] : job_id_text(j), name, escape_control(j.user.value_or("-")), escape_control(j.tenant.value_or("-")), state, j.workers, opt(j.gpus),
        j.min_workers && j.max_workers ? fmt::format("{}-{}", *j.min_workers, *j.max_workers) : std::string("-"),
        escape_control(j.gpu_type.value_or("any")), j.run_s ? clock_text(*j.run_s) : std::string("-"),
        escape_control(j.servers.value_or("")), why);
  }
  out << fmt::format("\n{:<10} {:<6} {:>4} {:>5}  {:<9} {:<11} {:<10} {}\n", "SERVER", "GPU", "GPUS", "FREE", "POOL",
                     "STATE", "LOAN", "REASON");
  for (auto& v : s.servers) {
    std::string loan;
    for (auto& l : s.loans)
      if (l.server == v.name) loan = l.state == wire::loan_state::loaned ? "loaned" : "reclaiming";
    // An operator's hold in place of "up"; beside a loss ("lost, drained"), which it outlives.
    std::string state = v.state ? server_state_text(*v.state) : "";
    if (v.hold) state = state == "up" || state.empty() ? escape_control(*v.hold) : state + ", " + escape_control(*v.hold);
    out << fmt::format("{:<10} {:<6} {:>4} {:>5}  {:<9} {:<11} {:<10} {}\n", escape_control(v.name),
                       escape_control(v.gpu_type), v.gpus, v.free, wire::pool_name(v.pool), state, loan,
                       escape_control(v.reason.value_or("")));
  }
  if (!s.tenants) return;
  out << fmt::format("\n{:<16} {:>6} {:>7} {:>5} {:>9} {:>7}\n", "TENANT", "QUOTA", "IN-USE", "LENT", "BORROWED",
                     "QUEUED");
  for (auto& t : *s.tenants)
    out << fmt::format("{:<16} {:>6} {:>7} {:>5} {:>9} {:>7}\n", t.name.empty() ? "(none)" : escape_control(t.name),
                       t.quota ? std::to_string(*t.quota) : std::string("-"), t.in_use, t.lent, t.borrowed, t.queued);
}

namespace {

nlohmann::ordered_json job_json(const wire::job_info& x) {
  nlohmann::ordered_json e = {
      {"job_id", x.job_id}, {"name", x.name}, {"state", state_text(x.state)}, {"workers", x.workers}};
  if (x.reason) e["reason"] = *x.reason;
  if (x.gpus) e["gpus"] = *x.gpus;
  if (x.min_workers) e["min_workers"] = *x.min_workers;
  if (x.max_workers) e["max_workers"] = *x.max_workers;
  if (x.gpu_type) e["gpu_type"] = *x.gpu_type;
  if (x.run_s) e["run_s"] = *x.run_s;
  if (x.servers) e["servers"] = *x.servers;
  if (x.predicted) e["predicted"] = *x.predicted;
  if (x.tenant) e["tenant"] = *x.tenant;
  if (x.outcome) e["outcome"] = *x.outcome;
  if (x.exits) e["exits"] = *x.exits;
  if (x.user) e["user"] = *x.user;
  if (x.held) e["held"] = *x.held;
  if (x.array_job) e["array_job"] = *x.array_job;
  if (x.array_task) e["array_task"] = *x.array_task;
  return e;
}

} // namespace

std::string show_json(const wire::show_reply& s) {
  nlohmann::ordered_json j = job_json(s.job);
  j["command"] = s.command;
  j["expected_duration_s"] = s.expected_duration_s;
  j["submit_s"] = s.submit_s;
  if (s.end_s) j["end_s"] = *s.end_s;
  j["history"] = nlohmann::ordered_json::array();
  for (auto& h : s.history) j["history"].push_back({{"t_s", h.t_s}, {"event", h.event}, {"detail", h.detail}, {"why", h.why}});
  if (s.time_limit_s) j["time_limit_s"] = *s.time_limit_s;
  if (s.after) j["after"] = *s.after;
  if (s.max_retries) j["max_retries"] = *s.max_retries;
  if (s.attempts) {
    j["attempts"] = nlohmann::ordered_json::array();
    for (auto& a : *s.attempts) {
      nlohmann::ordered_json e;
      if (a.start_s) e["start_s"] = *a.start_s;
      e["end_s"] = a.end_s;
      e["outcome"] = a.outcome;
      if (a.exits) e["exits"] = *a.exits;
      e["why"] = a.why;
      j["attempts"].push_back(std::move(e));
    }
  }
  return j.dump(2);
}

std::string status_json(const wire::status_reply& s, const std::set<std::string>& job_keys) {
  nlohmann::ordered_json j;
  j["jobs"] = nlohmann::ordered_json::array();
  for (auto& x : s.jobs) {
    auto e = job_json(x);
    if (!job_keys.empty())
      for (auto it = e.begin(); it != e.end();) it = job_keys.count(it.key()) ? std::next(it) : e.erase(it);
    j["jobs"].push_back(std::move(e));
  }
  j["servers"] = nlohmann::ordered_json::array();
  for (auto& x : s.servers) {
    nlohmann::ordered_json e = {{"name", x.name}, {"gpu_type", x.gpu_type}, {"gpus", x.gpus}, {"free", x.free},
                                {"pool", wire::pool_name(x.pool)}};
    if (x.state) e["state"] = server_state_text(*x.state);
    if (x.hold) e["hold"] = *x.hold;
    if (x.reason) e["reason"] = *x.reason;
    j["servers"].push_back(std::move(e));
  }
  j["loans"] = nlohmann::ordered_json::array();
  for (auto& x : s.loans)
    j["loans"].push_back({{"server", x.server}, {"state", x.state == wire::loan_state::loaned ? "loaned" : "reclaiming"}});
  if (s.tenants) {
    j["tenants"] = nlohmann::ordered_json::array();
    for (auto& x : *s.tenants) {
      nlohmann::ordered_json e = {{"name", x.name}};
      if (x.quota) e["quota"] = *x.quota;
      e["in_use"] = x.in_use;
      e["lent"] = x.lent;
      e["borrowed"] = x.borrowed;
      e["queued"] = x.queued;
      j["tenants"].push_back(std::move(e));
    }
  }
  return j.dump(2);
}

void print_show(std::ostream& out, const wire::show_reply& s) {
  auto& j = s.job;
  out << fmt::format("JobId={} Name={} State={}", j.job_id, escape_control(j.name),
                     j.held && *j.held ? "held" : state_text(j.state));
  if (j.array_job && j.array_task) out << fmt::format(" ArrayJobId={} ArrayTaskId={}", *j.array_job, *j.array_task);
  if (j.outcome) out << fmt::format(" Outcome={}", escape_control(*j.outcome));
  if (j.exits) out << fmt::format(" Exits={}", escape_control(*j.exits));
  out << '\n';
  out << fmt::format("   Gpus={} MinWorkers={} MaxWorkers={} GpuType={} Workers={}\n", j.gpus.value_or(0),
                     j.min_workers.value_or(0), j.max_workers.value_or(0), escape_control(j.gpu_type.value_or("any")),
                     j.workers);
  if (j.tenant) out << fmt::format("   Tenant={}\n", escape_control(*j.tenant));
  if (j.user) out << fmt::format("   User={}\n", escape_control(*j.user));
  out << fmt::format("   Estimate={:g}s{}\n", s.expected_duration_s,
                     j.predicted && !*j.predicted ? " (none given: the default estimate)" : "");
  std::string argv;
  for (auto& a : s.command) argv += (argv.empty() ? "" : " ") + escape_control(a);
  out << fmt::format("   Command={}\n", argv.empty() ? "(the configured worker)" : argv);
  if (s.time_limit_s || s.max_retries) {
    out << "  ";
    if (s.time_limit_s) out << fmt::format(" TimeLimit={}", clock_text(*s.time_limit_s));
    if (s.max_retries) out << fmt::format(" MaxRetries={}", *s.max_retries);
    out << '\n';
  }
  out << fmt::format("   SubmitTime={:.3f}s", s.submit_s);
  if (s.end_s) out << fmt::format(" EndTime={:.3f}s", *s.end_s);
  if (j.run_s) out << fmt::format(" RunTime={}", clock_text(*j.run_s));
  out << '\n';
  if (j.servers && !j.servers->empty()) out << fmt::format("   Servers={}\n", escape_control(*j.servers));
  if (j.reason) out << fmt::format("   Reason={}\n", escape_control(*j.reason));
  if (s.after) out << fmt::format("   Dependency={}\n", escape_control(*s.after));
  if (s.attempts && !s.attempts->empty()) {
    out << "   Attempts (simulated seconds since the run started):\n";
    for (size_t i = 0; i < s.attempts->size(); ++i) {
      auto& a = (*s.attempts)[i];
      out << fmt::format("   {:>3}  {:>12} {:>12.3f}  {:<9} {}{}{}\n", i + 1,
                         a.start_s ? fmt::format("{:.3f}", *a.start_s) : std::string("-"), a.end_s,
                         escape_control(a.outcome), a.exits ? "exits " + escape_control(*a.exits) : std::string(),
                         a.exits && !a.why.empty() ? " | " : "", escape_control(a.why));
    }
  }
  out << "   History (simulated seconds since the run started):\n";
  for (auto& h : s.history)
    out << fmt::format("   {:>12.3f}  {:<8} {}{}{}\n", h.t_s, escape_control(h.event), escape_control(h.detail),
                       h.why.empty() ? "" : " | ", escape_control(h.why));
}

void print_show_node(std::ostream& out, const wire::show_node_reply& r) {
  auto& v = r.node;
  out << fmt::format("NodeName={} Pool={} GpuType={} Gpus={} Free={} State={} Mode={}\n", escape_control(v.name),
                     wire::pool_name(v.pool), escape_control(v.gpu_type), v.gpus, v.free,
                     v.state ? server_state_text(*v.state) : "-", escape_control(r.mode));
  out << fmt::format("   Hold={}", v.hold ? escape_control(*v.hold) : std::string("none"));
  if (v.reason) out << fmt::format(" Reason={}", escape_control(*v.reason));
  out << '\n';
  out << fmt::format("   Address={} LastHeard={} AgentVersion={}\n",
                     r.address ? escape_control(*r.address) : std::string("-"),
                     r.heard_s ? fmt::format("{:.1f}s ago", *r.heard_s) : std::string("(no agent connected)"),
                     r.agent_version ? escape_control(*r.agent_version) : std::string("-"));
  out << fmt::format("   Jobs={}\n", r.jobs.size());
  if (r.jobs.empty()) return;
  out << fmt::format("   {:>6}  {:<20} {:>7}  {}\n", "JOB", "NAME", "WORKERS", "RANKS");
  for (auto& j : r.jobs)
    out << fmt::format("   {:>6}  {:<20} {:>7}  {}\n", j.job_id, escape_control(j.name), j.workers,
                       j.ranks.empty() ? std::string("-") : rank_ranges(j.ranks));
}

std::string show_node_json(const wire::show_node_reply& r) {
  auto& v = r.node;
  nlohmann::ordered_json j = {{"name", v.name}, {"gpu_type", v.gpu_type}, {"gpus", v.gpus}, {"free", v.free},
                              {"pool", wire::pool_name(v.pool)}};
  if (v.state) j["state"] = server_state_text(*v.state);
  if (v.hold) j["hold"] = *v.hold;
  if (v.reason) j["reason"] = *v.reason;
  j["mode"] = r.mode;
  j["jobs"] = nlohmann::ordered_json::array();
  for (auto& x : r.jobs)
    j["jobs"].push_back({{"job_id", x.job_id}, {"name", x.name}, {"workers", x.workers}, {"ranks", x.ranks}});
  if (r.heard_s) j["heard_s"] = *r.heard_s;
  if (r.address) j["address"] = *r.address;
  if (r.agent_version) j["agent_version"] = *r.agent_version;
  return j.dump(2);
}

} // namespace aryl::live
