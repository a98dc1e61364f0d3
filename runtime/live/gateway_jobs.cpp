#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange

#include "runtime/live/gateway_impl.hpp"

#include <fmt/format.h>

#include "runtime/wire/codec.hpp"

// Clients' holds, releases and updates of queued jobs, and cancels of one array task: asked
// of the scheduler without waiting, as a submit (gateway_orders.cpp).
namespace aryl::live {

void gateway::impl::job_for(const std::shared_ptr<session>& who, const wire::job_request& q, const std::string& by) {
  auto refuse = [&](const std::string& why) { answer_request(*who, nullptr, why); };
  if (q.job_id > UINT32_MAX) return refuse(fmt::format("job {}: no such job", q.job_id));
  if (q.after && find_control(*q.after) != std::string::npos)
    return refuse("job_request: after holds " + describe_control(*q.after));
  aryl::job_order o;
  o.job = static_cast<uint32_t>(q.job_id);
  o.task = q.array_task ? static_cast<int64_t>(*q.array_task) : -1;
  o.action = q.action;
  o.by = by;
  const bool changes = q.priority || q.time_limit_s || q.min_workers || q.max_workers || q.expected_duration_s || q.after;
  if (q.action != "update" && changes)
    return refuse(fmt::format("job_request: {} takes no new values (they are update's)", escape_control(q.action)));
  if (q.action == "update" && !changes)
    return refuse("update: give what to change: --priority, --time-limit, --min-workers, --max-workers, --duration "
                  "or --after");
  if (q.time_limit_s && !(*q.time_limit_s >= 0 && *q.time_limit_s <= 1e9))
    return refuse(fmt::format("update: time limit {} s is not a duration of 0 to 1e9 seconds", *q.time_limit_s));
  if (q.expected_duration_s && !(*q.expected_duration_s > 0 && *q.expected_duration_s <= 1e9))
    return refuse(fmt::format("update: duration {} s is not a duration of more than 0, up to 1e9 seconds",
                              *q.expected_duration_s));
  if ((q.min_workers && *q.min_workers == 0) || (q.max_workers && *q.max_workers == 0))
    return refuse("update: --min-workers and --max-workers must be at least 1");
  if ((q.min_workers && *q.min_workers > 1'000'000) || (q.max_workers && *q.max_workers > 1'000'000))
    return refuse("update: --min-workers and --max-workers must be at most 1000000");
  if (q.priority) {
    o.set_priority = true;
    o.priority = *q.priority;
  }
  if (q.time_limit_s) o.time_limit_s = *q.time_limit_s;
  if (q.min_workers) o.min_workers = static_cast<int32_t>(*q.min_workers);
  if (q.max_workers) o.max_workers = static_cast<int32_t>(*q.max_workers);
  if (q.expected_duration_s) o.duration_s = *q.expected_duration_s;
  if (q.after) {
    o.set_after = true;
    o.after = *q.after;
  }
  auto ask = ++order_asks;
  bool asked = false;
  with_router([&](worker_router& r) {
    if (!r.job) return;
    asked = true;
    orders_waiting[ask] = who;
    r.job(o, [weak = weak_from_this(), ask, q, peer = peer_of(*who)](node_answer a) {
      auto g = weak.lock();
      if (!g) return;
      asio::post(g->io, [g = g.get(), ask, q, peer, a] {
        auto job = q.job_id;
        auto asker = g->take_waiting(ask);
        if (!asker) return;  // the run ended first: refused then
        g->log(fmt::format("{}: {}{}", peer, a.ok ? "" : "refused: ", a.text));
        if (!a.ok) return answer_request(*asker, nullptr, a.text);
        if (q.action == "update" && g->opts.book) g->opts.book->updated(static_cast<uint32_t>(job), q.array_task, q);
        answer_request(*asker,
                       std::make_shared<const std::vector<uint8_t>>(wire::encode_frame(wire::job_reply{job, a.text})),
                       {});
      });
    });
  });
  if (!asked) refuse("no run in progress");
}

} // namespace aryl::live
