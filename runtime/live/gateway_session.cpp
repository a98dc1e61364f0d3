#include "runtime/live/gateway_session.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <cmath>

namespace aryl::live {
namespace {

/// What a plain-text peer of a TLS listener is told, in plain text.
constexpr const char* plain_refusal =
    "this scheduler speaks TLS only: connect with TLS and verify its certificate (aryl: --tls-ca FILE or ARYL_TLS_CA)";

} // namespace

void session::start() {
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

void session::send_frame(std::shared_ptr<const std::vector<uint8_t>> frame) {
  if (closing_) return;
  queued_bytes_ += frame->size();
  queue_.push_back(std::move(frame));
  if (queue_.size() == 1) write_next();
}

void session::answered(const std::shared_ptr<const std::vector<uint8_t>>& frame, const std::string& refusal) {
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

void session::joined(const wire::register_& r) {
  awaiting_answer_ = false;
  if (closing_) return;
  take_register(r);
  drain();
}

void session::farewell(const std::string& reason) {
  farewell_ = true;
  send(wire::shutdown{reason});
  quiet_close();
}

void session::quiet_close() {
  if (closing_) return;
  closing_ = true;
  if (queue_.empty()) shut();
}

void session::close(const std::string& reason, const std::string& code) {
  // A silenced connection is closed only when judged (judge) or when its descriptor is
  // wanted (close_now): a deadline that came due as it was silenced does not close it.
  if (closing_ || silent_ || held_silent(reason)) return;
  close_now(reason, code);
}

void session::refuse_hello(const std::string& reason) {
  if (closing_ || silent_) return;
  if (!held_silent(reason)) return close_now(reason);
  told_ = tell_now(reason);
}

void session::close_now(const std::string& reason, const std::string& code) {
  if (closing_) return;
  log_end(fmt::format("{}: closing: {}", peer_, reason));
  if (handshaking_) {  // no frame can go before the TLS handshake ends
    closing_ = true;
    return shut();
  }
  wire::error e{escape_control(reason)};
  if (!code.empty()) e.code = code;
  send(std::move(e));
  closing_ = true;
  if (queue_.empty()) shut();
}

bool session::peer_closed() {
  if (closing_ || !stream_->socket().is_open()) return true;
  char byte;
  auto n = ::recv(stream_->socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

double session::silent_for_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - last_heard_.load()).count();
}

void session::log_end(const std::string& line) {
  if (stage_ == stage::hello) g_->log_counted("ended before hello", line);
  else g_->log(line);
}

void session::read() {
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

bool session::paused() const {
  return silent_ || awaiting_answer_ || logs_asked_ >= log_relay::max_requests_per_client ||
         (stage_ == stage::client && queued_bytes_ > g_->opts.client_queue_bytes);
}

void session::drain() {
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

void session::write_next() {
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

void session::heard() {
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

void session::hello_deadline(double limit_s) {
  hello_deadline_.expires_at(connected_ + seconds(limit_s));
  std::weak_ptr<session> weak = shared_from_this();
  hello_deadline_.async_wait([weak, limit_s](boost::system::error_code ec) {
    if (ec) return;  // hello taken, closed, or set again
    if (auto self = weak.lock(); self && self->stage_ == stage::hello)
      self->close(fmt::format("no hello within {:g} s of connecting", std::round(limit_s * 10) / 10));
  });
}

void session::woke() {
  idle_ = false;
  if (stage_ != stage::hello || closing_ || silent_) return;
  g_->spoke(id_);
  if (!closing_) hello_deadline(g_->opts.hello_timeout_s);
}

bool session::held_silent(const std::string& reason) {
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

void session::judge_later() {
  hello_deadline_.expires_after(seconds(g_->opts.hello_timeout_s * idle_spread()));
  hello_deadline_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (!ec) self->judge();  // else closed
  });
}

void session::judge() {
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

bool session::tell_now(const std::string& reason) {
  if (!queue_.empty()) return false;
  auto frame = wire::encode_frame(wire::error{escape_control(reason)});
  auto n = ::send(stream_->socket().native_handle(), frame.data(), frame.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  return n == static_cast<ssize_t>(frame.size());
}

bool session::peer_connected() {
  tcp_info info{};
  socklen_t size = sizeof info;
  return ::getsockopt(stream_->socket().native_handle(), IPPROTO_TCP, TCP_INFO, &info, &size) == 0 &&
         info.tcpi_state == TCP_ESTABLISHED;
}

std::chrono::steady_clock::duration session::seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

void session::shut() {
  boost::system::error_code ec;
  stream_->socket().shutdown(tcp::socket::shutdown_both, ec);
  stream_->socket().close(ec);
  detach();
  farewell_sent();
}

void session::farewell_sent() {
  if (!std::exchange(farewell_, false)) return;
  std::lock_guard lock(g_->m);
  --g_->farewells;
  g_->farewell_cv.notify_all();
}

void session::lost(const std::string& why) {
  if (!stream_->socket().is_open()) return;
  if (!closing_) log_end(fmt::format("{}: disconnected: {}", peer_, why));
  closing_ = true;
  boost::system::error_code ec;
  stream_->socket().close(ec);
  detach();
  farewell_sent();
}

void session::detach() {
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
  timer->expires_at(last_heard_.load() + seconds(g_->opts.loss_grace_s));
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

double heard_ago_s(const session& s) { return s.silent_for_s(); }

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

} // namespace aryl::live
