#pragma once
/// One peer's connection to the gateway (docs/protocol.md, "Connections"), for the gateway's
/// files: gateway_session.cpp keeps the connection (reads, writes, deadlines, the limits
/// before hello, closes), gateway_requests.cpp answers what the peer says (hello, register,
/// an agent's reports, a client's requests). Included by those only.
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange

#include "runtime/live/gateway_impl.hpp"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/live/access.hpp"
#include "runtime/live/audit_log.hpp"
#include "runtime/wire/codec.hpp"

namespace aryl::live {

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

  void start();

  void send(const wire::message& m) { send_frame(std::make_shared<const std::vector<uint8_t>>(wire::encode_frame(m))); }

  /// One encoded frame, shared by every connection it goes to (a status answers many).
  void send_frame(std::shared_ptr<const std::vector<uint8_t>> frame);

  /// The answer to what this connection waits for (see answer_request).
  void answered(const std::shared_ptr<const std::vector<uint8_t>>& frame, const std::string& refusal);

  /// The machine joined the running cluster (join_late): it registers, and the frames it
  /// sent meanwhile are read.
  void joined(const wire::register_& r);

  bool is_closing() const { return closing_; }

  /// The scheduler shuts down for good: `shutdown`, then the connection closes once written.
  void farewell(const std::string& reason);

  /// The job a submit being answered made: the audit names it.
  void submitted(uint64_t job);

  /// A joined machine's id, once the inventory is fixed (gateway::add_server).
  void set_server_id(int id) { server_id_ = id; }

  /// Closes once what is queued is written, without a word: the peer's orderly end.
  void quiet_close();

  /// Sends `reason` as an error frame, then closes once it is written; before hello, past its
  /// address's budget of such closes, the connection is silenced instead (held_silent).
  /// `code` goes in the error's code field, for a peer that acts on the kind of refusal.
  void close(const std::string& reason, const std::string& code = {});

  /// close for a hello it refuses: silenced, the peer is still told why at once. A peer that
  /// sent a whole hello is a client or an agent misconfigured (a wrong token), which reads the
  /// error and closes by itself; held silent, it would wait for its judgement to learn why.
  void refuse_hello(const std::string& reason);

  /// close, whatever the budget.
  void close_now(const std::string& reason, const std::string& code = {});

  const std::string& peer() const { return peer_; }
  const std::string& address() const { return address_; }

  /// The peer closed or reset the connection, and its read has not seen it yet (an agent
  /// restarted at once redials before its old connection's end is read).
  bool peer_closed();

  /// Seconds since a frame (or the connection's start) was last heard from the peer.
  double silent_for_s() const;
  gateway::impl* gateway_state() const { return g_; }

 private:
  enum class stage { hello, registering, agent, client };

  /// Unauthenticated peers come and go by the thousand in a flood: their ends are counted
  /// into one line a second, as refusals are.
  void log_end(const std::string& line);

  void read();

  /// A client waits for the answer to a status, show, submit or cancel, or for
  /// log_relay::max_requests_per_client logs answers, or has more replies unread than
  /// client_queue_bytes: its next requests stay unread (in the decoder, then in the socket)
  /// until that clears, so one client holds at most one ask, a few log fetches and a bounded
  /// queue.
  bool paused() const;

  /// Handles the complete frames buffered, then reads more unless paused or closing.
  void drain();

  void write_next();

  /// Restarts the silence timer: a peer that sends nothing for agent_silence_s (a registered
  /// agent: loss_grace_s if shorter) is dropped.
  void heard();

  /// Closes the connection `limit_s` after it was made unless its hello was taken by then.
  void hello_deadline(double limit_s);

  /// An idle connection's deadlines (hello, silence) are its limits times 1 to 1.5, spread
  /// by its id: connections that came together (an attacker's, dialled at once) do not end
  /// together, so what they dial again does not come in one burst ahead of a client.
  double idle_spread() const { return 1.0 + static_cast<double>((id_ * 2654435761u) % 1000) / 2000.0; }

  /// The first bytes came (plain: the first read; TLS: the handshake begins). Not past hello
  /// yet: counted against the caps before hello from now on, and its hello deadline is the
  /// limit from its connection, no longer spread.
  void woke();

