#include "runtime/live/metrics.hpp"

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/asio/ssl.hpp>
#include <fmt/format.h>

#include "runtime/wire/tls_stream.hpp"
#include "runtime/live/accept_errors.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <map>
#include <thread>
#include <tuple>

#include "solvers/control_chars.hpp"
#include "solvers/input_error.hpp"

namespace aryl::live {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

/// A label value as the text exposition format writes it: backslash, quote and newline escaped
/// (a tenant's name comes from a trace or a client).
std::string label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

} // namespace

std::string render_metrics(const cluster_status& s, const front_counts& f) {
  std::string out;
  auto family = [&](const char* name, const char* type, const char* help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  };
  int queued = 0, running = 0;
  for (auto& j : s.jobs) ++(j.running ? running : queued);
  family("aryl_jobs", "gauge", "Jobs waiting or holding GPUs now.");
  out += fmt::format("aryl_jobs{{state=\"queued\"}} {}\naryl_jobs{{state=\"running\"}} {}\n", queued, running);
  // Every series from the start, at zero, so that rate() and alerts see them before the
  // first event.
  family("aryl_jobs_finished_total", "counter", "Jobs that ended, by outcome (done, failed, cancelled).");
  out += fmt::format("aryl_jobs_finished_total{{outcome=\"done\"}} {}\n",
                     s.jobs_finished - s.jobs_failed - s.jobs_cancelled);
  out += fmt::format("aryl_jobs_finished_total{{outcome=\"failed\"}} {}\n", s.jobs_failed);
  out += fmt::format("aryl_jobs_finished_total{{outcome=\"cancelled\"}} {}\n", s.jobs_cancelled);

  std::map<std::tuple<std::string, std::string, std::string>, int> gpus;  // pool, type, use
  std::map<std::pair<std::string, std::string>, int> servers;             // pool, mode
  for (const char* pool : {"training", "inference"})
    for (const char* mode : {"training", "serving", "loaned", "reclaiming", "down", "cordoned"}) servers[{pool, mode}] = 0;
  for (auto& v : s.servers) {
    std::string pool = v.inference ? "inference" : "training";
    for (const char* use : {"busy", "free", "lost", "held", "serving"}) gpus[{pool, v.gpu_type, use}] += 0;
    if (v.mode == "down") {
      gpus[{pool, v.gpu_type, "lost"}] += v.gpus;
    } else if (v.mode == "serving") {
      // An inference server not lent: its GPUs serve inference, none is free for training.
      gpus[{pool, v.gpu_type, "serving"}] += v.gpus;
    } else if (v.mode == "cordoned") {
      gpus[{pool, v.gpu_type, "held"}] += v.gpus;
    } else {
      gpus[{pool, v.gpu_type, "busy"}] += v.gpus - v.free;
      gpus[{pool, v.gpu_type, "free"}] += v.free;
    }
    ++servers[{pool, v.mode}];
  }
  family("aryl_gpus", "gauge",
         "GPUs by home pool, GPU type and use (busy: held by training workers; serving: on an inference server "
         "not lent; lost: on a lost server; held: on a server an operator cordoned or drained, busy or not).");
  for (auto& [k, n] : gpus)
    out += fmt::format("aryl_gpus{{pool=\"{}\",gpu_type=\"{}\",use=\"{}\"}} {}\n", std::get<0>(k), std::get<1>(k),
                       std::get<2>(k), n);
  family("aryl_servers", "gauge",
         "Servers by home pool and mode (training, serving, loaned, reclaiming, down, cordoned: held by an operator).");
  for (auto& [k, n] : servers) out += fmt::format("aryl_servers{{pool=\"{}\",mode=\"{}\"}} {}\n", k.first, k.second, n);
  if (s.inference_needed >= 0) {
    // Beside aryl_servers{pool="inference"} by mode: what loaning and reclaim answer to.
    family("aryl_inference_demand_servers", "gauge",
           "Inference servers the demand needs now, headroom included (the last `aryl demand`, else the demand "
           "curve). Absent in a cluster without inference servers.");
    out += fmt::format("aryl_inference_demand_servers {}\n", s.inference_needed);
  }
  family("aryl_server_held", "gauge", "1 for each server an operator holds, by hold (cordoned, draining, drained).");
  for (auto& v : s.servers)
    if (v.node_state != hold_state::up)
      out += fmt::format("aryl_server_held{{server=\"{}\",hold=\"{}\"}} 1\n", label(v.name), to_string(v.node_state));

  family("aryl_reclaim_latency_seconds", "histogram",
         "Simulated seconds from a reclaim request to its servers' return.");
  static const double bounds[] = {1, 5, 10, 30, 60, 120, 300, 600};
  double sum = 0;
  for (double b : bounds) {
    size_t n = 0;
    for (double l : s.reclaim_latency_s) n += l <= b ? 1 : 0;
    out += fmt::format("aryl_reclaim_latency_seconds_bucket{{le=\"{}\"}} {}\n", b, n);
  }
  for (double l : s.reclaim_latency_s) sum += l;
  out += fmt::format("aryl_reclaim_latency_seconds_bucket{{le=\"+Inf\"}} {}\n", s.reclaim_latency_s.size());
  out += fmt::format("aryl_reclaim_latency_seconds_sum {}\naryl_reclaim_latency_seconds_count {}\n", sum,
                     s.reclaim_latency_s.size());
  family("aryl_reclaim_slo_misses_total", "counter", "Inference servers returned after their reclaim deadline.");
  out += fmt::format("aryl_reclaim_slo_misses_total {}\n", s.reclaim_slo_misses);
  family("aryl_round_latency_seconds", "histogram",
         "Wall-clock seconds from the event that asked for a scheduling round to its last decision sent.");
  uint64_t cumulative = 0;
  for (size_t i = 0; i < std::size(latency_histogram::bounds); ++i) {
    cumulative += s.rounds.counts[i];
    out += fmt::format("aryl_round_latency_seconds_bucket{{le=\"{}\"}} {}\n", latency_histogram::bounds[i], cumulative);
  }
  out += fmt::format("aryl_round_latency_seconds_bucket{{le=\"+Inf\"}} {}\n", s.rounds.count);
  out += fmt::format("aryl_round_latency_seconds_sum {}\naryl_round_latency_seconds_count {}\n", s.rounds.sum_s,
                     s.rounds.count);
  if (!s.tenants.empty()) {
    // Jobs without a tenant have no tenant label, not an empty one; a tenant without a quota
    // has no quota series, not a -1.
    auto tenant = [](const tenant_report& t) {
      return t.name.empty() ? std::string{} : fmt::format("tenant=\"{}\"", label(t.name));
    };
    family("aryl_tenant_gpus", "gauge",
           "A tenant's GPUs of training servers: quota (no series for a tenant without one), in use by its base "
           "demand, borrowed beyond its quota, and idle quota lent to others. Jobs without a tenant: the series "
           "without a tenant label.");
    for (auto& t : s.tenants)
      for (auto [kind, n] : {std::pair{"quota", t.quota}, std::pair{"in_use", t.in_use},
                             std::pair{"borrowed", t.borrowed}, std::pair{"lent", t.lent}}) {
        if (n < 0) continue;  // no quota
        auto who = tenant(t);
        out += fmt::format("aryl_tenant_gpus{{{}{}kind=\"{}\"}} {}\n", who, who.empty() ? "" : ",", kind, n);
      }
    family("aryl_tenant_queued_jobs", "gauge",
           "A tenant's queued jobs. Jobs without a tenant: the series without a tenant label.");
    for (auto& t : s.tenants) {
      auto who = tenant(t);
      out += who.empty() ? fmt::format("aryl_tenant_queued_jobs {}\n", t.queued)
                         : fmt::format("aryl_tenant_queued_jobs{{{}}} {}\n", who, t.queued);
    }
  }
  family("aryl_agents", "gauge", "Node agents configured and connected now.");
  out += fmt::format("aryl_agents{{state=\"configured\"}} {}\naryl_agents{{state=\"connected\"}} {}\n",
                     f.agents_configured, f.agents_connected);
  family("aryl_journal_failing", "gauge",
         "1 while writes to the --state journal fail (running jobs go on, submits are refused).");
  out += fmt::format("aryl_journal_failing {}\n", f.journal_failing ? 1 : 0);
  family("aryl_journal_write_failures_total", "counter", "Failed writes to the --state journal, retries included.");
  out += fmt::format("aryl_journal_write_failures_total {}\n", f.journal_write_failures);

  family("aryl_decisions_total", "counter",
         "Scheduling decisions this serve process dispatched, by kind (start; preempt: a running job stopped and "
         "queued again; scale_in, scale_out: an elastic job's workers changed).");
  for (auto [kind, n] : {std::pair{"start", s.counts.starts}, std::pair{"preempt", s.counts.preemptions},
                         std::pair{"scale_in", s.counts.scale_ins}, std::pair{"scale_out", s.counts.scale_outs}})
    out += fmt::format("aryl_decisions_total{{kind=\"{}\"}} {}\n", kind, n);
  family("aryl_loans_total", "counter", "Inference servers loaned to training by this serve process.");
  out += fmt::format("aryl_loans_total {}\n", s.counts.loans);
  // Ended jobs by tenant (no label: no tenant) and outcome; simulated seconds, as JCT is.
  for (auto [name, help, wait] :
       {std::tuple{"aryl_queue_wait_seconds", "Ended jobs' total time queued, by tenant and outcome.", true},
        std::tuple{"aryl_jct_seconds", "Ended jobs' completion time (end - submit), by tenant and outcome.", false}}) {
    family(name, "histogram", help);
    for (auto& h : s.ends) {
      const auto labels = fmt::format("{}outcome=\"{}\"", h.tenant.empty() ? "" : fmt::format("tenant=\"{}\",", label(h.tenant)),
                                      to_string(h.outcome));
      const auto& counts = wait ? h.wait : h.jct;
      uint64_t cumulative = 0;
      for (size_t i = 0; i < std::size(end_histogram::bounds); ++i) {
        cumulative += counts[i];
        out += fmt::format("{}_bucket{{{},le=\"{}\"}} {}\n", name, labels, end_histogram::bounds[i], cumulative);
      }
      out += fmt::format("{}_bucket{{{},le=\"+Inf\"}} {}\n", name, labels, h.count);
      out += fmt::format("{}_sum{{{}}} {}\n{}_count{{{}}} {}\n", name, labels, wait ? h.wait_sum_s : h.jct_sum_s, name,
                         labels, h.count);
    }
  }
  family("aryl_agent_up", "gauge", "1 while the server's node agent is connected.");
  for (auto& a : f.agents) out += fmt::format("aryl_agent_up{{server=\"{}\"}} {}\n", label(a.server), a.up ? 1 : 0);
  family("aryl_agent_heartbeat_age_seconds", "gauge",
         "Seconds since the server's connected node agent was last heard (no series while it is not connected).");
  for (auto& a : f.agents)
    if (a.up) out += fmt::format("aryl_agent_heartbeat_age_seconds{{server=\"{}\"}} {:.3f}\n", label(a.server), a.heard_s_ago);
  family("aryl_scheduler_restarts", "gauge", "Times serve was started again on this run's --state journal.");
  out += fmt::format("aryl_scheduler_restarts {}\n", f.scheduler_restarts);
  family("aryl_build_info", "gauge", "1, labelled with the serve binary's version.");
  out += fmt::format("aryl_build_info{{version=\"{}\"}} 1\n", label(f.version));
  return out;
}

