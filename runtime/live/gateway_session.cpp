#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange

#include "runtime/live/gateway_impl.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <cmath>
#include <deque>

#include "runtime/live/client_replies.hpp"
#include "runtime/live/gateway_access.hpp"
#include "runtime/live/registration_checks.hpp"
#include "runtime/live/token.hpp"
#include "runtime/wire/codec.hpp"

namespace aryl::live {
namespace {

std::string pool_name(wire::pool_kind p) { return p == wire::pool_kind::training ? "training" : "inference"; }

/// What a plain-text peer of a TLS listener is told, in plain text.
constexpr const char* plain_refusal =
    "this scheduler speaks TLS only: connect with TLS and verify its certificate (aryl: --tls-ca FILE or ARYL_TLS_CA)";

} // namespace

/// One peer's connection. Lives on the network thread only.
class session : public std::enable_shared_from_this<session> {
 public:
  session(std::unique_ptr<net::byte_stream> s, gateway::impl* g, uint64_t id, std::string address)
      : stream_(std::move(s)), g_(g), decoder_(g_->opts.max_frame_bytes), silence_(g->io), hello_deadline_(g->io),
        id_(id), address_(std::move(address)) {
    boost::system::error_code ec;
    auto ep = stream_->socket().remote_endpoint(ec);
    endpoint_ = ec ? address_ : fmt::format("{}:{}", address_, ep.port());
    peer_ = fmt::format("connection {} ({})", id, endpoint_);
  }

  void start() {
    // Fixed from the connection's start: bytes trickling in do not extend it. While idle,
    // spread (see idle_spread).
    hello_deadline(g_->opts.hello_timeout_s * idle_spread());
    heard();
    // TLS: nothing is read or written before the handshake, which the hello deadline bounds
    // as well.
    handshaking_ = g_->tls != nullptr;
    // Idle until its first bytes: no buffer, no handshake (gateway::impl::idle).
    stream_->socket().async_wait(tcp::socket::wait_read, [self = shared_from_this()](const boost::system::error_code& ec) {
      if (self->closing_ || self->silent_ || !self->stream_->socket().is_open()) return;
      if (ec) return self->lost(ec.message());
      if (self->handshaking_) self->woke();  // the handshake buffers
      self->stream_->async_handshake([self](const std::string& error) {
        self->handshaking_ = false;
        if (!error.empty()) return self->lost("TLS handshake failed: " + error);
        if (!self->closing_) self->read();
      });
    });
  }

  void send(const wire::message& m) { send_frame(std::make_shared<const std::vector<uint8_t>>(wire::encode_frame(m))); }

  /// One encoded frame, shared by every connection it goes to (a status answers many).
  void send_frame(std::shared_ptr<const std::vector<uint8_t>> frame) {
    if (closing_) return;
    queued_bytes_ += frame->size();
    queue_.push_back(std::move(frame));
    if (queue_.size() == 1) write_next();
  }

  /// The answer to what this connection waits for (see answer_request).
  void answered(const std::shared_ptr<const std::vector<uint8_t>>& frame, const std::string& refusal) {
    awaiting_answer_ = false;
    if (pending_audit_) {
      auto e = std::move(*pending_audit_);
      pending_audit_.reset();
      e.result = refusal.empty() ? "ok" : "refused: " + refusal;
      g_->audit(e);
    }
    if (!frame && !refusal.empty()) return close(refusal);
    if (frame) send_frame(frame);
    drain();
  }

  /// The machine joined the running cluster (join_late): it registers, and the frames it
  /// sent meanwhile are read.
  void joined(const wire::register_& r) {
    awaiting_answer_ = false;
    if (closing_) return;
    take_register(r);
    drain();
  }

  bool is_closing() const { return closing_; }

  /// The scheduler shuts down for good: `shutdown`, then the connection closes once written.
  void farewell(const std::string& reason) {
    farewell_ = true;
    send(wire::shutdown{reason});
    quiet_close();
  }

  /// The job a submit being answered made: the audit names it.
  void submitted(uint64_t job) {
    if (pending_audit_) pending_audit_->target = fmt::format("job-{} ({})", job, pending_audit_->target);
  }

  /// A joined machine's id, once the inventory is fixed (gateway::add_server).
  void set_server_id(int id) { server_id_ = id; }

  /// Closes once what is queued is written, without a word: the peer's orderly end.
  void quiet_close() {
    if (closing_) return;
    closing_ = true;
    if (queue_.empty()) shut();
  }

  /// Sends `reason` as an error frame, then closes once it is written; before hello, past its
  /// address's budget of such closes, the connection is silenced instead (held_silent).
  void close(const std::string& reason) {
    // A silenced connection is closed only when judged (judge) or when its descriptor is
    // wanted (close_now): a deadline that came due as it was silenced does not close it.
    if (closing_ || silent_ || held_silent(reason)) return;
    close_now(reason);
  }

  /// close for a hello it refuses: silenced, the peer is still told why at once. A peer that
  /// sent a whole hello is a client or an agent misconfigured (a wrong token), which reads the
  /// error and closes by itself; held silent, it would wait for its judgement to learn why.
  void refuse_hello(const std::string& reason) {
    if (closing_ || silent_) return;
    if (!held_silent(reason)) return close_now(reason);
    told_ = tell_now(reason);
  }

