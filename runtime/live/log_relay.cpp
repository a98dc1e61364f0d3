#include "runtime/live/log_relay.hpp"

#include <fmt/format.h>

namespace aryl::live {

void log_relay::launched(uint32_t job, uint32_t rank, const std::string& server) { launched_on_[{job, rank}] = server; }

std::string log_relay::server_of(uint64_t job, uint32_t rank) const {
  if (job > UINT32_MAX) return {};
  auto it = launched_on_.find({static_cast<uint32_t>(job), rank});
  return it == launched_on_.end() ? std::string() : it->second;
}

wire::log_fetch log_relay::ask(const wire::logs_request& q, const std::string& server, client c) {
  auto id = next_request_++;
  waits_[id] = {std::move(c), static_cast<uint32_t>(q.job_id), q.rank, q.offset, server};
  // Under the string limit, with room for the rest of the frame.
  return wire::log_fetch{id, q.job_id, q.rank, q.offset, static_cast<uint32_t>(wire::max_string_bytes - 1024)};
}

void log_relay::answered(const wire::log_chunk& c, const std::function<bool(uint32_t)>& active) {
  auto it = waits_.find(c.request);
  if (it == waits_.end()) return;
  auto w = std::move(it->second);
  waits_.erase(it);
  if (c.error) return w.to.refuse(*c.error);
  w.to.answer(wire::logs_reply{w.job, w.rank, w.server, w.offset, c.text, c.size, active(w.job)});
}

void log_relay::agent_gone(const std::string& server) {
  for (auto it = waits_.begin(); it != waits_.end();) {
    if (it->second.server != server) {
      ++it;
      continue;
    }
    auto w = std::move(it->second);
    it = waits_.erase(it);
    w.to.refuse(fmt::format("job {} rank {}: the agent of {} went away before answering", w.job, w.rank, server));
  }
}

} // namespace aryl::live