struct metrics_endpoint::impl {
  /// One connection: its request is read and answered within the deadline, or it is closed.
  struct connection {
    connection(tcp::socket s, size_t max_bytes)
        : socket(std::move(s)), deadline(socket.get_executor()), buffer(max_bytes) {}
    tcp::socket socket;
    std::unique_ptr<asio::ssl::stream<tcp::socket&>> tls;  ///< HTTPS: over the socket
    asio::steady_timer deadline;
    beast::flat_buffer buffer;
    http::request_parser<http::empty_body> parser;
  };

  asio::io_context io;
  tcp::acceptor acceptor{io};
  asio::steady_timer accept_retry{io};
  std::chrono::milliseconds accept_backoff{0};
  std::chrono::steady_clock::time_point accept_error_logged{};
  uint64_t accept_errors = 0;
  std::function<health()> render;
  std::function<health()> check;
  std::ostream& log;
  metrics_limits limits;
  /// Open connections by arrival: the first is the oldest.
  std::map<uint64_t, std::shared_ptr<connection>> open;
  uint64_t next_id = 0;
  std::thread thread;

  impl(std::function<health()> r, std::function<health()> c, std::ostream& l, metrics_limits m, bearer_check a,
       std::shared_ptr<net::tls_context> t)
      : render(std::move(r)), check(std::move(c)), log(l), limits(m), authorize(std::move(a)), tls(std::move(t)) {}
  bearer_check authorize;
  std::shared_ptr<net::tls_context> tls;

