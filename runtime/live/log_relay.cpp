#include "runtime/live/log_relay.hpp"

#include <fmt/format.h>

namespace aryl::live {

void log_relay::launched(uint32_t job, uint32_t rank, const std::string& server) { launched_on_[{job, rank}] = server; }

std::string log_relay::server_of(uint64_t job, uint32_t rank) const {
  if (job > UINT32_MAX) return {};
  auto it = launched_on_.find({static_cast<uint32_t>(job), rank});
  return it == launched_on_.end() ? std::string() : it->second;
}

std::optional<wire::log_fetch> log_relay::ask(const wire::logs_request& q, const std::string& server, client c) {
  auto id = next_request_++;
  // Under the string limit, with room for the rest of the frame.
  wire::log_fetch f{id, q.job_id, q.rank, q.offset, static_cast<uint32_t>(wire::max_string_bytes - 1024)};
  auto& w = waits_[id] = {std::move(c), f, server};
  auto& sent = in_flight_[server];
  if (sent < max_fetches_per_agent) {
    ++sent;
    w.sent = true;
    return f;
  }
  // Requests of clients gone meanwhile would only wait for nothing.
  auto& queue = waiting_[server];
  std::erase_if(queue, [&](uint64_t r) {
    auto& p = waits_.at(r).to.present;
    if (!p || p()) return false;
    waits_.erase(r);
    return true;
  });
  queue.push_back(id);
  return std::nullopt;
}

std::optional<wire::log_fetch> log_relay::answered(const std::string& server, const wire::log_chunk& c,
                                                   const std::function<bool(uint32_t)>& active) {
  auto it = waits_.find(c.request);
  if (it == waits_.end() || it->second.server != server || !it->second.sent) return std::nullopt;
  auto w = std::move(it->second);
  waits_.erase(it);
  // The next waiting fetch of a client still there takes its place at the agent.
  std::optional<wire::log_fetch> next;
  auto& queue = waiting_[w.server];
  while (!next && !queue.empty()) {
    auto id = queue.front();
    queue.pop_front();
    auto& later = waits_.at(id);
    if (!later.to.present || later.to.present()) {
      later.sent = true;
      next = later.fetch;
    } else {
      waits_.erase(id);
    }
  }
  if (!next) --in_flight_[w.server];
  const auto job = static_cast<uint32_t>(w.fetch.job_id);
  if (c.error) w.to.refuse(*c.error);
  else w.to.answer(wire::logs_reply{job, w.fetch.rank, w.server, w.fetch.offset, c.text, c.size, active(job)});
  return next;
}

void log_relay::agent_gone(const std::string& server) {
  in_flight_.erase(server);
  waiting_.erase(server);
  for (auto it = waits_.begin(); it != waits_.end();) {
    if (it->second.server != server) {
      ++it;
      continue;
    }
    auto w = std::move(it->second);
    it = waits_.erase(it);
    w.to.refuse(fmt::format("job {} rank {}: the agent of {} went away before answering", w.fetch.job_id,
                            w.fetch.rank, server));
  }
}

} // namespace aryl::live
