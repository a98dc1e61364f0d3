#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange

#include "runtime/live/gateway_impl.hpp"

#include <fmt/format.h>

#include "runtime/live/client_replies.hpp"
#include "runtime/wire/codec.hpp"

// Status and show requests: answered from the scheduler's status, asked without blocking the
// network thread (worker_router::status_async), one ask in flight for every waiting client.
namespace aryl::live {

void gateway::impl::ask_status(status_wait w) {
  // An ask in flight may have been answered before this request came: the next one is for it.
  if (!status_waiting.empty()) {
    status_next.push_back(std::move(w));
    return;
  }
  status_waiting.push_back(std::move(w));
  ask_scheduler_status();
}

void gateway::impl::ask_scheduler_status() {
  auto seq = ++status_asks;
  std::function<void(std::function<void(cluster_status)>)> ask;
  std::optional<cluster_status> now;
  with_router([&](worker_router& r) {
    if (r.status_async) ask = r.status_async;
    else if (r.status) now = r.status();
  });
  if (!ask) return status_ready(seq, std::move(now));
  // The answer comes on a thread of the scheduler's; handlers never outlive the io_context.
  ask([weak = weak_from_this(), seq](cluster_status s) {
    if (auto g = weak.lock())
      asio::post(g->io, [g = g.get(), seq, s = std::move(s)]() mutable { g->status_ready(seq, std::move(s)); });
  });
}

void gateway::impl::status_ready(uint64_t seq, std::optional<cluster_status> s) {
  if (seq != status_asks || status_waiting.empty()) return;  // a late answer to an ask given up
  auto waiting = std::move(status_waiting);
  status_waiting = std::move(status_next);
  status_next.clear();
  if (!status_waiting.empty()) ask_scheduler_status();
  using frame_ptr = std::shared_ptr<const std::vector<uint8_t>>;
  auto encode = [](const wire::message& m) { return std::make_shared<const std::vector<uint8_t>>(wire::encode_frame(m)); };
  // Status replies are encoded once for every connection they answer (one without the ended
  // jobs, one with them), and only if asked for.
  std::set<std::string> away;
  if (s) {
    std::lock_guard lock(m);
    for (auto& [name, slot] : slots)
      if (!slot.agent.lock()) away.insert(name);
  }
  frame_ptr plain, all;
  auto status_frame = [&](bool with_ended) {
    auto& frame = with_ended ? all : plain;
    if (!frame) {
      std::vector<wire::job_info> ended;
      if (with_ended && opts.book) ended = opts.book->ended_jobs(wire::max_list);
      frame = encode(status_reply_of(*s, away, ended, opts.book.get()));
    }
    return frame;
  };
  // Held here, not by a read in progress: a waiting client reads nothing meanwhile.
  using kind = status_wait::kind;
  for (auto& w : waiting) {
    if (!s) {
      answer_request(*w.who, nullptr, "no run in progress");
    } else if (w.what == kind::show_node) {
      answer_show_node(*w.who, *s, away, w.server);
    } else if (w.what != kind::show) {
      answer_request(*w.who, status_frame(w.what == kind::status_all), {});
    } else if (auto reply = show_reply_of(*s, opts.book.get(), w.job)) {
      answer_request(*w.who, encode(*reply), {});
    } else {
      answer_request(*w.who, nullptr, fmt::format("job {}: no such job", w.job));
    }
  }
}

void gateway::impl::answer_show_node(session& who, const cluster_status& s, const std::set<std::string>& away,
                                     const std::string& server) {
  node_presence there;
  {
    std::lock_guard lock(m);
    if (auto it = slots.find(server); it != slots.end()) {
      auto& slot = it->second;
      for (auto& launched : slot.generations) there.ranks[launched.first.first].push_back(launched.first.second);
      if (auto agent = slot.agent.lock()) there.heard_s = heard_ago_s(*agent);
      if (!slot.address.empty()) there.address = slot.address;
      if (!slot.agent_version.empty()) there.version = slot.agent_version;
    }
  }
  if (auto reply = show_node_reply_of(s, away, server, there))
    return answer_request(who, std::make_shared<const std::vector<uint8_t>>(wire::encode_frame(*reply)), {});
  std::string known;
  for (auto& v : s.servers) known += (known.empty() ? "" : ", ") + v.name;
  answer_request(who, nullptr, fmt::format("node '{}': no such node (this cluster has: {})", escape_control(server), known));
}

} // namespace aryl::live