  /// close, whatever the budget.
  void close_now(const std::string& reason) {
    if (closing_) return;
    log_end(fmt::format("{}: closing: {}", peer_, reason));
    if (handshaking_) {  // no frame can go before the TLS handshake ends
      closing_ = true;
      return shut();
    }
    send(wire::error{escape_control(reason)});
    closing_ = true;
    if (queue_.empty()) shut();
  }

  const std::string& peer() const { return peer_; }
  const std::string& address() const { return address_; }

  /// The peer closed or reset the connection, and its read has not seen it yet (an agent
  /// restarted at once redials before its old connection's end is read).
  bool peer_closed() {
    if (closing_ || !stream_->socket().is_open()) return true;
    char byte;
    auto n = ::recv(stream_->socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
  }

  /// Seconds since a frame (or the connection's start) was last heard from the peer.
  double silent_for_s() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - last_heard_).count();
  }
  gateway::impl* gateway_state() const { return g_; }

 private:
  enum class stage { hello, registering, agent, client };

  /// Unauthenticated peers come and go by the thousand in a flood: their ends are counted
  /// into one line a second, as refusals are.
  void log_end(const std::string& line) {
    if (stage_ == stage::hello) g_->log_counted("ended before hello", line);
    else g_->log(line);
  }

  void read() {
    reading_ = true;
    if (buf_.empty()) buf_.resize(16384);  // not while idle
    auto self = shared_from_this();
    stream_->async_read_some(asio::buffer(buf_), [self](const boost::system::error_code& ec, size_t n) {
      self->reading_ = false;
      if (self->silent_) return;  // its read was cancelled, or what came is not wanted
      if (ec) {
        self->lost(ec == asio::error::eof ? "the peer closed the connection" : ec.message());
        return;
      }
      bool first = self->idle_;
      self->idle_ = false;
      self->heard();
      self->decoder_.feed(self->buf_.data(), n);
      self->drain();
      if (first) self->woke();
    });
  }

  /// A client waits for the answer to a status, show, submit or cancel, or for
  /// log_relay::max_requests_per_client logs answers, or has more replies unread than
  /// client_queue_bytes: its next requests stay unread (in the decoder, then in the socket)
  /// until that clears, so one client holds at most one ask, a few log fetches and a bounded
  /// queue.
  bool paused() const {
    return silent_ || awaiting_answer_ || logs_asked_ >= log_relay::max_requests_per_client ||
           (stage_ == stage::client && queued_bytes_ > g_->opts.client_queue_bytes);
  }

  /// Handles the complete frames buffered, then reads more unless paused or closing.
  void drain() {
    for (;;) {
      if (closing_ || paused()) return;
      auto step = decoder_.next();
      if (std::holds_alternative<wire::need_more>(step)) break;
      if (auto* e = std::get_if<wire::decode_error>(&step)) return close("bad frame: " + e->reason);
      handle(std::get<wire::message>(step));
    }
    if (stage_ == stage::hello) {
      // Judged at its 4 length bytes: a hello that cannot fit is not waited for, byte by byte.
      if (auto n = decoder_.next_length(); n && *n > g_->opts.pre_hello_bytes)
        return close(fmt::format("a first frame of {} bytes, more than the {} allowed before hello", *n,
                                 g_->opts.pre_hello_bytes));
      if (decoder_.buffered() > g_->opts.pre_hello_bytes)
        return close(fmt::format("more than {} bytes before hello", g_->opts.pre_hello_bytes));
    }
    if (!closing_ && !reading_) read();
  }

  void write_next() {
    auto self = shared_from_this();
    stream_->async_write(asio::buffer(*queue_.front()), [self](const boost::system::error_code& ec, size_t) {
      if (ec) {
        self->queue_.clear();
        self->lost("write failed: " + ec.message());
        return;
      }
      bool was_paused = self->paused();
      self->queued_bytes_ -= self->queue_.front()->size();
      self->queue_.pop_front();
      if (!self->queue_.empty()) self->write_next();
      else if (self->closing_) self->shut();
      if (was_paused && !self->paused()) self->drain();
    });
  }

  /// Restarts the silence timer: a peer that sends nothing for agent_silence_s (a registered
  /// agent: loss_grace_s if shorter) is dropped.
  void heard() {
    last_heard_ = std::chrono::steady_clock::now();
    double limit = g_->opts.agent_silence_s;
    if (stage_ == stage::agent) limit = std::min(limit, g_->opts.loss_grace_s);
    if (idle_) limit *= idle_spread();
    silence_.expires_after(seconds(limit));
    std::weak_ptr<session> weak = shared_from_this();
    silence_.async_wait([weak, limit](boost::system::error_code ec) {
      if (ec) return;  // restarted or cancelled
      auto self = weak.lock();
      // Silenced meanwhile: a timer already due when cancelled still calls its handler.
      if (!self || self->silent_) return;
      auto why = fmt::format("nothing heard for {:g} s", limit);
      if (!self->held_silent(why)) self->lost(why);
    });
  }