  /// Why the request may not read what it asks ("" if it may).
  std::string unauthorized(const http::request<http::empty_body>& request) const {
    if (!authorize) return {};
    auto header = request[http::field::authorization];
    const std::string_view text(header.data(), header.size());
    constexpr std::string_view scheme = "bearer ";
    std::string_view token;
    if (text.size() > scheme.size() &&
        std::equal(scheme.begin(), scheme.end(), text.begin(),
                   [](char a, char b) { return a == std::tolower(static_cast<unsigned char>(b)); }))
      token = text.substr(scheme.size());
    return authorize(token);
  }

  void accept() {
    acceptor.async_accept([this](boost::system::error_code ec, tcp::socket s) {
      if (!acceptor.is_open() || ec == asio::error::operation_aborted) return;  // closed
      if (!ec) {
        accept_backoff = std::chrono::milliseconds{0};
        serve(std::move(s));
        return accept();
      }
      // Never give up (out of descriptors, the peer waits in the backlog): try again after a
      // back-off that doubles while the errors last, 1 s at most, logged once a second.
      accept_backoff = out_of_resources(ec) ? std::clamp(accept_backoff * 2, accept_first_backoff, accept_last_backoff)
                                            : std::chrono::milliseconds{0};
      ++accept_errors;
      auto now = std::chrono::steady_clock::now();
      if (now - accept_error_logged >= std::chrono::seconds(1)) {
        accept_error_logged = now;
        log << fmt::format("[serve] metrics: accept failed: {} ({} time{} since the last such line); accepting "
                           "again in {} ms\n",
                           ec.message(), accept_errors, accept_errors == 1 ? "" : "s", accept_backoff.count())
            << std::flush;
        accept_errors = 0;
      }
      accept_retry.expires_after(accept_backoff);
      accept_retry.async_wait([this](boost::system::error_code e) {
        if (!e) accept();
      });
    });
  }

