// The scheduler's inventory as operators and machines change it (docs/live.md, "Draining a
// server"): cordon, drain and resume of a training server, and training machines joining a
// running cluster. A held server is in the ledger's `cordoned` mode, which every placement
// leaves out as it leaves out lost and reclaimed servers; the jobs it holds keep their workers
// until they end, or until `drain --now` stops them. The behaviours in scheduler_behavior.cpp
// call these.
#include <fmt/format.h>

#include "actors/scheduler_parts.hpp"

namespace aryl::sched {
namespace {

int server_named(const scheduler_state& st, const std::string& name) {
  for (auto& s : st.ledger.servers)
    if (s.name == name) return s.id;
  return -1;
}

std::string server_list(const scheduler_state& st) {
  std::string out;
  for (auto& s : st.ledger.servers) out += (out.empty() ? "" : ", ") + s.name;
  return out;
}

/// A server's hold as the status shows it (a lost server is shown by its mode).
hold_state state_of(const scheduler_state& st, int sid) {
  auto& h = st.holds.by_server[static_cast<size_t>(sid)];
  if (h.kind == hold_kind::cordon) return hold_state::cordoned;
  if (h.kind == hold_kind::drain)
    return st.ledger.servers[static_cast<size_t>(sid)].jobs.empty() ? hold_state::drained : hold_state::draining;
  return hold_state::up;
}

/// The journal's row of a server's hold: "cordon:REASON", "drain:REASON", or "up" (no row).
void journal_hold(self_ptr self, int sid) {
  auto& st = self->state;
  if (!st.setup.journal) return;
  auto& h = st.holds.by_server[static_cast<size_t>(sid)];
  self->send(st.setup.journal, jserver_atom::value, st.ledger.servers[static_cast<size_t>(sid)].name,
             h.kind == hold_kind::none ? std::string(to_string(h.kind))
                                       : fmt::format("{}:{}", to_string(h.kind), h.reason));
}

/// Holds server `sid` (cordon or drain): out of placement from now on, unless lost (then
/// once its agent is back).
void hold(self_ptr self, int sid, hold_kind kind, const std::string& reason) {
  auto& st = self->state;
  auto& h = st.holds.by_server[static_cast<size_t>(sid)];
  if (h.kind == hold_kind::drain && !h.drained_logged) --st.holds.drains_unlogged;
  h = {kind, reason, false};
  if (kind == hold_kind::drain) ++st.holds.drains_unlogged;
  if (st.ledger.servers[static_cast<size_t>(sid)].mode == server_mode::training)
    st.ledger.set_mode(sid, server_mode::cordoned);
}

/// drain --now: every job with workers on the server stops them (they checkpoint) and is
/// queued again, a preemption; the next round places it elsewhere. Returns how many.
size_t move_jobs_off(self_ptr self, int sid, sim_time now, const std::string& reason) {
  auto& st = self->state;
  auto& s = st.ledger.servers[static_cast<size_t>(sid)];
  std::vector<uint32_t> ids(s.jobs.begin(), s.jobs.end());  // ascending; s.jobs changes below
  for (auto id : ids) {
    auto before = st.ledger.jobs[id].alloc;
    st.ledger.preempt(id, now);
    decision d{decision::kind::preempt, id, {}, before, -1,
               fmt::format("drain: its server {} is drained now{}{}", s.name, reason.empty() ? "" : ": ", reason)};
    dispatch(self, d);
    log(self, now, "preempt", fmt::format("{} {}", job_name(id), describe(st, before)), d.why);
  }
  return ids.size();
}

/// An operator's resume of server `sid`: its hold (if any) is lifted.
node_answer resume(self_ptr self, int sid, sim_time now, const std::string& why) {
  auto& st = self->state;
  auto& s = st.ledger.servers[static_cast<size_t>(sid)];
  auto& h = st.holds.by_server[static_cast<size_t>(sid)];
  if (h.kind == hold_kind::none) return {true, fmt::format("{}: not cordoned or drained; nothing to resume", s.name)};
  if (h.kind == hold_kind::drain && !h.drained_logged) --st.holds.drains_unlogged;
  h = {};
  if (s.mode == server_mode::cordoned) st.ledger.set_mode(sid, server_mode::training);
  log(self, now, "resume", fmt::format("server={}", s.name), why);
  journal_hold(self, sid);
  mark_dirty(self, round_cause::cluster);
  return {true, fmt::format("{}: resumed: new work may be placed there again", s.name)};
}

std::string jobs_text(size_t n) { return fmt::format("{} job{}", n, n == 1 ? "" : "s"); }
/// "2 jobs run on there", "1 job runs on there".
std::string run_on(size_t n) { return jobs_text(n) + (n == 1 ? " runs on there" : " run on there"); }

} // namespace

node_answer on_node_order(self_ptr self, const node_order& o) {
  auto& st = self->state;
  auto now = st.jenv->tb.now(self);
  int sid = server_named(st, o.server);
  if (sid < 0) return {false, fmt::format("no server '{}' (this cluster has: {})", o.server, server_list(st))};
  auto& s = st.ledger.servers[static_cast<size_t>(sid)];
  if (s.home != server_home::training)
    return {false, fmt::format("{} is an inference server: cordon, drain and resume apply to training servers "
                               "(inference servers are lent and taken back as demand says)",
                               s.name)};
  const std::string why = o.reason.empty() ? "asked by an operator" : o.reason;
  const auto action = enum_named<node_action>(node_action_names, o.action);
  if (!action) return {false, fmt::format("{}: unknown order '{}' (cordon, drain or resume)", s.name, o.action)};
  if (*action == node_action::resume) return resume(self, sid, now, why);
  if (o.now && action != node_action::drain) return {false, fmt::format("{}: --now is for drain only", s.name)};
  hold(self, sid, action == node_action::drain ? hold_kind::drain : hold_kind::cordon, o.reason);
  const size_t there = s.jobs.size();
  log(self, now, std::string(to_string(*action)),
      fmt::format("server={} jobs={}{}", s.name, there, o.now ? " now=1" : ""), why);
  size_t moved = o.now ? move_jobs_off(self, sid, now, o.reason) : 0;
  journal_hold(self, sid);
  note_drained(self, now);
  mark_dirty(self, round_cause::cluster);
  const char* lost = s.mode == server_mode::down ? " (it is lost now; held once its agent is back)" : "";
  if (action == node_action::cordon)
    return {true, fmt::format("{}: cordoned: no new work; {}{}", s.name, run_on(there), lost)};
  if (moved > 0)
    return {true, fmt::format("{}: drained now: {} stopped (checkpointing) and queued again{}", s.name,
                              jobs_text(moved), lost)};
  if (there == 0) return {true, fmt::format("{}: drained: no job runs there{}", s.name, lost)};
  return {true, fmt::format("{}: draining: no new work; {} until {} end{}", s.name, run_on(there),
                            there == 1 ? "it" : "they", there == 1 ? "s" + std::string(lost) : std::string(lost))};
}

join_answer on_join(self_ptr self, const node_join& m, server_actor actor) {
  auto& st = self->state;
  auto now = st.jenv->tb.now(self);
  if (server_named(st, m.server) >= 0) return {-1, fmt::format("server '{}' is in the cluster already", m.server)};
  int type = -1;
  std::string types;
  for (size_t t = 0; t < st.setup.type_names.size(); ++t) {
    if (st.setup.type_names[t] == m.gpu_type) type = static_cast<int>(t);
    types += (types.empty() ? "" : ", ") + st.setup.type_names[t];
  }
  if (type < 0)
    return {-1, fmt::format("server '{}': GPU type {} is none of this run's ({}); a machine joining a running "
                            "cluster has one of them",
                            m.server, m.gpu_type, types)};
  if (m.gpus <= 0) return {-1, fmt::format("server '{}': {} GPUs", m.server, m.gpus)};
  server_entry e;
  e.id = static_cast<int>(st.ledger.servers.size());
  e.name = m.server;
  e.gpu_type = type;
  e.gpus = e.free = m.gpus;
  e.home = server_home::training;
  e.mode = server_mode::training;
  st.ledger.servers.push_back(std::move(e));  // the ledger indexes it again when next read
  st.servers.push_back(actor);
  st.jenv->servers->add(std::move(actor));
  st.faults.truth.emplace_back();
  st.holds.by_server.emplace_back();
  log(self, now, "join", fmt::format("server={} gpus={} type={}", m.server, m.gpus, m.gpu_type),
      "its agent registered after the run started");
  // A restarted scheduler has it again, under the same id.
  if (st.setup.journal) self->send(st.setup.journal, jjoined_atom::value, saved_machine{m.server, m.gpu_type, m.gpus});
  mark_dirty(self, round_cause::cluster);
  return {static_cast<int>(st.ledger.servers.size()) - 1, {}};
}

void restore_holds(self_ptr self) {
  auto& st = self->state;
  auto now = st.jenv->tb.now(self);
  for (auto& r : st.setup.holds) {
    int sid = server_named(st, r.server);
    const auto kind = hold_named(r.kind);
    if (sid < 0 || st.ledger.servers[static_cast<size_t>(sid)].home != server_home::training || !kind)
      continue;  // the serve side checked the file's rows; one for a server gone is dropped there
    hold(self, sid, *kind, r.reason);
    log(self, now, r.kind, fmt::format("server={} jobs=0", r.server),
        "held before the scheduler restarted" + (r.reason.empty() ? std::string() : ": " + r.reason));
  }
}

void reapply_hold(self_ptr self, int server) {
  auto& st = self->state;
  auto& h = st.holds.by_server[static_cast<size_t>(server)];
  if (h.kind != hold_kind::none && st.ledger.servers[static_cast<size_t>(server)].mode == server_mode::training)
    st.ledger.set_mode(server, server_mode::cordoned);
}

void note_drained(self_ptr self, sim_time now) {
  auto& st = self->state;
  if (st.holds.drains_unlogged == 0) return;  // every round calls this; most runs drain nothing
  for (size_t sid = 0; sid < st.holds.by_server.size(); ++sid) {
    auto& h = st.holds.by_server[sid];
    auto& s = st.ledger.servers[sid];
    if (h.kind != hold_kind::drain || h.drained_logged || !s.jobs.empty()) continue;
    h.drained_logged = true;
    --st.holds.drains_unlogged;
    log(self, now, "drained", fmt::format("server={}", s.name), "its last job left; it takes no new work");
  }
}

void describe_holds(const scheduler_state& st, cluster_status& out) {
  for (size_t sid = 0; sid < out.servers.size() && sid < st.holds.by_server.size(); ++sid) {
    out.servers[sid].node_state = state_of(st, static_cast<int>(sid));
    out.servers[sid].node_reason = st.holds.by_server[sid].reason;
  }
}

} // namespace aryl::sched
