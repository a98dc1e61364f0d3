// The scheduler's tenants: their index, and the quota reclaims a round starts, measured
// from the victims' stops to their checkpoints written (docs/tenants.md, "Tenants and quotas").
#include <fmt/format.h>

#include "actors/scheduler_parts.hpp"
#include "actors/recorder_protocol.hpp"

namespace aryl::sched {

int tenant_of(scheduler_state& st, const std::string& name) {
  if (st.jobs.tenant_index.empty())
    for (size_t t = 0; t < st.ledger.tenants.size(); ++t)
      st.jobs.tenant_index.emplace(st.ledger.tenants[t].name, static_cast<int>(t));
  auto [it, added] = st.jobs.tenant_index.try_emplace(name, static_cast<int>(st.ledger.tenants.size()));
  if (added) {
    st.ledger.tenants.emplace_back();
    st.ledger.tenants.back().name = name;
  }
  return it->second;
}

void track_quota_reclaims(self_ptr self, const std::vector<decision>& decisions, sim_time now) {
  auto& st = self->state;
  loan_negotiation::quota_reclaim_in_flight q;
  q.started = now;
  for (auto& d : decisions)
    if (d.what == decision::kind::preempt && d.why.rfind("quota reclaim", 0) == 0)
      q.waiting[d.job] = st.ledger.jobs[d.job].generation;
  if (!q.waiting.empty()) st.loans.quota_reclaims.push_back(std::move(q));
}

bool quota_victim(const scheduler_state& st, uint32_t job) {
  for (auto& q : st.loans.quota_reclaims)
    if (q.waiting.count(job)) return true;
  return false;
}

void quota_acked(self_ptr self, uint32_t job, uint64_t generation, sim_time now) {
  auto& st = self->state;
  const double grace = st.ledger.params.quota_grace_s;
  for (auto it = st.loans.quota_reclaims.begin(); it != st.loans.quota_reclaims.end();) {
    auto w = it->waiting.find(job);
    if (w != it->waiting.end() && generation >= w->second) it->waiting.erase(w);
    if (!it->waiting.empty()) {
      ++it;
      continue;
    }
    double latency = (now - it->started).seconds();
    double late = std::max(0.0, latency - grace);
    log(self, now, "quota-return", fmt::format("latency={:.1f}", latency),
        late > 0 ? fmt::format("every victim checkpointed, {:.1f} s past the {:g} s deadline", late, grace)
                 : std::string("every victim checkpointed"));
    self->send(st.jenv->recorder, qdone_atom::value, latency, late);
    it = st.loans.quota_reclaims.erase(it);
  }
}

std::vector<tenant_report> tenant_reports(const scheduler_state& st) {
  auto& l = st.ledger;
  std::vector<tenant_report> out;
  if (!l.params.quotas && !l.params.fair_share) return out;
  for (auto& t : l.tenants) out.push_back({t.name, t.quota, 0, 0, 0, 0});
  for (auto id : l.running) {
    auto& j = l.jobs[id];
    auto& a = l.servers[static_cast<size_t>(j.alloc.front().first)];
    if (a.home == server_home::training) out[static_cast<size_t>(j.tenant)].in_use += base_held(j, st.setup.policy);
  }
  for (auto id : l.queued) ++out[static_cast<size_t>(l.jobs[id].tenant)].queued;
  long borrowed = 0, idle = 0;
  for (auto& r : out) {
    r.borrowed = std::max(0L, r.in_use - std::max(0L, r.quota));
    borrowed += r.borrowed;
  }
  for (size_t t = 0; t < out.size(); ++t)
    if (l.tenants[t].lend && out[t].quota > out[t].in_use) idle += out[t].quota - out[t].in_use;
  for (size_t t = 0; t < out.size(); ++t)
    if (l.tenants[t].lend && out[t].quota > out[t].in_use && idle > 0)
      out[t].lent = (out[t].quota - out[t].in_use) * std::min(borrowed, idle) / idle;
  return out;
}

} // namespace aryl::sched