  void close(uint64_t id) {
    auto it = open.find(id);
    if (it == open.end()) return;
    beast::error_code ignored;
    it->second->deadline.cancel();
    it->second->socket.shutdown(tcp::socket::shutdown_both, ignored);
    it->second->socket.close(ignored);
    open.erase(it);
  }

  /// One request, one answer, then the connection closes. At the cap the oldest connection
  /// gives way: a scraper sends its request at once, so the oldest is the likeliest idle.
  void serve(tcp::socket socket) {
    while (open.size() >= limits.max_connections && !open.empty()) close(open.begin()->first);
    auto id = next_id++;
    auto c = std::make_shared<connection>(std::move(socket), limits.max_request_bytes);
    open.emplace(id, c);
    c->parser.header_limit(static_cast<uint32_t>(limits.max_request_bytes));
    c->parser.body_limit(0);
    c->deadline.expires_after(limits.request_deadline);
    c->deadline.async_wait([this, id](boost::system::error_code ec) {
      if (!ec) close(id);
    });
    if (!tls) return read(id, c);
    c->tls = std::make_unique<asio::ssl::stream<tcp::socket&>>(c->socket, net::asio_context(*tls));
    c->tls->async_handshake(asio::ssl::stream_base::server, [this, id, c](beast::error_code ec) {
      if (ec || !open.count(id)) return close(id);
      read(id, c);
    });
  }