  /// Before hello, a plain connection past its address's budget of closes before hello
  /// (live.pre_hello_closes_per_s) is silenced rather than closed, and true is returned: each
  /// close would bring the peer's next dial, and a peer dialling again whatever is closed
  /// would make serve cycle connections while a client's waits in the listen backlog. TLS
  /// connections are always closed (a handshake in progress cannot be left half done).
  bool held_silent(const std::string& reason);

  /// A silenced connection is judged again 1 to 1.5 hello timeouts later (spread as idle
  /// deadlines are, so silenced connections are not judged in one burst). The timer holds
  /// the session, as a pending read holds one that is not silenced.
  void judge_later();

  /// A peer that has gone is let go without the budget (its close brings no dial); one still
  /// there is closed if its address's budget allows, else held silent again.
  void judge();

  /// Writes `reason`'s error frame on a silenced plain connection without waiting: a small
  /// frame on a connection that has had nothing written fits the socket's empty buffer, so a
  /// write that does not complete at once is given up (false) rather than queued. Nothing is
  /// queued for a connection before hello, so this frame goes first.
  bool tell_now(const std::string& reason);

  /// Whether the kernel still holds the connection established: a peer's close or reset
  /// shows there without reading from the socket.
  bool peer_connected();

  static std::chrono::steady_clock::duration seconds(double s);

  void shut();

  void farewell_sent();

  /// The connection ended without a close of ours.
  void lost(const std::string& why);

  /// An agent's server no longer has a connection: unless the agent registers again within
  /// loss_grace_s of when it was last heard, the server is reported lost (the scheduler's
  /// lost-server path, as heartbeats missed in simulated time).
  void detach();

  void handle(const wire::message& msg);

  void on_hello(const wire::message& msg);

  void on_register(const wire::message& msg);

  void take_register(const wire::register_& reg);

  void on_agent(const wire::message& msg);

  /// A returning agent: the server actor settles its workers, then the scheduler may use the
  /// server again (a lost one comes back; one not yet noticed lost carries on).
  void reconciled();
  /// Whether an agent's report of (job, rank) comes from a worker of another generation than
  /// the latest launched there (`last`: its exit, which ends the rank's record when current).
  bool stale(uint64_t job, uint32_t rank, const std::optional<uint64_t>& generation, bool last);

  void on_client(const wire::message& msg);

  /// An admin's `aryl token`: answered at once (the identities file is small and local).
  void on_tokens(const wire::token_request& q);

  audit_entry entry(const std::string& act, const std::string& target) const;

  void audit(const std::string& act, const std::string& target, const std::string& result);

  /// For a refused hello: the identity its credential named.
  void audit(const std::string& identity_name, const std::string& role_text, const std::string& act,
             const std::string& target, const std::string& result);

  /// Whether the peer may do `a`; if not it is told in one error frame (the connection stays
  /// open for what it may do), and the refusal is logged and audited.
  bool allowed(action a, const std::string& target, const std::string& owner = {}, bool known = true);

  bool allowed_on_job(action a, uint64_t job);
  /// The index of task `task` of array `job` (the job itself without a task); nothing, and the
  /// connection closed saying so, for a task the array does not have.
  std::optional<uint64_t> task_index(uint64_t job, std::optional<uint32_t> task);
  void on_job_request(const wire::job_request& q);

  /// Identity mode: a credential revoked or replaced since the last frame ends the
  /// connection now, before `what` is done.
  bool lapsed(std::string_view what);

  /// `aryl logs`: asks the agent of the machine the worker was last launched on.
  void ask_log(const wire::logs_request& q);

  /// A logs reply for this client: one request fewer in flight, so it is read again.
  void log_answered(const wire::message& m);

  /// An agent's answer to a log_fetch, passed on to the client that asked (if still there);
  /// the fetch waiting next for this agent goes out in its place.
  void relay_log(const wire::log_chunk& c);

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
  /// Atomic: /metrics reads it from its own thread (agent_heartbeat_age_seconds).
  std::atomic<std::chrono::steady_clock::time_point> last_heard_{std::chrono::steady_clock::now()};
  /// A returning agent's workers, until its first heartbeat (see on_register).
  std::optional<std::vector<std::pair<uint32_t, uint32_t>>> reconcile_;
  uint64_t launches_seen_ = 0;  ///< the server's launches taken when this agent registered
  std::string instance_;        ///< the agent process's register.instance ("" if it sent none)
};


} // namespace aryl::live
