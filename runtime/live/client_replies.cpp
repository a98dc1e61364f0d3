#include "runtime/live/client_replies.hpp"

#include <algorithm>
#include <cstdlib>
#include <sstream>

namespace aryl::live {

wire::job_info job_info_of(const active_job& j) {
  wire::job_info out;
  out.job_id = j.job;
  out.name = j.name;
  out.state = j.running ? wire::job_state::running : wire::job_state::queued;
  out.workers = static_cast<uint32_t>(j.workers);
  if (!j.running) out.reason = j.reason;
  out.gpus = static_cast<uint32_t>(j.gpus);
  out.min_workers = static_cast<uint32_t>(j.min_workers);
  out.max_workers = static_cast<uint32_t>(j.max_workers);
  if (!j.gpu_type.empty()) out.gpu_type = j.gpu_type;
  if (j.run_s >= 0) out.run_s = j.run_s;
  if (j.running) out.servers = j.servers;
  out.predicted = j.predicted;
  if (!j.tenant.empty()) out.tenant = j.tenant;
  if (j.held) out.held = true;
  if (j.array_job >= 0) {
    out.array_job = static_cast<uint64_t>(j.array_job);
    out.array_task = j.array_task;
  }
  return out;
}

wire::server_info server_info_of(const server_report& v, const std::set<std::string>& away) {
  // The scheduler's "down" is the loss it acted on; an agent gone for less than the grace
  // is known to the network side only.
  auto state = v.mode == "down"   ? wire::server_state::lost
               : away.count(v.name) ? wire::server_state::unreachable
                                    : wire::server_state::up;
  // An operator's hold, whatever the machine's state (a lost server keeps it).
  std::optional<std::string> hold, reason;
  if (v.node_state != hold_state::up) hold = std::string(to_string(v.node_state));
  if (hold && !v.node_reason.empty()) reason = v.node_reason;
  return {v.name, v.gpu_type, static_cast<uint32_t>(v.gpus), static_cast<uint32_t>(v.free),
          v.inference ? wire::pool_kind::inference : wire::pool_kind::training, state, hold, reason};
}

wire::status_reply status_reply_of(const cluster_status& s, const std::set<std::string>& away,
                                   const std::vector<wire::job_info>& ended, const job_book* book) {
  wire::status_reply out;
  for (auto& j : s.jobs) {
    if (out.jobs.size() == wire::max_list) break;
    out.jobs.push_back(job_info_of(j));
    if (auto user = book ? book->owner(j.job) : std::nullopt; user && !user->empty()) out.jobs.back().user = *user;
  }
  for (auto& j : ended) {
    if (out.jobs.size() == wire::max_list) break;
    out.jobs.push_back(j);
  }
  for (auto& v : s.servers) {
    if (out.servers.size() == wire::max_list) break;
    out.servers.push_back(server_info_of(v, away));
    if (v.mode == "loaned" || v.mode == "reclaiming")
      out.loans.push_back({v.name, v.mode == "loaned" ? wire::loan_state::loaned : wire::loan_state::reclaiming});
  }
  if (!s.tenants.empty()) out.tenants.emplace();
  for (auto& t : s.tenants) {
    if (out.tenants->size() == wire::max_list) break;
    auto count = [](long n) { return static_cast<uint64_t>(std::max(0L, n)); };
    wire::tenant_info x{t.name, std::nullopt, count(t.in_use), count(t.lent), count(t.borrowed),
                        static_cast<uint32_t>(std::max(0, t.queued))};
    if (t.quota >= 0) x.quota = count(t.quota);
    out.tenants->push_back(std::move(x));
  }
  return out;
}

std::optional<wire::show_reply> show_reply_of(const cluster_status& now, const job_book* book, uint64_t job) {
  std::optional<wire::show_reply> reply;
  if (book && job <= UINT32_MAX) reply = book->show(static_cast<uint32_t>(job));
  bool active = false;
  for (auto& j : now.jobs) {
    if (j.job != job) continue;
    // What the scheduler says now, over what the book holds.
    if (!reply) reply.emplace();
    auto user = reply->job.user;
    reply->job = job_info_of(j);
    reply->job.user = user;
    active = true;
  }
  // A trace job not submitted yet is in the book with its spec only.
  if (reply && !active && !reply->end_s && reply->history.empty()) reply.reset();
  return reply;
}

std::optional<wire::show_node_reply> show_node_reply_of(const cluster_status& s, const std::set<std::string>& away,
                                                       const std::string& server, const node_presence& there) {
  auto v = std::find_if(s.servers.begin(), s.servers.end(), [&](auto& x) { return x.name == server; });
  if (v == s.servers.end()) return std::nullopt;
  wire::show_node_reply out;
  out.node = server_info_of(*v, away);
  out.mode = v->mode;
  for (auto& j : s.jobs) {
    if (!j.running || out.jobs.size() == wire::max_list) continue;
    // "t0:4 t1:2": this server's count, if it is one of them.
    std::istringstream places(j.servers);
    for (std::string place; places >> place;) {
      auto colon = place.rfind(':');
      if (colon == std::string::npos || place.compare(0, colon, server) != 0 || colon != server.size()) continue;
      wire::node_job x{j.job, j.name, 0, {}};
      x.workers = static_cast<uint32_t>(std::strtoul(place.c_str() + colon + 1, nullptr, 10));
      if (auto r = there.ranks.find(j.job); r != there.ranks.end()) x.ranks = r->second;
      out.jobs.push_back(std::move(x));
    }
  }
  out.heard_s = there.heard_s;
  out.address = there.address;
  out.agent_version = there.version;
  return out;
}

job_spec spec_of(const wire::submit& j, double default_estimate_s) {
  job_spec out;
  out.name = j.name;
  // Wider than int on the wire: the scheduler's range check sees the value, not a wrap.
  auto narrow = [](uint32_t v) { return static_cast<int>(std::min<uint32_t>(v, INT32_MAX)); };
  out.gpus = narrow(j.gpus);
  out.min_workers = narrow(j.min_workers);
  out.max_workers = narrow(j.max_workers);
  out.elastic = j.min_workers != j.max_workers;
  out.duration_s = j.expected_duration_s.value_or(default_estimate_s);
  out.predicted = j.expected_duration_s.has_value();
  out.gpu_type = j.gpu_type.value_or("");
  out.tenant = j.tenant.value_or("");
  out.priority = j.priority.value_or(0);
  out.time_limit_s = j.time_limit_s.value_or(0);
  // Beyond int: job_spec_problem refuses it, as any count out of range.
  out.max_retries = j.max_retries ? static_cast<int>(std::min<uint32_t>(*j.max_retries, INT32_MAX)) : -1;
  out.command = j.command;
  out.after = j.after.value_or("");
  out.array = j.array.value_or("");
  out.held = j.hold.value_or(false);
  out.key = j.key.value_or("");
  return out;
}

} // namespace aryl::live