  /// Closes the connection `limit_s` after it was made unless its hello was taken by then.
  void hello_deadline(double limit_s) {
    hello_deadline_.expires_at(connected_ + seconds(limit_s));
    std::weak_ptr<session> weak = shared_from_this();
    hello_deadline_.async_wait([weak, limit_s](boost::system::error_code ec) {
      if (ec) return;  // hello taken, closed, or set again
      if (auto self = weak.lock(); self && self->stage_ == stage::hello)
        self->close(fmt::format("no hello within {:g} s of connecting", std::round(limit_s * 10) / 10));
    });
  }

  /// An idle connection's deadlines (hello, silence) are its limits times 1 to 1.5, spread
  /// by its id: connections that came together (an attacker's, dialled at once) do not end
  /// together, so what they dial again does not come in one burst ahead of a client.
  double idle_spread() const { return 1.0 + static_cast<double>((id_ * 2654435761u) % 1000) / 2000.0; }

  /// The first bytes came (plain: the first read; TLS: the handshake begins). Not past hello
  /// yet: counted against the caps before hello from now on, and its hello deadline is the
  /// limit from its connection, no longer spread.
  void woke() {
    idle_ = false;
    if (stage_ != stage::hello || closing_ || silent_) return;
    g_->spoke(id_);
    if (!closing_) hello_deadline(g_->opts.hello_timeout_s);
  }

  /// Before hello, a plain connection past its address's budget of closes before hello
  /// (live.pre_hello_closes_per_s) is silenced rather than closed, and true is returned: each
  /// close would bring the peer's next dial, and a peer dialling again whatever is closed
  /// would make serve cycle connections while a client's waits in the listen backlog. TLS
  /// connections are always closed (a handshake in progress cannot be left half done).
  bool held_silent(const std::string& reason) {
    if (stage_ != stage::hello || silent_ || g_->tls || g_->may_close_before_hello(address_)) return false;
    silent_ = true;
    withheld_ = reason;
    g_->log_counted("silenced before hello",
                    fmt::format("{}: silenced, not closed: {} ({} is past its {:g} closes before hello a second)", peer_,
                                reason, address_, g_->opts.pre_hello_closes_per_s));
    // It costs a descriptor only: nothing more is read (the kernel's buffer bounds what the
    // peer can still send), and what it buffered is freed.
    boost::system::error_code ec;
    stream_->socket().cancel(ec);
    silence_.cancel();
    std::vector<uint8_t>().swap(buf_);
    decoder_ = wire::frame_decoder(g_->opts.max_frame_bytes);
    g_->silenced(id_, address_, weak_from_this());
    judge_later();
    return true;
  }

