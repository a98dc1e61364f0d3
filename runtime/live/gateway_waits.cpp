#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange

#include "runtime/live/gateway_impl.hpp"
#include "runtime/live/gateway_session.hpp"

#include <fmt/format.h>

// What gateway's callers wait for and ask of it (agents registered, workers found, the
// router and its status); the network side is gateway_listener.cpp and gateway_session.cpp.
namespace aryl::live {

std::vector<joined_machine> gateway::join_agents(size_t count, std::chrono::milliseconds timeout) {
  std::unique_lock lock(impl_->m);
  impl_->registered_cv.wait_for(lock, timeout,
                               [&] { return impl_->join_order.size() + impl_->join_refused.size() >= count; });
  impl_->joining = false;
  std::vector<joined_machine> out;
  for (auto& name : impl_->join_order) {
    auto& s = impl_->slots.at(name);
    out.push_back({name, s.gpu_type, s.gpus, s.pool});
  }
  return out;
}

std::vector<std::string> gateway::refused_joins() {
  std::lock_guard lock(impl_->m);
  std::vector<std::string> out;
  for (auto& [name, why] : impl_->join_refused) out.push_back(why);
  return out;
}

std::vector<std::string> gateway::wait_for_agents(std::chrono::milliseconds timeout) {
  std::unique_lock lock(impl_->m);
  auto missing = [&] {
    std::vector<std::string> out;
    for (auto& [name, s] : impl_->slots)
      if (!s.registered) out.push_back(name);
    return out;
  };
  impl_->registered_cv.wait_for(lock, timeout, [&] { return missing().empty(); });
  return missing();
}

std::vector<std::string> gateway::wait_for_found_workers(std::chrono::milliseconds timeout) {
  std::unique_lock lock(impl_->m);
  auto running = [&] {
    std::vector<std::string> out;
    for (auto& [name, s] : impl_->slots)
      for (auto& [job, rank] : s.found) out.push_back(fmt::format("{} job {} rank {}", name, job, rank));
    return out;
  };
  impl_->registered_cv.wait_for(lock, timeout, [&] { return running().empty(); });
  return running();
}

std::map<std::string, std::vector<wire::running_worker>> gateway::found_workers() {
  std::lock_guard lock(impl_->m);
  std::map<std::string, std::vector<wire::running_worker>> out;
  for (auto& [name, s] : impl_->slots)
    if (!s.listed.empty()) out[name] = s.listed;
  return out;
}

void gateway::settle_found_workers(const std::set<uint32_t>& adopted) {
  std::map<std::string, std::set<uint32_t>> stop;
  {
    std::lock_guard lock(impl_->m);
    for (auto& [name, s] : impl_->slots) {
      for (auto& w : s.listed) {
        std::pair<uint32_t, uint32_t> worker{static_cast<uint32_t>(w.job_id), w.rank};
        if (adopted.count(worker.first)) {
          s.held.insert(worker);
        } else if (!w.exit_code) {  // one that exited has nothing left to stop
          s.found.insert(worker);
          stop[name].insert(worker.first);
        }
      }
      s.listed.clear();
    }
    // Early exits of workers now stopped are the stop's business, not the run's.
    std::erase_if(impl_->early_exits, [&](auto& e) { return !adopted.count(std::get<1>(e)); });
  }
  for (auto& [name, jobs] : stop) {
    std::string list;
    for (auto j : jobs) list += (list.empty() ? "" : ", ") + std::to_string(j);
    impl_->log(fmt::format("server {}: stopping the workers of jobs {}, from before this serve started", name, list));
    for (auto j : jobs) asio::post(impl_->io, [p = impl_.get(), s = name, j] { p->stop_on(s, j); });
  }
}

void gateway::set_router(worker_router r) {
  std::lock_guard lock(impl_->m);
  // An ask of the run that ends is answered by nobody: its waiting clients are told.
  if (!r.status_async && !r.status)
    asio::post(impl_->io, [p = impl_.get()] { p->status_ready(p->status_asks, std::nullopt); });
  if (!r.submit && !r.cancel && !r.node)
    asio::post(impl_->io, [p = impl_.get()] { p->orders_unanswered("no run in progress"); });
  impl_->router = std::move(r);
  if (impl_->router.audit) {
    for (auto& line : impl_->audit_backlog) impl_->router.audit(line);
    impl_->audit_backlog.clear();
  }
  if (!impl_->router.exit) return;
  // Adopted workers that exited before the run could hear of it.
  for (auto& [server, job, rank, code, signal] : impl_->early_exits) impl_->router.exit(server, job, rank, code, signal, "");
  impl_->early_exits.clear();
  for (auto& [name, s] : impl_->slots) s.held.clear();
}

gateway::status_answer gateway::status_within(std::chrono::milliseconds limit) {
  using outcome = status_answer::outcome;
  std::shared_future<cluster_status> answer;
  std::function<cluster_status()> now;
  {
    std::lock_guard lock(impl_->m);
    auto& r = impl_->router;
    auto& pending = impl_->status_pending;
    if (!r.status_async && !r.status) return {outcome::no_run, {}};
    if (pending.valid() && pending.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      answer = pending;
    } else if (r.status_async) {
      auto promise = std::make_shared<std::promise<cluster_status>>();
      answer = pending = promise->get_future().share();
      r.status_async([promise](cluster_status s) { promise->set_value(std::move(s)); });
    } else {
      now = r.status;  // a router without the asynchronous ask (tests)
    }
  }
  if (now) return {outcome::answered, now()};
  if (answer.wait_for(limit) != std::future_status::ready) return {outcome::late, {}};
  try {
    return {outcome::answered, answer.get()};
  } catch (const std::future_error&) {  // the run ended before its scheduler answered
    return {outcome::no_run, {}};
  }
}

int gateway::agents_connected() {
  std::lock_guard lock(impl_->m);
  int n = 0;
  for (auto& [name, s] : impl_->slots) n += s.agent.lock() ? 1 : 0;
  return n;
}

std::vector<gateway::agent_seen> gateway::agents_seen() {
  std::lock_guard lock(impl_->m);
  std::vector<agent_seen> out;
  for (auto& [name, s] : impl_->slots) {
    if (s.id < 0) continue;
    auto agent = s.agent.lock();
    out.push_back({name, agent != nullptr, agent ? agent->silent_for_s() : -1.0});
  }
  return out;
}

int gateway::agents_configured() {
  std::lock_guard lock(impl_->m);
  int n = 0;
  // A joining machine's id is -1 until the scheduler (or, with --join, the inventory) takes it.
  for (auto& [name, s] : impl_->slots) n += s.id >= 0 ? 1 : 0;
  return n;
}

} // namespace aryl::live
