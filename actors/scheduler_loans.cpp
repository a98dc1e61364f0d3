// The loan negotiation with the inference-load actor (docs/loaning.md): servers it lends are
// placed on; a reclaim chooses the loaned servers to return at least preemption cost, stops or
// shrinks the jobs there, and hands the servers back once every one of them acknowledged.
#include <fmt/compile.h>
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "actors/scheduler_parts.hpp"
#include "solvers/reclaim.hpp"

namespace aryl::sched {

/// Whether a reclaim in flight waits for the job's acknowledgement.
bool awaited(const scheduler_state& st, uint32_t job) {
  for (auto& rf : st.loans.reclaims)
    if (rf.waiting.count(job)) return true;
  return false;
}

namespace {

/// Chooses servers for the reclaim backlog and starts the negotiation with the jobs on them.
void start_reclaim(self_ptr self, sim_time now) {
  auto& st = self->state;
  auto& l = st.ledger;
  reclaim_input in;
  in.loaned.reserve(l.servers.size());
  for (auto& s : l.servers)
    if (s.mode == server_mode::loaned) in.loaned.push_back({s.id, s.gpus});
  in.count = std::min<int>(st.loans.backlog, static_cast<int>(in.loaned.size()));
  if (in.count == 0) return;
  // The jobs on loaned servers, ascending and once each (a sorted vector: a reclaim looks at
  // every loaned server, and a set would allocate for each of their jobs).
  std::vector<uint32_t> affected;
  for (auto& s : in.loaned) {
    auto& jobs = l.servers[static_cast<size_t>(s.id)].jobs;
    affected.insert(affected.end(), jobs.begin(), jobs.end());
  }
  std::sort(affected.begin(), affected.end());
  affected.erase(std::unique(affected.begin(), affected.end()), affected.end());
  in.jobs.reserve(affected.size());
  for (auto id : affected) {
    auto& j = l.jobs[id];
    bool can_shrink = st.setup.policy.elastic && j.elastic;
    in.jobs.push_back({static_cast<int>(id), can_shrink ? j.min_workers : j.workers, 1, j.alloc});
  }
  auto res = st.setup.reclaim == reclaim_method::exact ? reclaim_exact(in) : reclaim_greedy(in);
  st.loans.backlog -= in.count;

  loan_negotiation::reclaim_in_flight rf;
  rf.servers = res.returned;
  rf.started = now;
  rf.deadline = st.loans.deadline;
  std::set<int> returned(res.returned.begin(), res.returned.end());
  for (int sid : res.returned) {
    l.set_mode(sid, server_mode::reclaiming);
    journal_server(self, sid, server_mode::reclaiming);
  }
  for (int id : res.preempted) {
    auto job = static_cast<uint32_t>(id);
    auto before = l.jobs[job].alloc;
    l.preempt(job, now);
    decision d{decision::kind::preempt, job, {}, before, -1, "its loaned server is reclaimed"};
    dispatch(self, d, true);
    log(self, now, "preempt", fmt::format("{} {}", job_name(job), describe(st, before)), d.why);
    rf.waiting[job] = l.jobs[job].generation;
  }
  for (auto& [id, lost] : res.scaled_in) {
    auto job = static_cast<uint32_t>(id);
    auto before = l.jobs[job].alloc;
    allocation after;
    for (auto& p : before)
      if (!returned.count(p.first)) after.push_back(p);
    l.rescale(job, after, now);
    decision d{decision::kind::rescale, job, after, before, l.jobs[job].alloc_type,
               fmt::format("scale in by {}: its loaned server is reclaimed", lost)};
    dispatch(self, d, true);
    log(self, now, "rescale",
        fmt::format(FMT_COMPILE("job-{} workers={} {}"), job, l.jobs[job].workers, describe(st, after)), d.why);
    rf.waiting[job] = l.jobs[job].generation;
  }
  std::string names;
  for (int sid : res.returned) {
    if (!names.empty()) names += ',';
    names += l.servers[static_cast<size_t>(sid)].name;
  }
  log(self, now, "reclaim", fmt::format("servers={} preempted={} scaled_in={}", names, res.preempted.size(),
                                        res.scaled_in.size()),
      "inference demand rose; least preemption cost first");
  st.loans.reclaims.push_back(std::move(rf));
}

} // namespace

/// Hands back every reclaim whose jobs have all acknowledged, in request order.
void complete_reclaims(self_ptr self, sim_time now) {
  auto& st = self->state;
  while (!st.loans.reclaims.empty() && st.loans.reclaims.front().waiting.empty()) {
    auto rf = std::move(st.loans.reclaims.front());
    st.loans.reclaims.pop_front();
    for (int sid : rf.servers) {
      st.ledger.set_mode(sid, server_mode::serving);
      journal_server(self, sid, server_mode::serving);
      self->send(st.servers[static_cast<size_t>(sid)], mode_atom::value, static_cast<int>(server_mode::serving));
    }
    log(self, now, "return", fmt::format("servers={}", rf.servers.size()), "every affected job acknowledged");
    st.metrics.reclaim_latency_s.push_back((now - rf.started).seconds());
    self->send(st.jenv->recorder, rdone_atom::value, (now - rf.started).seconds(),
               std::max(0.0, (now - rf.deadline).seconds()));
    if (auto inference = caf::actor_cast<inference_actor>(st.loans.inference))
      self->send(inference, returned_atom::value, rf.servers);
    send_snapshot(self, now);
  }
}

void on_loan(self_ptr self, const std::vector<int>& ids) {
  auto& st = self->state;
  auto now = st.jenv->tb.now(self);
  st.loans.inference = caf::actor_cast<caf::actor_addr>(self->current_sender());
  st.metrics.counts.loans += ids.size();
  for (int sid : ids) {
    st.ledger.set_mode(sid, server_mode::loaned);
    journal_server(self, sid, server_mode::loaned);
    self->send(st.servers[static_cast<size_t>(sid)], mode_atom::value, static_cast<int>(server_mode::loaned));
  }
  log(self, now, "loan", fmt::format("servers={}", ids.size()), "inference demand fell below serving capacity");
  mark_dirty(self, round_cause::loan);
}

void on_reclaim(self_ptr self, int count, int64_t deadline_us) {
  auto& st = self->state;
  auto now = st.jenv->tb.now(self);
  st.loans.inference = caf::actor_cast<caf::actor_addr>(self->current_sender());
  st.loans.backlog += count;
  st.loans.deadline = sim_time::from_us(deadline_us);
  start_reclaim(self, now);
  complete_reclaims(self, now);
  mark_dirty(self, round_cause::reclaim);
}

void on_ack(self_ptr self, const job_ack& a) {
  auto& st = self->state;
  bool any = false;
  for (auto& rf : st.loans.reclaims) {
    auto w = rf.waiting.find(a.job);
    if (w != rf.waiting.end() && a.generation >= w->second) {
      rf.waiting.erase(w);
      any = true;
    }
  }
  if (any) complete_reclaims(self, st.jenv->tb.now(self));
  if (!st.loans.quota_reclaims.empty()) quota_acked(self, a.job, a.generation, st.jenv->tb.now(self));
}

} // namespace aryl::sched