  /// A silenced connection is judged again 1 to 1.5 hello timeouts later (spread as idle
  /// deadlines are, so silenced connections are not judged in one burst). The timer holds
  /// the session, as a pending read holds one that is not silenced.
  void judge_later() {
    hello_deadline_.expires_after(seconds(g_->opts.hello_timeout_s * idle_spread()));
    hello_deadline_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (!ec) self->judge();  // else closed
    });
  }

  /// A peer that has gone is let go without the budget (its close brings no dial); one still
  /// there is closed if its address's budget allows, else held silent again.
  void judge() {
    if (closing_) return;
    if (!peer_connected()) {
      closing_ = true;
      shut();
      return log_end(fmt::format("{}: let go: its peer had gone while it was silenced ({})", peer_, withheld_));
    }
    if (g_->may_close_before_hello(address_)) {
      if (!told_) return close_now(withheld_);
      closing_ = true;  // its error went when it was silenced
      shut();
      return log_end(fmt::format("{}: closing: {}", peer_, withheld_));
    }
    judge_later();
  }

  /// Writes `reason`'s error frame on a silenced plain connection without waiting: a small
  /// frame on a connection that has had nothing written fits the socket's empty buffer, so a
  /// write that does not complete at once is given up (false) rather than queued. Nothing is
  /// queued for a connection before hello, so this frame goes first.
  bool tell_now(const std::string& reason) {
    if (!queue_.empty()) return false;
    auto frame = wire::encode_frame(wire::error{escape_control(reason)});
    auto n = ::send(stream_->socket().native_handle(), frame.data(), frame.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    return n == static_cast<ssize_t>(frame.size());
  }

  /// Whether the kernel still holds the connection established: a peer's close or reset
  /// shows there without reading from the socket.
  bool peer_connected() {
    tcp_info info{};
    socklen_t size = sizeof info;
    return ::getsockopt(stream_->socket().native_handle(), IPPROTO_TCP, TCP_INFO, &info, &size) == 0 &&
           info.tcpi_state == TCP_ESTABLISHED;
  }

  static std::chrono::steady_clock::duration seconds(double s) {
    return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
  }

  void shut() {
    boost::system::error_code ec;
    stream_->socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_->socket().close(ec);
    detach();
    farewell_sent();
  }

  void farewell_sent() {
    if (!std::exchange(farewell_, false)) return;
    std::lock_guard lock(g_->m);
    --g_->farewells;
    g_->farewell_cv.notify_all();
  }

  /// The connection ended without a close of ours.
  void lost(const std::string& why) {
    if (!stream_->socket().is_open()) return;
    if (!closing_) log_end(fmt::format("{}: disconnected: {}", peer_, why));
    closing_ = true;
    boost::system::error_code ec;
    stream_->socket().close(ec);
    detach();
    farewell_sent();
  }

  /// An agent's server no longer has a connection: unless the agent registers again within
  /// loss_grace_s of when it was last heard, the server is reported lost (the scheduler's
  /// lost-server path, as heartbeats missed in simulated time).
  void detach() {
    silence_.cancel();
    hello_deadline_.cancel();
    if (!ended_) {
      ended_ = true;
      g_->ended(id_);
    }
    if (stage_ != stage::agent) return;
    g_->logs.agent_gone(name_);  // its log requests will not be answered now
    uint64_t registrations = 0;
    {
      std::lock_guard lock(g_->m);
      auto it = g_->slots.find(name_);
      if (it == g_->slots.end() || it->second.agent.lock().get() != this) return;
      it->second.agent.reset();
      registrations = it->second.registrations;
    }
    auto timer = std::make_shared<asio::steady_timer>(g_->io);
    timer->expires_at(last_heard_ + seconds(g_->opts.loss_grace_s));
    timer->async_wait([g = g_, timer, server = name_, registrations](boost::system::error_code ec) {
      if (ec) return;
      bool away = false;
      g->with_router([&](worker_router& r) {
        auto& slot = g->slots.at(server);
        away = !slot.agent.lock() && slot.registrations == registrations;
        if (away && r.lost) r.lost(slot.id);
      });
      if (away)
        g->log(fmt::format("server {}: its agent was not heard for {:g} s: reported lost", server,
                           g->opts.loss_grace_s));
    });
  }

  void handle(const wire::message& msg) {
    switch (stage_) {
      case stage::hello: return on_hello(msg);
      case stage::registering: return on_register(msg);
      case stage::agent: return on_agent(msg);
      case stage::client: return on_client(msg);
    }
  }

  void on_hello(const wire::message& msg) {
    auto* h = std::get_if<wire::hello>(&msg);
    if (!h) return refuse_hello(fmt::format("expected hello first, got '{}'", wire::type_of(msg)));
    const auto certificate = stream_->peer_common_name();
    auto v = authenticate(g_->opts.identities.get(), g_->opts.token, *h, certificate);
    if (!v.who) {
      if (!v.named.empty()) audit(v.named, "", "hello", "", "refused: " + v.refusal);
      return refuse_hello(v.refusal);
    }
    // Names are shown in logs, tables and error frames, one line each.
    if (find_control(h->name) != std::string::npos)
      return refuse_hello("hello: name '" + h->name + "' holds " + describe_control(h->name));
    who_ = *v.who;
    credential_hash_ = v.credential_hash;
    if (g_->opts.identities) id_version_ = g_->opts.identities->version();
    name_ = h->name;
    peer_ += " " + (h->role == wire::peer_role::agent ? std::string("agent ") : std::string("client ")) + h->name;
    if (!who_.cluster_token) peer_ += fmt::format(" as {} ({})", who_.name, role_name(who_.who));
    else if (!certificate.empty()) peer_ += " (certificate " + certificate + ")";
    stage_ = h->role == wire::peer_role::agent ? stage::registering : stage::client;
    hello_deadline_.cancel();
    g_->hello_taken(id_);
    wire::hello_ok ok;
    if (!who_.cluster_token) {
      ok.identity = who_.name;
      ok.role = std::string(role_name(who_.who));
    }
    send(ok);
  }

  void on_register(const wire::message& msg) {
    auto* r = std::get_if<wire::register_>(&msg);
    if (!r) return close(fmt::format("expected register after hello, got '{}'", wire::type_of(msg)));
    if (find_control(r->server) != std::string::npos)
      return close("register: server '" + r->server + "' holds " + describe_control(r->server));
    if (auto why = registration_problem(*r); !why.empty()) return close("register: " + why);
    if (auto why = register_refusal(g_->opts.identities.get(), who_, *r); !why.empty()) {
      audit("register", r->server, "refused: " + why);
      g_->log(fmt::format("{}: refused: {}", peer_, why));
      return close("register: " + why);
    }
    auto now = g_->join_late(shared_from_this(), *r);
    if (!now) {  // a machine joining: registers once the scheduler has taken it
      awaiting_answer_ = true;
      return;
    }
    if (!now->empty()) return close(*now);
    take_register(*r);
  }

  void take_register(const wire::register_& reg) {
    auto* r = &reg;
    std::shared_ptr<session> replaced;
    std::vector<wire::message> backlog;
    bool returning = false;
    std::set<uint32_t> stop_jobs;
    {
      std::lock_guard lock(g_->m);
      auto it = g_->slots.find(r->server);
      if (it == g_->slots.end() && g_->joining) {
        // An agent the cluster cannot take is told why and left out: the others still join.
        if (auto why = g_->opts.join_problem ? g_->opts.join_problem(r->server, r->gpu_type) : std::string{};
            !why.empty()) {
          g_->join_refused[r->server] = why;
          g_->registered_cv.notify_all();
          return close("may not join: " + why);
        }
        // A live inventory: the machine joins with what it has; its id comes at the start.
        gateway::impl::server_slot joined;
        joined.id = -1;
        joined.gpu_type = r->gpu_type;
        joined.gpus = static_cast<int>(r->gpus);
        joined.pool = r->pool;
        it = g_->slots.emplace(r->server, std::move(joined)).first;
        g_->join_order.push_back(r->server);
      }
      if (it == g_->slots.end()) {
        std::string known;
        for (auto& [name, s] : g_->slots) known += (known.empty() ? "" : ", ") + name;
        return close(fmt::format("unknown server '{}' (this cluster has: {}{})", r->server, known,
                                 g_->opts.join ? "; a training machine may join once the run has started" : ""));
      }
      auto& slot = it->second;
      if (r->gpu_type != slot.gpu_type || static_cast<int>(r->gpus) != slot.gpus || r->pool != slot.pool)
        return close(fmt::format("server '{}' is configured as {} x {} ({}), the agent says {} x {} ({})", r->server,
                                 slot.gpus, slot.gpu_type, pool_name(slot.pool), r->gpus, r->gpu_type,
                                 pool_name(r->pool)));
      replaced = slot.agent.lock();
      if (replaced && replaced.get() != this && replaced->silent_for_s() < g_->opts.name_held_s &&
          !replaced->peer_closed()) {
        audit("register", r->server, "refused: held by a connected agent");
        return close(fmt::format("server '{}' is held by a connected agent ({}, heard {:.1f} s ago): a second agent "
                                 "may not register under its name",
                                 r->server, replaced->peer(), replaced->silent_for_s()));
      }
      slot.agent = shared_from_this();
      returning = slot.registered;
      slot.registered = true;
      ++slot.registrations;
      server_id_ = slot.id;
      backlog.swap(slot.backlog);
      launches_seen_ = slot.launches;
      if (!returning && g_->opts.hold_found_workers) slot.listed = r->workers;
      else if (!returning && g_->opts.stop_found_workers)
        for (auto& w : r->workers) {
          if (w.exit_code) continue;  // nothing to stop: its exit follows
          slot.found.emplace(static_cast<uint32_t>(w.job_id), w.rank);
          stop_jobs.insert(static_cast<uint32_t>(w.job_id));
        }
    }
    // What runs there once the kept launches are sent; reconciled at the first heartbeat, when
    // the exits the agent kept while away have been passed on (it sends them before).
    if (returning) {
      reconcile_ = std::vector<std::pair<uint32_t, uint32_t>>{};
      for (auto& w : r->workers)
        if (!w.exit_code) reconcile_->emplace_back(static_cast<uint32_t>(w.job_id), w.rank);
      for (auto& m : backlog)
        if (auto* l = std::get_if<wire::launch>(&m)) reconcile_->emplace_back(static_cast<uint32_t>(l->job_id), l->rank);
    }
    name_ = r->server;
    stage_ = stage::agent;
    heard();  // from now on silent for the detection grace at most
    g_->registered_cv.notify_all();
    if (replaced && replaced.get() != this) replaced->close("replaced by a new connection of the same agent");
    g_->log(fmt::format("{}: registered server {} ({} x {}, {}), running {} workers; {} kept messages sent", peer_,
                        r->server, r->gpus, r->gpu_type, pool_name(r->pool), r->workers.size(), backlog.size()));
    audit("register", r->server, "ok");
    for (auto& m : backlog) send(m);
    if (stop_jobs.empty()) return;
    std::string jobs;
    for (auto j : stop_jobs) jobs += (jobs.empty() ? "" : ", ") + std::to_string(j);
    g_->log(fmt::format("{}: its {} workers (jobs {}) are from before this serve started: stopped", peer_,
                        r->workers.size(), jobs));
    for (auto j : stop_jobs) send(wire::stop{j, g_->opts.stop_grace_s});
  }

  void on_agent(const wire::message& msg) {
    if (lapsed(wire::type_of(msg))) return;
    if (auto* h = std::get_if<wire::heartbeat>(&msg)) {
      if (reconcile_) reconciled();
      // Answered, so that the agent can tell a scheduler it no longer hears (fencing).
      send(wire::heartbeat{h->seq});
      return;
    }
    if (auto* p = std::get_if<wire::progress>(&msg)) {
      g_->with_router([&](worker_router& r) {
        if (r.progress) r.progress(server_id_, static_cast<uint32_t>(p->job_id), p->rank, p->work_done);
      });
      return;
    }
    if (auto* e = std::get_if<wire::exit_>(&msg)) {
      if (reconcile_)  // ended since it registered: no longer running there
        std::erase(*reconcile_, std::pair<uint32_t, uint32_t>{static_cast<uint32_t>(e->job_id), e->rank});
      g_->log(fmt::format("{}: job {} rank {} exited (code {}, signal {})", peer_, e->job_id, e->rank, e->code,
                          e->signal));
      // After the line above: a serve waiting for this exit logs only after it. One locked
      // section, so an exit is either passed on or kept for the router, never both.
      bool routed = false, kept = false;
      {
        std::lock_guard lock(g_->m);
        auto& slot = g_->slots.at(name_);
        std::pair<uint32_t, uint32_t> worker{static_cast<uint32_t>(e->job_id), e->rank};
        if (slot.found.erase(worker) && slot.found.empty()) g_->registered_cv.notify_all();
        // Still listed, as exited: a job whose workers all ended while the scheduler was away
        // is adopted and its exits passed on (plan_adoption), not run again.
        bool was_listed = false;
        for (auto& w : slot.listed)
          if (w.job_id == e->job_id && w.rank == e->rank) {
            w.exit_code = e->code;
            w.exit_signal = e->signal;
            was_listed = true;
          }
        if (g_->router.exit) {
          g_->router.exit(server_id_, worker.first, worker.second, e->code, static_cast<int>(e->signal));
          routed = true;
        } else if (was_listed || slot.held.count(worker)) {
          g_->early_exits.emplace_back(server_id_, worker.first, worker.second, e->code, static_cast<int>(e->signal));
          kept = true;
        }
      }
      if (!routed && !kept) g_->log(fmt::format("{}: no run in progress: exit of job {} dropped", peer_, e->job_id));
      return;
    }
    if (auto* c = std::get_if<wire::log_chunk>(&msg)) return relay_log(*c);
    if (std::holds_alternative<wire::bye>(msg)) return close("the agent said bye");
    close(fmt::format("unexpected message '{}' from an agent", wire::type_of(msg)));
  }

  /// A returning agent: the server actor settles its workers, then the scheduler may use the
  /// server again (a lost one comes back; one not yet noticed lost carries on).
  void reconciled() {
    std::vector<uint32_t> jobs, ranks;
    for (auto& [j, r] : *reconcile_) {
      jobs.push_back(j);
      ranks.push_back(r);
    }
    reconcile_.reset();
    bool routed = false;
    g_->with_router([&](worker_router& r) {
      if (!r.reconcile || !r.back) return;
      r.reconcile(server_id_, jobs, ranks, launches_seen_);
      r.back(server_id_);
      routed = true;
    });
    if (routed) g_->log(fmt::format("{}: back; reconciled with the {} workers it still runs", peer_, jobs.size()));
  }

  void on_client(const wire::message& msg) {
    if (lapsed(wire::type_of(msg))) return;
    // Status, show, submit, cancel and node orders are answered when the scheduler's answer
    // is in (answered); meanwhile nothing more is read.
    if (auto* q = std::get_if<wire::status_request>(&msg)) {
      if (!allowed(action::status, "")) return;
      awaiting_answer_ = true;
      using kind = gateway::impl::status_wait::kind;
      return g_->ask_status({shared_from_this(), q->all.value_or(false) ? kind::status_all : kind::status, 0});
    }
    if (auto* q = std::get_if<wire::show_request>(&msg)) {
      if (!allowed_on_job(action::show, q->job_id)) return;
      awaiting_answer_ = true;
      return g_->ask_status({shared_from_this(), gateway::impl::status_wait::kind::show, q->job_id});
    }
    if (auto* q = std::get_if<wire::logs_request>(&msg)) {
      if (!allowed_on_job(action::logs, q->job_id)) return;
      return ask_log(*q);
    }
    if (auto* q = std::get_if<wire::node_request>(&msg)) {
      if (!allowed(action::node_order, q->server)) return;
      pending_audit_ = entry(std::string(action_name(action::node_order)) + " " + q->action, q->server);
      awaiting_answer_ = true;
      return g_->node_for(shared_from_this(), *q);
    }
    if (auto* d = std::get_if<wire::demand>(&msg)) {
      if (!allowed(action::demand, "")) return;
      bool taken = false;
      g_->with_router([&](worker_router& r) {
        if (!r.demand) return;
        r.demand(static_cast<int>(std::min<uint32_t>(d->servers_needed, 1'000'000)));
        taken = true;
      });
      audit("demand", fmt::format("{} servers", d->servers_needed), taken ? "ok" : "refused: no run in progress");
      if (!taken) return close("no run in progress");
      g_->log(fmt::format("{}: inference demand {} servers", peer_, d->servers_needed));
      return;
    }
    if (auto* j = std::get_if<wire::submit>(&msg)) {
      if (find_control(j->name) != std::string::npos) {
        auto why = "submit: job name '" + j->name + "' holds " + describe_control(j->name);
        g_->log(fmt::format("{}: submit refused: {}", peer_, why));
        return close(why);
      }
      if (!allowed(action::submit, j->name)) return;
      auto choice = choose_tenant(g_->opts.tenants, who_, j->tenant, j->priority.value_or(0));
      if (!choice.refusal.empty()) {
        g_->log(fmt::format("{}: refused: {}", peer_, choice.refusal));
        audit("submit", j->name, "refused: " + choice.refusal);
        return send(wire::error{escape_control(choice.refusal)});
      }
      auto spec = spec_of(*j, g_->opts.default_estimate_s);
      spec.tenant = choice.tenant.value_or("");
      if (!who_.cluster_token) spec.user = who_.name;  // the job runs as its submitter
      pending_audit_ = entry("submit", j->name);
      awaiting_answer_ = true;
      return g_->submit_for(shared_from_this(), std::move(spec));
    }
    if (auto* x = std::get_if<wire::cancel>(&msg)) {
      if (!allowed_on_job(action::cancel, x->job_id)) return;
      pending_audit_ = entry("cancel", fmt::format("job-{}", x->job_id));
      awaiting_answer_ = true;
      return g_->cancel_for(shared_from_this(), x->job_id);
    }
    if (auto* t = std::get_if<wire::token_request>(&msg)) {
      if (!allowed(action::tokens, t->name)) return;
      return on_tokens(*t);
    }
    // A client's bye is its normal end: no log line, no error frame.
    if (std::holds_alternative<wire::bye>(msg)) return quiet_close();
    close(fmt::format("a client cannot send '{}'", wire::type_of(msg)));
  }

  /// An admin's `aryl token`: answered at once (the identities file is small and local).
  void on_tokens(const wire::token_request& q) {
    auto* ids = g_->opts.identities.get();
    auto refuse = [&](const std::string& why) {
      audit(fmt::format("token {}", q.action), q.name, "refused: " + why);
      send(wire::error{escape_control(why)});
    };
    if (!ids) return refuse("this scheduler runs in cluster-token mode: start it with --identities FILE to have identities");
    try {
      wire::token_reply reply;
      if (q.action == "create") {
        auto r = role_from(q.role.value_or(""));
        if (!r) return refuse(fmt::format("token create {}: role '{}' is not one of admin|user|agent|reader", q.name,
                                          escape_control(q.role.value_or(""))));
        reply.token = ids->create(identity{q.name, *r, "", q.gpu_type.value_or(""), q.pool.value_or(""), false});
        reply.text = fmt::format("created {} (role {}); its token is shown this once", q.name, role_name(*r));
      } else if (q.action == "revoke") {
        if (!ids->revoke(q.name)) return refuse(fmt::format("token revoke: no identity '{}' to revoke", escape_control(q.name)));
        reply.text = fmt::format("revoked {}: its next request is refused", q.name);
      } else if (q.action == "list") {
        for (auto& id : ids->all())
          reply.text += fmt::format("{} {} {}{}{}{}\n", id.name, role_name(id.who), id.token_hash.empty() ? "cert" : "token",
                                    id.gpu_type.empty() ? "" : " gpu_type=" + id.gpu_type,
                                    id.pool.empty() ? "" : " pool=" + id.pool, id.revoked ? " revoked" : "");
      } else {
        return refuse(fmt::format("token: action '{}' is not create, revoke or list", escape_control(q.action)));
      }
      if (q.action != "list") {
        audit(fmt::format("token {}", q.action), q.name, "ok");
        g_->log(fmt::format("{}: {}", peer_, reply.text));
      }
      send(reply);
    } catch (const std::exception& e) {
      refuse(e.what());
    }
  }

  audit_entry entry(const std::string& act, const std::string& target) const {
    return {who_.name, std::string(role_name(who_.who)), endpoint_, act, target, ""};
  }

  void audit(const std::string& act, const std::string& target, const std::string& result) {
    auto e = entry(act, target);
    e.result = result;
    g_->audit(e);
  }

  /// For a refused hello: the identity its credential named.
  void audit(const std::string& identity_name, const std::string& role_text, const std::string& act,
             const std::string& target, const std::string& result) {
    g_->audit({identity_name, role_text, endpoint_, act, target, result});
  }

  /// Whether the peer may do `a`; if not it is told in one error frame (the connection stays
  /// open for what it may do), and the refusal is logged and audited.
  bool allowed(action a, const std::string& target, const std::string& owner = {}, bool known = true) {
    auto why = refusal(who_, a, owner, known);
    if (why.empty()) return true;
    g_->log(fmt::format("{}: refused: {}", peer_, why));
    audit(std::string(action_name(a)), target, "refused: " + why);
    send(wire::error{escape_control(why)});
    return false;
  }

  bool allowed_on_job(action a, uint64_t job) {
    std::optional<std::string> owner;
    if (g_->opts.book && job <= UINT32_MAX) owner = g_->opts.book->owner(static_cast<uint32_t>(job));
    return allowed(a, fmt::format("job-{}", job), owner.value_or(""), owner.has_value());
  }

  /// Identity mode: a credential revoked or replaced since the last frame ends the
  /// connection now, before `what` is done.
  bool lapsed(std::string_view what) {
    if (who_.cluster_token || !g_->opts.identities) return false;
    auto version = g_->opts.identities->version();
    if (version == id_version_) return false;
    auto why = credential_lapsed(*g_->opts.identities, who_, credential_hash_);
    if (why.empty()) {
      id_version_ = version;
      return false;
    }
    audit(std::string(what), "", "refused: " + why);
    close(why);
    return true;
  }

  /// `aryl logs`: asks the agent of the machine the worker was last launched on.
  void ask_log(const wire::logs_request& q) {
    auto what = fmt::format("job {} rank {}", q.job_id, q.rank);
    auto server = g_->logs.server_of(q.job_id, q.rank);
    if (server.empty()) return close(what + ": no worker of it was launched");
    std::shared_ptr<session> agent;
    {
      std::lock_guard lock(g_->m);
      agent = g_->slots.at(server).agent.lock();
    }
    if (!agent) return close(what + ": its log is on " + server + ", whose agent is not connected");
    // Held by its request, as a status wait holds its asker: a client paused for its answers
    // has no read pending to hold it.
    auto me = shared_from_this();
    ++logs_asked_;
    auto fetch = g_->logs.ask(q, server,
                              {[me](const wire::message& m) { me->log_answered(m); },
                               [me](const std::string& why) { me->close(why); },
                               [me] { return !me->closing_; }});
    if (fetch) agent->send(*fetch);  // else it waits for one of that agent's to be answered
  }

  /// A logs reply for this client: one request fewer in flight, so it is read again.
  void log_answered(const wire::message& m) {
    send(m);
    if (logs_asked_-- < log_relay::max_requests_per_client) return;
    // Not from within the agent's handler that answers: the client's frames are handled on
    // their own turn.
    asio::post(g_->io, [self = shared_from_this()] { self->drain(); });
  }

  /// An agent's answer to a log_fetch, passed on to the client that asked (if still there);
  /// the fetch waiting next for this agent goes out in its place.
  void relay_log(const wire::log_chunk& c) {
    auto next = g_->logs.answered(name_, c, [book = g_->opts.book](uint32_t job) { return !(book && book->has_ended(job)); });
    if (next) send(*next);
  }

  std::unique_ptr<net::byte_stream> stream_;  ///< plain TCP, or TLS over it
  gateway::impl* g_;  ///< outlives every session: sessions live in its io_context's handlers
  wire::frame_decoder decoder_;
  std::vector<uint8_t> buf_;  ///< 16 KiB once its first bytes come
  std::deque<std::shared_ptr<const std::vector<uint8_t>>> queue_;
  size_t queued_bytes_ = 0;
  asio::steady_timer silence_;
  asio::steady_timer hello_deadline_;
  uint64_t id_;          ///< the gateway's number for it: the caps before hello find it by this
  std::string address_;  ///< the peer's IP address, for the caps on connections before hello
  bool reading_ = false;
  bool idle_ = true;  ///< not a byte received yet (gateway::impl::idle)
  /// Held without reading, past its address's budget of closes before hello (held_silent);
  /// withheld_: why it would have been closed, given when it is.
  bool silent_ = false;
  std::string withheld_;
  bool told_ = false;  ///< silenced with its error frame written (refuse_hello)
  std::chrono::steady_clock::time_point connected_ = std::chrono::steady_clock::now();
  bool handshaking_ = false;  ///< TLS handshake in progress (plain: never)
  bool awaiting_answer_ = false;
  size_t logs_asked_ = 0;  ///< logs requests of this client not answered yet
  bool ended_ = false;  ///< counted out of the gateway's connections
  std::string peer_, name_;
  std::string endpoint_;  ///< "address:port", as the audit names the peer
  /// Who it speaks for, from its hello, and the token hash it presented (certificate: empty).
  principal who_;
  std::string credential_hash_;
  uint64_t id_version_ = 0;  ///< the identities' version when who_ was last found valid
  /// A state change asked of the scheduler, audited with its answer.
  std::optional<audit_entry> pending_audit_;
  stage stage_ = stage::hello;
  int server_id_ = -1;
  bool closing_ = false;
  bool farewell_ = false;  ///< told to shut down; counted in gateway::impl::farewells
  std::chrono::steady_clock::time_point last_heard_ = std::chrono::steady_clock::now();
  /// A returning agent's workers, until its first heartbeat (see on_register).
  std::optional<std::vector<std::pair<uint32_t, uint32_t>>> reconcile_;
  uint64_t launches_seen_ = 0;  ///< the server's launches taken when this agent registered
};

