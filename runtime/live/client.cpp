#include "runtime/live/client.hpp"

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange

#include <boost/asio.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <array>

#include "runtime/control_chars.hpp"
#include "runtime/input_error.hpp"
#include "runtime/wire/codec.hpp"

namespace aryl::live {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

/// One blocking connection with a deadline for every read.
class connection {
 public:
  connection(const client_options& o) : o_(o), where_(fmt::format("{}:{}", o.host, o.port)), socket_(io_) {
    boost::system::error_code ec;
    auto address = asio::ip::make_address(o.host, ec);
    if (ec) throw input_error(fmt::format("--host {}: not an IP address", o.host));
    socket_.connect(tcp::endpoint{address, o.port}, ec);
    if (ec) throw input_error(where_ + ": cannot connect: " + ec.message());
  }

  void send(const wire::message& m) {
    boost::system::error_code ec;
    asio::write(socket_, asio::buffer(wire::encode_frame(m)), ec);
    if (ec) throw input_error(where_ + ": cannot send: " + ec.message());
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
  size_t read_some() {
    boost::system::error_code result = asio::error::would_block;
    size_t n = 0;
    socket_.async_read_some(asio::buffer(buf_), [&](boost::system::error_code ec, size_t got) {
      result = ec;
      n = got;
    });
    io_.restart();
    io_.run_for(std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(o_.timeout_s)));
    if (result == asio::error::would_block) throw input_error(fmt::format("{}: no answer within {:g} s", where_, o_.timeout_s));
    if (result == asio::error::eof) throw input_error(where_ + ": the scheduler closed the connection");
    if (result) throw input_error(where_ + ": " + result.message());
    return n;
  }

  const client_options& o_;
  std::string where_;
  asio::io_context io_;
  tcp::socket socket_;
  wire::frame_decoder decoder_;
  std::array<uint8_t, 16384> buf_{};
};

const char* pool_text(wire::pool_kind p) { return p == wire::pool_kind::training ? "training" : "inference"; }

const char* server_state_text(wire::server_state s) {
  switch (s) {
    case wire::server_state::up: return "up";
    case wire::server_state::unreachable: return "unreachable";
    case wire::server_state::lost: return "lost";
  }
  return "?";
}

const char* state_text(wire::job_state s) {
  switch (s) {
    case wire::job_state::queued: return "queued";
    case wire::job_state::running: return "running";
    case wire::job_state::done: return "done";
    case wire::job_state::failed: return "failed";
    case wire::job_state::cancelled: return "cancelled";
  }
  return "?";
}

} // namespace

namespace {

void greet(connection& c, const client_options& o) {
  c.send(wire::hello{wire::peer_role::client, o.token, "aryl-cli"});
  auto ok = c.receive();
  if (!std::holds_alternative<wire::hello_ok>(ok))
    throw input_error(fmt::format("{}:{}: expected hello_ok, got '{}'", o.host, o.port, wire::type_of(ok)));
}

} // namespace

void cancel(const client_options& o, uint64_t job) {
  connection c(o);
  greet(c, o);
  c.send(wire::cancel{job});
  // cancel has no reply; a refusal arrives before the answer to the next request.
  c.send(wire::status_request{});
  c.receive();
  c.send(wire::bye{});
}

std::optional<wire::message> ask(const client_options& o, const wire::message& request, bool expect_reply) {
  connection c(o);
  greet(c, o);
  c.send(request);
  std::optional<wire::message> reply;
  if (expect_reply) reply = c.receive();
  c.send(wire::bye{});
  return reply;
}

void print_status(std::ostream& out, const wire::status_reply& s) {
  out << fmt::format("{:>8}  {:<24} {:<8} {:>7}  {}\n", "JOB", "NAME", "STATE", "WORKERS", "WAITING BECAUSE");
  // Names come from users and agents: escaped, one row each.
  for (auto& j : s.jobs)
    out << fmt::format("{:>8}  {:<24} {:<8} {:>7}  {}\n", j.job_id, escape_control(j.name), state_text(j.state),
                       j.workers, escape_control(j.reason.value_or("")));
  out << fmt::format("\n{:<10} {:<6} {:>4} {:>5}  {:<9} {:<11} {}\n", "SERVER", "GPU", "GPUS", "FREE", "POOL", "STATE",
                     "LOAN");
  for (auto& v : s.servers) {
    std::string loan;
    for (auto& l : s.loans)
      if (l.server == v.name) loan = l.state == wire::loan_state::loaned ? "loaned" : "reclaiming";
    out << fmt::format("{:<10} {:<6} {:>4} {:>5}  {:<9} {:<11} {}\n", escape_control(v.name), escape_control(v.gpu_type),
                       v.gpus, v.free, pool_text(v.pool), v.state ? server_state_text(*v.state) : "", loan);
  }
}

std::string status_json(const wire::status_reply& s) {
  nlohmann::ordered_json j;
  j["jobs"] = nlohmann::ordered_json::array();
  for (auto& x : s.jobs) {
    nlohmann::ordered_json e = {
        {"job_id", x.job_id}, {"name", x.name}, {"state", state_text(x.state)}, {"workers", x.workers}};
    if (x.reason) e["reason"] = *x.reason;
    j["jobs"].push_back(std::move(e));
  }
  j["servers"] = nlohmann::ordered_json::array();
  for (auto& x : s.servers) {
    nlohmann::ordered_json e = {{"name", x.name}, {"gpu_type", x.gpu_type}, {"gpus", x.gpus}, {"free", x.free},
                                {"pool", pool_text(x.pool)}};
    if (x.state) e["state"] = server_state_text(*x.state);
    j["servers"].push_back(std::move(e));
  }
  j["loans"] = nlohmann::ordered_json::array();
  for (auto& x : s.loans)
    j["loans"].push_back({{"server", x.server}, {"state", x.state == wire::loan_state::loaned ? "loaned" : "reclaiming"}});
  return j.dump(2);
}

} // namespace aryl::live
