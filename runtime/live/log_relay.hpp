#pragma once
/// `aryl logs` through the gateway: where each worker was last launched, and the clients
/// waiting for an agent's log_chunk. Used from the gateway's network thread only.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "runtime/wire/messages.hpp"

namespace aryl::live {

class log_relay {
 public:
  /// Logs requests of one client connection in flight: past them the gateway reads nothing
  /// more from it until one is answered, so a client that pipelines requests without reading
  /// the replies holds no more than this.
  static constexpr size_t max_requests_per_client = 4;
  /// log_fetches in flight at one agent: more wait here, in order, and each goes once one of
  /// that agent's is answered, so an agent holds at most this many answers (each under the
  /// protocol's string limit) however many clients ask.
  static constexpr size_t max_fetches_per_agent = 16;

  /// How to reach the client that asked (it may be gone by the answer: then nothing happens).
  struct client {
    std::function<void(const wire::message&)> answer;
    std::function<void(const std::string&)> refuse;  ///< an error frame, then close
    std::function<bool()> present;  ///< false once its connection is closed; null: always true
  };

  /// Worker (job, rank) was launched on `server`: its log is there from now on.
  void launched(uint32_t job, uint32_t rank, const std::string& server);
  /// The server holding the log of (job, rank); empty if it was never launched.
  std::string server_of(uint64_t job, uint32_t rank) const;
  /// Takes a client's request for the log on `server`; returns the log_fetch to send there now,
  /// or nothing when max_fetches_per_agent of that server's are in flight (it is sent later, as
  /// answered returns it).
  std::optional<wire::log_fetch> ask(const wire::logs_request& q, const std::string& server, client c);
  /// The answer of `server`'s agent, passed on to its client; `active(job)`: the job has not
  /// ended. Returns the next fetch waiting for that agent, to send it there. An answer to a
  /// request not sent to `server` is ignored.
  std::optional<wire::log_fetch> answered(const std::string& server, const wire::log_chunk& c,
                                          const std::function<bool(uint32_t)>& active);
  /// The agent of `server` went away: its pending requests, sent or waiting, are refused.
  void agent_gone(const std::string& server);

 private:
  struct wait {
    client to;
    wire::log_fetch fetch;
    std::string server;
    bool sent = false;  ///< to the agent; else waiting in waiting_
  };
  std::map<std::pair<uint32_t, uint32_t>, std::string> launched_on_;
  std::map<uint64_t, wait> waits_;  ///< sent or waiting, by request id
  std::map<std::string, size_t> in_flight_;
  std::map<std::string, std::deque<uint64_t>> waiting_;  ///< request ids, oldest first
  uint64_t next_request_ = 1;
};

} // namespace aryl::live
