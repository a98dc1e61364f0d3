// The agent's connection to the scheduler: connect, hello, register, frames in and out, and
// the reports it sends or keeps for the next registration.
#include <cmath>
#include <sstream>
#include <string>

#include "runtime/node/agent_loop.hpp"
#include "runtime/node/worker_log.hpp"
#include "runtime/wire/plain_text.hpp"

namespace aryl::live::agent_detail {

void agent::report_exit(uint64_t job_id, uint32_t rank, const std::vector<uint32_t>& gpus, int32_t code,
                        uint32_t signal, std::optional<uint64_t> generation, const std::string& reason) {
  if (!registered()) exited_away_.push_back({job_id, rank, gpus, std::nullopt, code, signal, generation});
  wire::exit_ e{job_id, rank, code, signal, generation};
  // One argv's failure in words: bounded, and still UTF-8 where the cut falls in a character.
  if (!reason.empty()) e.reason = utf8_or_marks(std::string_view(reason).substr(0, 1024));
  emit(std::move(e));
}

void agent::emit(wire::message m) {
  if (registered()) send(conn_, m);
  else backlog_.push_back(std::move(m));
}

void agent::start_connect(time_point now) {
  auto c = std::make_shared<connection>(io_, o_);
  conn_ = c;
  c->handshake_deadline = now + seconds(o_.handshake_timeout_s);
  c->resolver.async_resolve(
      o_.host, std::to_string(o_.port),
      [this, c](const boost::system::error_code& ec, const tcp::resolver::results_type& results) {
        if (c != conn_) return;
        if (ec) return drop("cannot resolve " + o_.host + ": " + ec.message());
        if (!o_.tls)  // the hello carries the token
          if (auto why = net::plain_text_refusal(o_.host, o_.port, addresses_of(results), o_.insecure); !why.empty())
            return drop("not dialled: " + why);
        asio::async_connect(c->stream->socket(), results,
                            [this, c](const boost::system::error_code& ec2, const tcp::endpoint& ep) {
                              if (c != conn_) return;
                              if (ec2)
                                return drop("cannot connect to " + o_.host + ":" +
                                            std::to_string(o_.port) + ": " + ec2.message());
                              on_connected(c, ep);
                            });
      });
}

void agent::on_connected(const std::shared_ptr<connection>& c, const tcp::endpoint& ep) {
  boost::system::error_code ignored;
  c->stream->socket().set_option(tcp::no_delay(true), ignored);
  std::ostringstream where;
  where << ep;
  say("connected to " + where.str());
  c->stream->async_handshake([this, c, at = where.str()](const std::string& error) {  // plain: at once
    if (c != conn_) return;
    if (!error.empty()) return drop("TLS handshake with " + o_.host + " (" + at + ") failed: " + error);
    c->state = connection::phase::hello_sent;
    send(c, wire::hello{wire::peer_role::agent, o_.token, o_.name});
    start_read(c);
  });
}

void agent::on_hello_ok(const std::shared_ptr<connection>& c) {
  wire::register_ r{o_.name, o_.gpu_type, o_.gpus, o_.pool, {}};
  if (!o_.address.empty()) r.address = o_.address;
  r.instance = instance_;
  r.version = ARYL_VERSION;
  for (auto& [id, w] : workers_)
    if (!w->status)
      r.workers.push_back({w->job_id, w->rank, w->gpus, static_cast<uint32_t>(w->proc.pid()), std::nullopt,
                           std::nullopt, w->generation});
  // Their exits are in the backlog sent below.
  for (auto& w : exited_away_) r.workers.push_back(w);
  exited_away_.clear();
  send(c, r);
  c->state = connection::phase::registered;
  const auto now = clock_type::now();
  c->next_heartbeat = now + seconds(o_.heartbeat_s);
  say("registered with " + std::to_string(r.workers.size()) + " running worker(s), " +
      std::to_string(backlog_.size()) + " buffered report(s)");
  for (auto& m : backlog_) send(c, m);
  backlog_.clear();
  for (auto& [id, w] : workers_)
    if (w->pending) {
      send(c, *std::exchange(w->pending, std::nullopt));
      w->last_sent = now;
    }
}

void agent::close_connection() {
  // Exact, where the tick would see it only at its next run.
  if (registered() && conn_->accepted) unregistered_since_ = clock_type::now();
  auto c = std::exchange(conn_, nullptr);
  if (!c) return;
  c->resolver.cancel();
  c->stream->close();
}

void agent::drop(const std::string& reason) {
  close_connection();
  reschedule();
  if (shutting_down_) return say("disconnected: " + reason);
  const double d = std::min(o_.reconnect_max_s,
                            o_.reconnect_min_s * std::pow(2.0, std::min(failures_, 60u)));
  ++failures_;
  const double wait = std::uniform_real_distribution<double>(d / 2, d)(rng_);
  next_connect_ = clock_type::now() + seconds(wait);
  reschedule();
  say("disconnected: " + reason + "; reconnecting in " + format_double(std::round(wait * 1000) / 1000) +
      " s");
}

void agent::send(std::shared_ptr<connection> c, const wire::message& m) {
  if (c->out.size() >= max_queued_frames) return drop("the scheduler is not reading");
  c->out.push_back(wire::encode_frame(m));
  c->out_bytes += c->out.back().size();
  if (!c->writing) start_write(c);
}

void agent::start_write(std::shared_ptr<connection> c) {
  c->writing = true;
  c->stream->async_write(asio::buffer(c->out.front()),
                    [this, c](const boost::system::error_code& ec, size_t) {
                      if (c != conn_) return;
                      if (ec) return drop("write failed: " + ec.message());
                      c->out_bytes -= c->out.front().size();
                      c->out.pop_front();
                      if (!c->out.empty()) return start_write(c);
                      c->writing = false;
                      if (finishing_) reschedule();  // the bye is written
                    });
}

void agent::start_read(const std::shared_ptr<connection>& c) {
  c->stream->async_read_some(
      asio::buffer(c->read_buf), [this, c](const boost::system::error_code& ec, size_t n) {
        if (c != conn_) return;
        if (ec == asio::error::eof) return drop("connection closed by the scheduler");
        if (ec) return drop("read failed: " + ec.message());
        c->decoder.feed(c->read_buf.data(), n);
        last_heard_ = clock_type::now();
        fenced_ = false;
        for (;;) {
          auto step = c->decoder.next();
          if (std::holds_alternative<wire::need_more>(step)) break;
          if (auto* e = std::get_if<wire::decode_error>(&step))
            return drop("malformed frame from the scheduler: " + e->reason);
          handle(c, std::get<wire::message>(step));
          if (c != conn_) return;
        }
        reschedule();
        start_read(c);
      });
}

void agent::handle(const std::shared_ptr<connection>& c, const wire::message& m) {
  if (c->state == connection::phase::hello_sent) {
    if (std::holds_alternative<wire::hello_ok>(m)) return on_hello_ok(c);
    if (auto* e = std::get_if<wire::error>(&m)) return drop("scheduler refused hello: " + e->reason);
    return drop("expected hello_ok, got '" + std::string(wire::type_of(m)) + "'");
  }
  // Taken as registered once the scheduler says anything else: a refused register (an
  // error) keeps backing off instead of retrying at once.
  if (!std::holds_alternative<wire::error>(m)) {
    failures_ = 0;
    c->accepted = true;
  }
  std::visit(overloaded{
                 [&](const wire::launch& l) { on_launch(l); },
                 [&](const wire::stop& s) { on_stop(s); },
                 [&](const wire::log_fetch& f) { send(c, answer_log_fetch(o_.work_dir, o_.name, f, c->out_bytes)); },
                 [&](const wire::error& e) {
                   if (e.code == "name_held") displaced(clock_type::now());
                   drop("scheduler error: " + e.reason);
                 },
                 [&](const wire::bye&) { drop("scheduler said bye"); },
                 [&](const wire::shutdown& s) {
                   // For good: reconnecting would only find no scheduler, or a new run
                   // that does not know these workers.
                   say("the scheduler shut down for good (" + s.reason + "): stopping");
                   if (!shutting_down_) begin_shutdown(clock_type::now());
                 },
                 [&](const wire::heartbeat&) {},  // heard: the read itself counts (fencing)
                 [&](const auto&) {
                   say("ignored unexpected '" + std::string(wire::type_of(m)) +
                       "' from the scheduler");
                 },
             },
             m);
}

} // namespace aryl::live::agent_detail
