#include "runtime/live/history_answer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "solvers/input_error.hpp"

namespace aryl::live {
namespace {

constexpr std::string_view known_outcomes[] = {"done", "failed", "timeout", "node_lost", "cancelled", "queued",
                                               "running"};

history_filter filter_of(const wire::history_request& q) {
  history_filter f;
  constexpr auto most = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (q.since_us) f.since_us = static_cast<int64_t>(std::min(*q.since_us, most));
  if (q.until_us) f.until_us = static_cast<int64_t>(std::min(*q.until_us, most));
  f.users = {q.users.begin(), q.users.end()};
  f.tenants = {q.tenants.begin(), q.tenants.end()};
  for (auto& o : q.outcomes) {
    if (std::find(std::begin(known_outcomes), std::end(known_outcomes), o) == std::end(known_outcomes))
      throw input_error(fmt::format("history: outcome '{}' is not one of done, failed, timeout, node_lost, cancelled, "
                                    "queued, running",
                                    o.substr(0, 64)));
    f.outcomes.insert(o);
  }
  return f;
}

/// `s` cut to the wire's string limit, between UTF-8 characters.
std::string fit(std::string s) {
  if (s.size() <= wire::max_string_bytes) return s;
  size_t n = wire::max_string_bytes;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  s.resize(n);
  return s;
}

uint64_t unix_us(int64_t us) { return us < 0 ? 0 : static_cast<uint64_t>(us); }

wire::history_job job_of(const history_row& r) {
  wire::history_job j;
  j.job_id = r.id;
  j.name = fit(r.name);
  j.user = fit(r.user);
  j.tenant = fit(r.tenant);
  j.state = r.state;
  if (!r.outcome.empty()) j.outcome = r.outcome;
  j.submit_us = unix_us(r.submit_us);
  if (r.start_us) j.start_us = unix_us(*r.start_us);
  if (r.end_us) j.end_us = unix_us(*r.end_us);
  j.wait_s = r.wait_s;
  j.gpus = r.gpus < 0 ? 0 : static_cast<uint32_t>(r.gpus);
  j.exits = fit(r.exits);
  j.attempts = r.attempts < 0 ? 0 : static_cast<uint32_t>(r.attempts);
  return j;
}

/// A job's encoded size, from above: its strings and its fields' keys and numbers.
size_t encoded_bytes(const wire::history_job& j) {
  return 160 + j.name.size() + j.user.size() + j.tenant.size() + j.state.size() + j.exits.size() +
         j.outcome.value_or("").size();
}

} // namespace

wire::history_reply answer_history(const state_journal& journal, const wire::history_request& q) {
  auto f = filter_of(q);
  wire::history_reply reply;
  std::optional<uint32_t> after;
  if (q.after) {
    if (*q.after >= std::numeric_limits<uint32_t>::max()) return reply;  // no job id is above it
    after = static_cast<uint32_t>(*q.after);
  }
  size_t limit = std::min<size_t>(q.limit.value_or(history_page_rows), history_page_rows);
  limit = std::max<size_t>(limit, 1);
  auto rows = journal.history_page(f, after, limit);
  size_t bytes = 0;
  for (auto& r : rows) {
    auto j = job_of(r);
    bytes += encoded_bytes(j);
    if (bytes > history_page_bytes && !reply.jobs.empty()) break;  // the rest on the next page
    reply.jobs.push_back(std::move(j));
  }
  // A full page may have more after it; a short one is the last.
  if (reply.jobs.size() < rows.size() || rows.size() == limit) reply.next_after = reply.jobs.back().job_id;
  return reply;
}

} // namespace aryl::live