std::shared_ptr<session> start_session(tcp::socket s, gateway::impl* g, uint64_t id, std::string address) {
  auto stream = g->tls ? net::tls_server_stream(std::move(s), g->tls, wire::encode_frame(wire::error{plain_refusal}))
                       : net::plain_stream(std::move(s));
  auto who = std::make_shared<session>(std::move(stream), g, id, std::move(address));
  who->start();
  return who;
}

void close_session(session& s, const std::string& reason) { s.close(reason); }

void close_session_now(session& s, const std::string& reason) { s.close_now(reason); }

void send_to(session& s, const wire::message& m) { s.send(m); }

void answer_request(session& s, const std::shared_ptr<const std::vector<uint8_t>>& frame, const std::string& refusal) {
  s.answered(frame, refusal);
}

void join_answered(session& s, const wire::register_& r) { s.joined(r); }

void submitted(session& s, uint64_t job) { s.submitted(job); }

const std::string& peer_of(const session& s) { return s.peer(); }

const std::string& address_of(const session& s) { return s.address(); }

bool bid_farewell(session& s, const std::string& reason) {
  if (s.is_closing()) return false;
  {
    std::lock_guard lock(s.gateway_state()->m);
    ++s.gateway_state()->farewells;
  }
  s.farewell(reason);
  return true;
}

void set_server_id(session& s, int id) { s.set_server_id(id); }

void gateway::impl::audit(const audit_entry& e) {
  if (!opts.audit) return;
  auto line = opts.audit->record(e);
  line.pop_back();  // its newline: the journal keeps lines
  // Posted: a caller may hold the lock with_router takes (posts keep their order).
  asio::post(io, [this, line = std::move(line)]() mutable {
    with_router([&](worker_router& r) {
      if (r.audit) return r.audit(std::move(line));
      audit_backlog.push_back(std::move(line));
      if (audit_backlog.size() > max_audit_backlog) audit_backlog.pop_front();
    });
  });
}

} // namespace aryl::live
