#include "runtime/live/submit_limits.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "solvers/input_error.hpp"
#include "solvers/job_queue_rules.hpp"

namespace aryl::live {

void submit_limits::forget_ended(const std::function<bool(uint32_t)>& ended) {
  for (auto it = active_.begin(); it != active_.end();) {
    if (!ended(it->first)) {
      ++it;
      continue;
    }
    if (--per_address_[it->second] == 0) per_address_.erase(it->second);
    it = active_.erase(it);
  }
}

std::string submit_limits::admit(const std::string& address, const job_spec& spec,
                                 std::chrono::steady_clock::time_point now,
                                 const std::function<bool(uint32_t)>& ended, bool repeat) {
  size_t bytes = spec.name.size() + spec.tenant.size() + spec.gpu_type.size();
  for (auto& a : spec.command) bytes += a.size();
  if (bytes > o_.max_submit_bytes)
    return fmt::format("the job's name, command and tenant are {} bytes; at most {} (live.max_submit_bytes)", bytes,
                       o_.max_submit_bytes);
  // Whole seconds of budget, refilled at the rate: a burst of twice the rate, then the rate.
  auto& b = buckets_[address];
  const double cap = 2 * o_.submits_per_s;
  if (b.at == std::chrono::steady_clock::time_point{}) b.tokens = cap;
  else b.tokens = std::min(cap, b.tokens + std::chrono::duration<double>(now - b.at).count() * o_.submits_per_s);
  b.at = now;
  if (b.tokens < 1)
    return fmt::format("more than {:g} submits a second from {} (live.submits_per_s): try again shortly",
                       o_.submits_per_s, address);
  if (repeat) {  // takes no job: only the rate applies
    b.tokens -= 1;
    return {};
  }
  forget_ended(ended);
  // An array counts as its tasks (one that does not parse is the scheduler's to refuse).
  size_t jobs = 1;
  if (!spec.array.empty()) try {
      jobs = std::max<size_t>(1, parse_array(spec.array, "array").ids.size());
    } catch (const input_error&) {
    }
  if (active_.size() + jobs > o_.max_active && jobs > 1)
    return fmt::format("clients' jobs queued or running: {}, and {} tasks more would pass the most serve keeps, {} "
                       "(live.max_active_submits)",
                       active_.size(), jobs, o_.max_active);
  if (active_.size() >= o_.max_active)
    return fmt::format("clients' jobs queued or running: {}, the most serve keeps (live.max_active_submits)",
                       active_.size());
  auto here = per_address_.find(address);
  const size_t mine = here != per_address_.end() ? here->second : 0;
  if (jobs > 1 && mine + jobs > o_.max_active_per_address)
    return fmt::format("jobs queued or running from {}: {}, and {} tasks more would pass the most one address may "
                       "keep, {} (live.max_active_submits_per_address)",
                       address, mine, jobs, o_.max_active_per_address);
  if (here != per_address_.end() && here->second >= o_.max_active_per_address)
    return fmt::format("jobs queued or running from {}: {}, the most one address may keep "
                       "(live.max_active_submits_per_address)",
                       address, here->second);
  b.tokens -= 1;
  // Addresses seen once and idle since are forgotten, so the map stays bounded.
  if (buckets_.size() > 4096)
    for (auto it = buckets_.begin(); it != buckets_.end();)
      it = it->second.tokens >= cap - 1e-9 && it->first != address ? buckets_.erase(it) : std::next(it);
  return {};
}

void submit_limits::taken(const std::string& address, uint32_t job) {
  if (active_.emplace(job, address).second) ++per_address_[address];
}

} // namespace aryl::live
