#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange

#include "runtime/live/gateway_impl.hpp"

#include <fmt/format.h>

#include "runtime/wire/codec.hpp"
#include "solvers/input_error.hpp"
#include "solvers/job_queue_rules.hpp"

// Clients' submits and cancels: asked of the scheduler without blocking the network thread
// (worker_router::submit and cancel reply from the driver's thread), so that a slow scheduler
// or a slow journal write delays no heartbeat and no other client. The asking connection
// reads nothing more until it is answered (gateway_session.cpp): one ask in flight per
// connection, answers in the order asked.
namespace aryl::live {
namespace {

std::shared_ptr<const std::vector<uint8_t>> frame_of(const wire::message& m) {
  return std::make_shared<const std::vector<uint8_t>>(wire::encode_frame(m));
}

} // namespace

void gateway::impl::submit_for(const std::shared_ptr<session>& who, job_spec spec) {
  auto ended = [book = opts.book](uint32_t job) { return book && book->has_ended(job); };
  // A repeat of a keyed submit takes no job: of the limits, only the rate applies to it.
  const bool repeat = !spec.key.empty() && opts.book && opts.book->keyed(spec.user, spec.key);
  if (auto why = limits.admit(address_of(*who), spec, std::chrono::steady_clock::now(), ended, repeat); !why.empty()) {
    why = fmt::format("job '{}': {}", escape_control(spec.name), why);
    log(fmt::format("{}: submit refused: {}", peer_of(*who), why));
    return answer_request(*who, nullptr, why);
  }
  auto ask = ++order_asks;
  bool asked = false;
  // Under the lock: the router asked is the one set now, and one that ends after is told to
  // orders_unanswered by a handler that runs after this one.
  with_router([&](worker_router& r) {
    if (!r.submit) return;
    asked = true;
    orders_waiting[ask] = who;
    r.submit(spec, [weak = weak_from_this(), ask, spec, peer = peer_of(*who)](submit_result result) {
      auto g = weak.lock();
      if (!g) return;
      asio::post(g->io, [g = g.get(), ask, spec, peer, result] {
        auto asker = g->take_waiting(ask);
        if (!asker) return;  // the run ended first: refused then
        if (result.job < 0) {
          g->log(fmt::format("{}: submit refused: {}", peer, result.error));
          answer_request(*asker, nullptr, result.error);
          return;
        }
        // A keyed repeat: its first submit's job, which keeps its own spec and owner (booked
        // from the first's answer, whichever answer comes first here).
        if (result.repeat) {
          g->log(fmt::format("{}: submit repeated job {} (key {})", peer, result.job, escape_control(spec.key)));
          submitted(*asker, static_cast<uint64_t>(result.job));
          wire::submit_ok ok{static_cast<uint64_t>(result.job), std::nullopt};
          ok.note = "a submit with this key took it before";
          answer_request(*asker, frame_of(ok), {});
          return;
        }
        g->log(fmt::format("{}: submitted job {} ({})", peer, result.job, spec.name));
        g->limits.taken(address_of(*asker), static_cast<uint32_t>(result.job));
        // An array's tasks count each (their ids follow the array's).
        if (!spec.array.empty()) try {
            auto n = parse_array(spec.array, "array").ids.size();
            for (uint32_t i = 1; i < n; ++i) g->limits.taken(address_of(*asker), static_cast<uint32_t>(result.job) + i);
          } catch (const input_error&) {
          }
        if (g->opts.book) {
          auto booked = spec;
          booked.index = static_cast<uint32_t>(result.job);
          g->opts.book->spec(booked);
        }
        submitted(*asker, static_cast<uint64_t>(result.job));
        wire::submit_ok ok{static_cast<uint64_t>(result.job), std::nullopt};
        if (!result.note.empty()) ok.note = result.note;
        answer_request(*asker, frame_of(ok), {});
      });
    });
  });
  if (!asked) answer_request(*who, nullptr, "no run in progress");
}

void gateway::impl::cancel_for(const std::shared_ptr<session>& who, uint64_t job) {
  if (job > UINT32_MAX) return answer_request(*who, nullptr, fmt::format("job {}: no such job", job));
  auto ask = ++order_asks;
  bool asked = false;
  with_router([&](worker_router& r) {
    if (!r.cancel) return;
    asked = true;
    orders_waiting[ask] = who;
    r.cancel(static_cast<uint32_t>(job), [weak = weak_from_this(), ask, job, peer = peer_of(*who)](std::string why) {
      auto g = weak.lock();
      if (!g) return;
      asio::post(g->io, [g = g.get(), ask, job, peer, why] {
        auto asker = g->take_waiting(ask);
        if (!asker) return;
        g->log(why.empty() ? fmt::format("{}: cancelled job {}", peer, job)
                           : fmt::format("{}: cancel refused: {}", peer, why));
        answer_request(*asker, nullptr, why);
      });
    });
  });
  if (!asked) answer_request(*who, nullptr, "no run in progress");
}

std::shared_ptr<session> gateway::impl::take_waiting(uint64_t ask) {
  auto it = orders_waiting.find(ask);
  if (it == orders_waiting.end()) return nullptr;
  auto asker = std::move(it->second);
  orders_waiting.erase(it);
  return asker;
}

void gateway::impl::orders_unanswered(const std::string& why) {
  auto waiting = std::move(orders_waiting);
  orders_waiting.clear();
  for (auto& [ask, who] : waiting) answer_request(*who, nullptr, why);
}

} // namespace aryl::live
