#pragma once
/// `aryl logs` through the gateway: where each worker was last launched, and the clients
/// waiting for an agent's log_chunk. Used from the gateway's network thread only.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>

#include "runtime/wire/messages.hpp"

namespace aryl::live {

class log_relay {
 public:
  /// How to reach the client that asked (it may be gone by the answer: then nothing happens).
  struct client {
    std::function<void(const wire::message&)> answer;
    std::function<void(const std::string&)> refuse;  ///< an error frame, then close
  };

  /// Worker (job, rank) was launched on `server`: its log is there from now on.
  void launched(uint32_t job, uint32_t rank, const std::string& server);
  /// The server holding the log of (job, rank); empty if it was never launched.
  std::string server_of(uint64_t job, uint32_t rank) const;
  /// Takes a client's request for the log on `server`; returns the log_fetch to send there.
  wire::log_fetch ask(const wire::logs_request& q, const std::string& server, client c);
  /// An agent's answer, passed on to its client; `active(job)`: the job has not ended.
  void answered(const wire::log_chunk& c, const std::function<bool(uint32_t)>& active);
  /// The agent of `server` went away: its pending requests are refused.
  void agent_gone(const std::string& server);

 private:
  struct wait {
    client to;
    uint32_t job = 0, rank = 0;
    uint64_t offset = 0;
    std::string server;
  };
  std::map<std::pair<uint32_t, uint32_t>, std::string> launched_on_;
  std::map<uint64_t, wait> waits_;
  uint64_t next_request_ = 1;
};

} // namespace aryl::live
