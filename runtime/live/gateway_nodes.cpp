#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange

#include "runtime/live/gateway_impl.hpp"

#include <fmt/format.h>

#include "runtime/wire/codec.hpp"

// The inventory while a run goes on (docs/live.md, "Static inventory, or a live one"): machines joining a
// running cluster, and operators' cordon, drain and resume orders, passed to the scheduler
// through the driver's router.
namespace aryl::live {

std::optional<std::string> gateway::impl::join_late(const std::shared_ptr<session>& who, const wire::register_& r) {
  {
    std::lock_guard lock(m);
    // A known name registers as ever; while --join collects its inventory, or before a run
    // has started, on_register decides.
    if (joining || slots.count(r.server) || !router.join) return "";
  }
  if (r.pool != wire::pool_kind::training)
    return fmt::format("server '{}': an inference machine joins only before the run starts (aryl serve --join); "
                       "a running cluster takes training machines",
                       r.server);
  {
    std::lock_guard lock(m);
    server_slot slot;
    slot.id = -1;  // until the scheduler has it: nothing is routed to it before
    slot.gpu_type = r.gpu_type;
    slot.gpus = static_cast<int>(r.gpus);
    slot.pool = r.pool;
    if (!slots.emplace(r.server, std::move(slot)).second) return "";
  }
  // As a submit (gateway_orders.cpp): the agent's connection waits, reading nothing more, and
  // the network thread goes on.
  auto ask = ++order_asks;
  bool asked = false;
  with_router([&](worker_router& router) {
    if (!router.join) {
      slots.erase(r.server);
      return;
    }
    asked = true;
    orders_waiting[ask] = who;
    router.join(node_join{r.server, r.gpu_type, static_cast<int>(r.gpus)}, link_to(r.server),
                [weak = weak_from_this(), ask, r](join_answer a) {
                  auto g = weak.lock();
                  if (!g) return;
                  asio::post(g->io, [g = g.get(), ask, r, a] {
                    {
                      std::lock_guard lock(g->m);
                      if (auto it = g->slots.find(r.server); it != g->slots.end()) {
                        if (a.id >= 0) it->second.id = a.id;
                        else g->slots.erase(it);
                      }
                    }
                    auto asker = g->take_waiting(ask);
                    if (!asker) return;  // the run ended first: refused then
                    if (a.id < 0) return answer_request(*asker, nullptr, a.error);
                    g->log(fmt::format("server {} ({} x {}) joined the running cluster", r.server, r.gpus, r.gpu_type));
                    join_answered(*asker, r);
                  });
                });
  });
  if (!asked) return "no run in progress";
  return std::nullopt;
}

void gateway::impl::node_for(const std::shared_ptr<session>& who, const wire::node_request& q) {
  auto refuse = [&](const std::string& why) { answer_request(*who, nullptr, why); };
  const std::string reason = q.reason.value_or("");
  // Both are shown in status and logs, one line each.
  if (find_control(q.server) != std::string::npos)
    return refuse("node_request: server '" + q.server + "' holds " + describe_control(q.server));
  if (find_control(reason) != std::string::npos)
    return refuse("node_request: reason for " + q.server + " holds " + describe_control(reason));
  if (q.action != "cordon" && q.action != "drain" && q.action != "resume")
    return refuse(fmt::format("node_request: action '{}' for {}: not cordon, drain or resume",
                              escape_control(q.action), q.server));
  if (q.now.value_or(false) && q.action != "drain")
    return refuse(fmt::format("node_request: now is for drain only ({} {})", q.action, q.server));
  // As a submit (gateway_orders.cpp): the connection waits, held in orders_waiting, and reads
  // nothing more; the network thread goes on.
  auto ask = ++order_asks;
  bool asked = false;
  with_router([&](worker_router& r) {
    if (!r.node) return;
    asked = true;
    orders_waiting[ask] = who;
    r.node(aryl::node_order{q.server, q.action, reason, q.now.value_or(false)},
           [weak = weak_from_this(), ask, server = q.server, peer = peer_of(*who)](node_answer a) {
             auto g = weak.lock();
             if (!g) return;
             asio::post(g->io, [g = g.get(), ask, server, peer, a] {
               auto asker = g->take_waiting(ask);
               if (!asker) return;  // the run ended first: refused then
               if (!a.ok) return answer_request(*asker, nullptr, a.text);
               g->log(fmt::format("{}: {}", peer, a.text));
               answer_request(*asker,
                              std::make_shared<const std::vector<uint8_t>>(
                                  wire::encode_frame(wire::node_reply{server, a.text})),
                              {});
             });
           });
  });
  if (!asked) refuse("no run in progress");
}

} // namespace aryl::live
