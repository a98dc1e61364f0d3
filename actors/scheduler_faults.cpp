// The scheduler actor's faults (docs/faults.md, "Faults in simulated time"): what a crash,
// a bad link, a lost server and a returning agent do to the scheduler's view, and how a job
// whose workers died is recovered. The behaviours in scheduler_behavior.cpp call these.
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "actors/scheduler_parts.hpp"
#include "solvers/heartbeats.hpp"

namespace aryl::sched {
namespace {

/// An inference server lost: the inference-load actor stops counting on it. One that was being
/// returned, or lent while more servers are owed than remain lent, settles one owed server
/// (it will never be returned).
void inference_server_lost(self_ptr self, int server, server_mode was) {
  auto& st = self->state;
  bool settles = false;
  if (was == server_mode::reclaiming) {
    for (auto& rf : st.loans.reclaims) {
      auto it = std::find(rf.servers.begin(), rf.servers.end(), server);
      if (it == rf.servers.end()) continue;
      rf.servers.erase(it);
      settles = true;
      break;
    }
  } else if (was == server_mode::loaned) {
    int lent = 0;
    for (auto& s : st.ledger.servers) lent += s.mode == server_mode::loaned;
    if (st.loans.backlog > lent) {
      --st.loans.backlog;
      settles = true;
    }
  }
  if (auto inference = caf::actor_cast<inference_actor>(st.loans.inference))
    self->send(inference, gone_atom::value, server, settles);
}

/// A server's ledger entry and its truth.
struct server_at {
  server_entry& entry;
  fault_state::server_truth& truth;
};

/// Server `id`'s, if there is one (a message may name any id).
std::optional<server_at> server_of(scheduler_state& st, int id) {
  if (id < 0 || static_cast<size_t>(id) >= st.ledger.servers.size()) return std::nullopt;
  return server_at{st.ledger.servers[static_cast<size_t>(id)], st.faults.truth[static_cast<size_t>(id)]};
}

heartbeat_model heartbeats(const scheduler_setup& s) { return {s.heartbeat_s, s.missed_heartbeats}; }

/// Whether a loss the scheduler predicted still stands now: a silence of the server's latest
/// fault is noticed by now (later than predicted if the scheduler was away), and its agent is
/// not heard again before.
bool loss_due(const fault_state::server_truth& t, sim_time now) {
  for (auto& s : t.silences)
    if (s.noticed <= now && s.heard >= now) return true;
  return false;
}

} // namespace

/// A job whose workers died restarts from its checkpoint: it shrinks onto its surviving
/// workers if it is elastic and they are enough, else it queues again; past its retries
/// (retries_allowed) it ends as node_lost if a machine was lost, else as failed.
void recover_job(self_ptr self, uint32_t job, int lost_server, sim_time now, const std::string& why) {
  auto& st = self->state;
  auto& l = st.ledger;
  auto& j = l.jobs[job];
  auto before = j.alloc;
  allocation surviving;
  int survivors = 0;
  for (auto& p : before)
    if (p.first != lost_server) {
      surviving.push_back(p);
      survivors += p.second;
    }
  const auto how = lost_server >= 0 ? job_outcome::node_lost : job_outcome::failed;
  const int allowed = retries_allowed(st, job);
  if (++st.jobs.retries[job] > allowed) {
    end_job(self, job, how, fmt::format("{}; {} restarts after faults exhausted", why, allowed));
    return;
  }
  end_attempt(self, job, now, how, why);
  if (lost_server >= 0 && st.setup.policy.elastic && j.elastic && survivors >= j.min_workers && survivors > 0) {
    l.rescale(job, surviving, now);
    decision d{decision::kind::rescale, job, surviving, before, j.alloc_type, why + "; shrinks onto its survivors"};
    dispatch(self, d);
    log(self, now, "rescale", fmt::format("{} workers={} {}", job_name(job), j.workers, describe(st, surviving)), d.why);
    return;
  }
  l.preempt(job, now);
  decision d{decision::kind::preempt, job, {}, before, -1, why + "; queued again"};
  dispatch(self, d);
  log(self, now, "preempt", fmt::format("{} {}", job_name(job), describe(st, before)), d.why);
}

void on_crash(self_ptr self, int server, int64_t down_us) {
  auto& st = self->state;
  auto now = st.jenv->tb.now(self);
  auto& s = st.ledger.servers.at(static_cast<size_t>(server));
  auto& t = st.faults.truth[static_cast<size_t>(server)];
  if (t.crashed || s.mode == server_mode::down || now < t.fault_until) return;
  t.crashed = true;
  // The world: its workers die now. The scheduler learns of it only from the heartbeats.
  for (auto id : s.jobs) self->send(st.jobs.actors[id], crash_atom::value, server);
  auto noticed = heartbeats(st.setup).loss_noticed(server, now);
  t.silences = {{noticed, down_us >= 0 ? now + sim_time::from_us(down_us) : sim_time::max()}};
  self->delayed_send(self, st.jenv->tb.span(noticed - now), lost_atom::value, server);
  if (down_us >= 0) self->delayed_send(self, st.jenv->tb.span(sim_time::from_us(down_us)), back_atom::value, server);
}

namespace {

void linkfault(self_ptr self, const link_fault& f, server_entry& s, fault_state::server_truth& t) {
  auto& st = self->state;
  auto now = st.jenv->tb.now(self);
  // One fault per server at a time: a second one meanwhile is ignored.
  if (t.crashed || s.mode == server_mode::down || now < t.fault_until) return;
  // The world: the machine and its workers carry on; the scheduler hears the agent late
  // or not at all, and notices only the silences longer than the grace.
  link_window w{now, sim_time::from_us(f.for_us), f.delay_s, f.loss, f.reconnects};
  t.silences = link_silences(heartbeats(st.setup), f.server, w, st.setup.seed);
  t.delay_s = f.delay_s;
  t.link_until = now + w.length;
  t.fault_until = t.link_until + sim_time::from_seconds(f.delay_s);
  for (auto& q : t.silences) {
    t.fault_until = std::max(t.fault_until, q.heard);
    self->delayed_send(self, st.jenv->tb.span(q.noticed - now), lost_atom::value, f.server);
    self->delayed_send(self, st.jenv->tb.span(q.heard - now), back_atom::value, f.server);
  }
}

void lost(self_ptr self, int server, server_entry& s, fault_state::server_truth& t) {
  auto& st = self->state;
  auto now = st.jenv->tb.now(self);
  // Its own prediction is stale once the agent was heard again; an outside detector (the
  // live gateway) reports only a server whose agent is still away.
  bool predicted = self->current_sender() == self->address();
  if (s.mode == server_mode::down || (predicted && !loss_due(t, now))) return;
  auto was = s.mode;
  std::vector<uint32_t> ids(s.jobs.begin(), s.jobs.end());  // ascending; s.jobs changes below
  log(self, now, "lost", fmt::format("server={} jobs={}", s.name, ids.size()),
      fmt::format("{} heartbeats missed", st.setup.missed_heartbeats));
  st.ledger.set_mode(server, server_mode::down);  // first: nothing sent there from now on is waited for
  // A silent agent on a live machine: its workers run on, but are given up (their jobs
  // restart from their checkpoints) and stopped when it is back.
  bool alive = predicted && !t.crashed;
  if (alive)
    for (auto id : ids) self->send(st.jobs.actors[id], crash_atom::value, server);
  for (auto id : ids) recover_job(self, id, server, now, fmt::format("server {} was lost", s.name));
  if (alive) t.strays = ids;
  self->send(st.servers[static_cast<size_t>(server)], mode_atom::value, static_cast<int>(server_mode::down));
  if (s.home == server_home::inference) {
    inference_server_lost(self, server, was);
    complete_reclaims(self, now);
  }
  mark_dirty(self, round_cause::cluster);
}

void back(self_ptr self, int server, server_entry& s, fault_state::server_truth& t) {
  auto& st = self->state;
  auto now = st.jenv->tb.now(self);
  if (s.mode != server_mode::down) {
    // Back before its loss was noticed: the agent registers again with no workers, which
    // is how the scheduler learns that the ones it placed there died.
    if (t.crashed) {
      std::vector<uint32_t> ids(s.jobs.begin(), s.jobs.end());  // ascending; s.jobs changes below
      log(self, now, "rebooted", fmt::format("server={} jobs={}", s.name, ids.size()),
          "its agent registered again without its workers");
      for (auto id : ids) recover_job(self, id, server, now, fmt::format("server {} restarted", s.name));
      mark_dirty(self, round_cause::cluster);
    }
    t.crashed = false;  // the pending loss finds it alive
    return;
  }
  t.crashed = false;
  if (!t.strays.empty()) {
    // As live mode's reconciliation: workers of jobs placed elsewhere since are stopped
    // before the server takes new ones.
    std::string names;
    for (auto id : t.strays) names += fmt::format("{}{}", names.empty() ? "" : ",", job_name(id));
    log(self, now, "reconcile", fmt::format("server={} stopped={}", s.name, names),
        "its agent came back still running workers of jobs moved away");
    t.strays.clear();
  }
  // Home again: an inference server serves, and the inference-load actor may lend it anew.
  auto mode = s.home == server_home::training ? server_mode::training : server_mode::serving;
  st.ledger.set_mode(server, mode);
  self->send(st.servers[static_cast<size_t>(server)], mode_atom::value, static_cast<int>(mode));
  reapply_hold(self, server);
  if (mode == server_mode::serving) {
    journal_server(self, server, server_mode::serving);
    if (auto inference = caf::actor_cast<inference_actor>(st.loans.inference))
      self->send(inference, rejoin_atom::value, server);
  }
  log(self, now, "back", fmt::format("server={}", s.name), "its agent registered again");
  mark_dirty(self, round_cause::cluster);
}

} // namespace

void on_linkfault(self_ptr self, const link_fault& f) {
  if (auto found = server_of(self->state, f.server)) linkfault(self, f, found->entry, found->truth);
}

void on_lost(self_ptr self, int server) {
  if (auto found = server_of(self->state, server)) lost(self, server, found->entry, found->truth);
}

void on_back(self_ptr self, int server) {
  if (auto found = server_of(self->state, server)) back(self, server, found->entry, found->truth);
}

void on_wfail(self_ptr self, uint32_t job) {
  auto& st = self->state;
  if (job >= st.jobs.actors.size() || !st.jobs.actors[job] || st.ledger.jobs[job].workers == 0) return;
  auto failure = st.jobs.attempts[job].failure;
  recover_job(self, job, -1, st.jenv->tb.now(self), failure.empty() ? "a worker process died" : failure);
  mark_dirty(self, round_cause::cluster);
}

void on_wcrash(self_ptr self, uint32_t job) {
  auto& st = self->state;
  if (job < st.jobs.actors.size() && st.jobs.actors[job] && st.ledger.jobs[job].workers > 0)
    self->send(st.jobs.actors[job], crash_atom::value, -1);
}

void on_ckfault(self_ptr self, uint32_t job, const checkpoint_fault& f) {
  auto& st = self->state;
  if (job < st.jobs.actors.size() && st.jobs.actors[job]) self->send(st.jobs.actors[job], ckfault_atom::value, f);
}

} // namespace aryl::sched
