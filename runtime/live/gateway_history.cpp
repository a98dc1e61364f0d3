#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange

#include "runtime/live/gateway_impl.hpp"

#include <fmt/format.h>

#include "runtime/wire/codec.hpp"

// `aryl history` against a running serve: a page of the state file's history table, read
// through the journal's connection (serve holds the file exclusively: no other connection can
// read it) on a thread of the gateway's own, so that the query never holds the network thread.
// The asking connection reads nothing more until it is answered, as for a status.
namespace aryl::live {

void gateway::impl::history_for(const std::shared_ptr<session>& who, wire::history_request q) {
  if (!opts.history)
    return answer_request(*who, nullptr,
                          "history needs serve --state: this serve keeps no state file (`aryl history --state FILE` "
                          "reads one a serve kept)");
  auto ask = ++history_asks;
  history_waiting[ask] = who;
  if (!history_pool) history_pool.emplace(1);
  asio::post(*history_pool, [weak = weak_from_this(), ask, q = std::move(q), read = opts.history] {
    std::shared_ptr<const std::vector<uint8_t>> frame;
    std::string why;
    try {
      frame = std::make_shared<const std::vector<uint8_t>>(wire::encode_frame(read(q)));
    } catch (const std::exception& e) {
      why = e.what();
    }
    // close() joins this thread before the gateway can go: the lock never holds the last reference.
    auto g = weak.lock();
    if (!g) return;
    asio::post(g->io, [g = g.get(), ask, frame = std::move(frame), why = std::move(why)] {
      auto it = g->history_waiting.find(ask);
      if (it == g->history_waiting.end()) return;
      auto asker = std::move(it->second);
      g->history_waiting.erase(it);
      if (!why.empty()) g->log(fmt::format("{}: history refused: {}", peer_of(*asker), why));
      answer_request(*asker, frame, why);
    });
  });
}

} // namespace aryl::live