  void read(uint64_t id, const std::shared_ptr<connection>& c) {
    auto done = [this, id, c](beast::error_code ec, size_t) {
      if (ec || !open.count(id)) return close(id);
      answer(id, c);
    };
    if (c->tls) http::async_read(*c->tls, c->buffer, c->parser, std::move(done));
    else http::async_read(c->socket, c->buffer, c->parser, std::move(done));
  }

  void answer(uint64_t id, const std::shared_ptr<connection>& c) {
    const auto& request = c->parser.get();
    auto response = std::make_shared<http::response<http::string_body>>();
    response->version(request.version());
    response->keep_alive(false);
    if (auto why = unauthorized(request); !why.empty()) {
      log << fmt::format("[serve] GET {} answered 401: {}\n", escape_control(std::string(request.target())),
                         escape_control(why)) << std::flush;
      response->result(http::status::unauthorized);
      response->set(http::field::www_authenticate, "Bearer realm=\"aryl\"");
      response->set(http::field::content_type, "text/plain");
      response->body() = why + "\n";
    } else if (request.method() == http::verb::get && request.target() == "/metrics") {
      auto page = render();
      if (page.ok) {
        response->result(http::status::ok);
        response->set(http::field::content_type, "text/plain; version=0.0.4");
        response->body() = std::move(page.text);
      } else {
        log << fmt::format("[serve] GET /metrics answered 503: {}\n", escape_control(page.text)) << std::flush;
        response->result(http::status::service_unavailable);
        response->set(http::field::content_type, "text/plain");
        response->body() = page.text + "\n";
      }
    } else if (request.method() == http::verb::get && request.target() == "/healthz") {
      auto h = check ? check() : health{};
      response->result(h.ok ? http::status::ok : http::status::service_unavailable);
      response->set(http::field::content_type, "text/plain");
      response->body() = h.text + "\n";
    } else {
      response->result(http::status::not_found);
      response->set(http::field::content_type, "text/plain");
      response->body() = "only GET /metrics and GET /healthz are served here\n";
    }
    response->prepare_payload();
    // The answer has a deadline of its own: a peer that never reads it is closed.
    c->deadline.expires_after(limits.request_deadline);
    c->deadline.async_wait([this, id](boost::system::error_code ec) {
      if (!ec) close(id);
    });
    auto written = [this, id, c, response](beast::error_code, size_t) { close(id); };
    if (c->tls) http::async_write(*c->tls, *response, std::move(written));
    else http::async_write(c->socket, *response, std::move(written));
  }
};

metrics_endpoint::metrics_endpoint(const std::string& bind, uint16_t port, std::function<health()> render,
                                   std::ostream& log, std::function<health()> check, metrics_limits limits,
                                   bearer_check authorize, std::shared_ptr<net::tls_context> tls)
    : impl_(std::make_unique<impl>(std::move(render), std::move(check), log, limits, std::move(authorize),
                                   std::move(tls))) {
  boost::system::error_code ec;
  auto address = asio::ip::make_address(bind, ec);
  if (ec) throw input_error(fmt::format("--metrics-bind {}: not an IP address", bind));
  tcp::endpoint ep{address, port};
  impl_->acceptor.open(ep.protocol(), ec);
  if (!ec) impl_->acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) impl_->acceptor.bind(ep, ec);
  if (!ec) impl_->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) throw input_error(fmt::format("{}:{}: cannot listen for metrics: {}", bind, port, ec.message()));
  impl_->accept();
  impl_->thread = std::thread([i = impl_.get()] { i->io.run(); });
}

metrics_endpoint::~metrics_endpoint() {
  asio::post(impl_->io, [i = impl_.get()] {
    boost::system::error_code ec;
    i->acceptor.close(ec);
    i->accept_retry.cancel();
    while (!i->open.empty()) i->close(i->open.begin()->first);
    i->io.stop();
  });
  impl_->thread.join();
}

uint16_t metrics_endpoint::port() const { return impl_->acceptor.local_endpoint().port(); }

} // namespace aryl::live
