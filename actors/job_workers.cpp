// The job actor in live mode (env.workers.follow_workers): its real workers, launched through
// the server actors, or one torchrun node per server.
#include <chrono>
#include <iterator>
#include <map>
#include <utility>

#include "actors/job_parts.hpp"

namespace aryl::job_detail {
namespace {

const std::vector<std::string>& command_of(const job_ctx& c) {
  auto& spec = c.st().spec;
  return spec.command.empty() ? c.env->workers.command : spec.command;
}

/// What every launch of `a` takes on, workers or torchrun nodes: its generation and size, and
/// the end of a recovery it ends.
void take_assignment(const job_ctx& c, const job_assignment& a) {
  auto& st = c.st();
  st.generation = a.generation;
  st.workers = a.workers;
  st.stopping = false;
  st.exits.clear();
  if (st.recovering && a.workers > 0) {
    st.recovering = false;
    c.self->send(c.env->recorder, lostwork_atom::value, 0.0, (c.now() - st.recover_from).seconds());
  }
}

/// Launches the workers of `a` (none for a preemption) and acknowledges it if asked.
void launch(const job_ctx& c, const job_assignment& a) {
  auto& st = c.st();
  auto& env = *c.env;
  take_assignment(c, a);
  uint32_t rank = 0;
  double rate = work_rate(env.model, st.spec.gpus, a.workers, servers_spanned(a), a.type_speed) * env.workers.speedup;
  for (size_t i = 0; i < a.servers.size(); ++i) {
    launch_request r{st.spec.index, st.spec.name, a.generation, rank, a.server_workers[i],
                     static_cast<uint32_t>(a.workers),
                     st.spec.duration_s, rate,
                     a.overhead_s / env.workers.speedup,
                     command_of(c), st.decided_unix_ns,
                     st.spec.user, a.servers.front(), static_cast<uint32_t>(i),
                     static_cast<uint32_t>(a.servers.size()), st.spec.array_job, st.spec.array_task,
                     st.spec.array_count};
    for (int w = 0; w < a.server_workers[i]; ++w) st.live_ranks.insert(rank++);
    c.self->send(env.servers->at(static_cast<size_t>(a.servers[i])), launch_atom::value, std::move(r));
  }
  if (a.ack) c.ack(a.generation);
}

/// The slot a torchrun node on server `sid` reports under: its own if it has one, else the
/// lowest no current, leaving or other node holds.
uint32_t node_slot_for(job_state& st, int sid) {
  auto slot = st.node_slot.find(sid);
  if (slot != st.node_slot.end()) return slot->second;
  uint32_t free = 0;
  auto taken = [&](uint32_t k) {
    if (st.live_ranks.count(k) || st.leaving.count(k)) return true;
    for (auto& [s2, k2] : st.node_slot)
      if (k2 == k) return true;
    return false;
  };
  while (taken(free)) ++free;
  return st.node_slot.emplace(sid, free).first->second;
}

/// The workers `a` places on each server.
std::map<int, int> share_of(const job_assignment& a) {
  std::map<int, int> share;
  for (size_t i = 0; i < a.servers.size(); ++i) share[a.servers[i]] += a.server_workers[i];
  return share;
}

/// A torchrun job: starts a node on each server of `a` in `start` (all: a fresh start, with a
/// rendezvous of its own), under the server's slot.
void launch_nodes(const job_ctx& c, const job_assignment& a, const std::set<int>& start, bool fresh) {
  auto& st = c.st();
  auto& env = *c.env;
  if (fresh) {
    st.node_slot.clear();
    st.node_share.clear();
    st.rdzv_epoch = a.generation;
    st.rdzv_server = a.servers.empty() ? -1 : a.servers.front();
  }
  take_assignment(c, a);
  double rate = work_rate(env.model, st.spec.gpus, a.workers, servers_spanned(a), a.type_speed) * env.workers.speedup;
  auto share = share_of(a);
  st.node_share = share;
  for (auto& [sid, workers] : share) {
    if (!start.count(sid)) continue;
    uint32_t slot = node_slot_for(st, sid);
    launch_request r{st.spec.index, st.spec.name, a.generation, slot, workers,
                     static_cast<uint32_t>(a.workers), st.spec.duration_s, rate,
                     a.overhead_s / env.workers.speedup,
                     command_of(c), st.decided_unix_ns,
                     st.spec.user, st.rdzv_server, static_cast<uint32_t>(std::distance(share.begin(), share.find(sid))),
                     static_cast<uint32_t>(share.size()), st.spec.array_job, st.spec.array_task,
                     st.spec.array_count, true, static_cast<uint32_t>(st.spec.max_workers), st.rdzv_epoch};
    st.live_ranks.insert(slot);
    c.self->send(env.servers->at(static_cast<size_t>(sid)), launch_atom::value, std::move(r));
  }
}

/// Acknowledges `a` now if no stopped node is still to exit, else once they have.
void ack_when_nodes_left(const job_ctx& c, const job_assignment& a) {
  auto& st = c.st();
  if (!a.ack) return;
  if (st.leaving.empty()) c.ack(a.generation);
  else st.ack_when_left = a.generation;
}

/// A torchrun job's new assignment: the nodes whose server keeps its share run on
/// (TorchElastic restarts their workers when the group changes); the others are started,
/// restarted or, where the job leaves a server, stopped by their servers. With none kept it
/// starts afresh once the old nodes have exited.
void assign_nodes(const job_ctx& c, const job_assignment& a) {
  auto& st = c.st();
  auto share = share_of(a);
  std::set<int> kept, start;
  for (auto& [sid, slot] : st.node_slot) {
    auto it = share.find(sid);
    if (it != share.end() && st.live_ranks.count(slot) && it->second == st.node_share[sid]) kept.insert(sid);
  }
  for (auto& [sid, w] : share)
    if (!kept.count(sid)) start.insert(sid);
  if (kept.empty()) {
    for (auto slot : st.live_ranks) st.leaving.insert(slot);
    st.live_ranks.clear();
    if (st.leaving.empty()) launch_nodes(c, a, start, true);
    else st.next = a;  // started once the old nodes have exited
    return ack_when_nodes_left(c, a);
  }
  // A node on a server the job leaves goes; one whose share changes is relaunched under its
  // slot (the agent stops the older generation first, whose exit is not reported).
  for (auto it = st.node_slot.begin(); it != st.node_slot.end();) {
    if (share.count(it->first)) {
      ++it;
      continue;
    }
    if (st.live_ranks.erase(it->second)) st.leaving.insert(it->second);
    it = st.node_slot.erase(it);
  }
  launch_nodes(c, a, start, false);
  ack_when_nodes_left(c, a);
}

/// A torchrun node stopped by a rescale has exited: once all have, a fresh start waiting for
/// them goes ahead and an assignment waiting for them is acknowledged.
void node_left(const job_ctx& c, uint32_t slot) {
  auto& st = c.st();
  if (!st.leaving.erase(slot) || !st.leaving.empty()) return;
  if (st.next && st.live_ranks.empty()) {
    auto a = std::move(*st.next);
    st.next.reset();
    std::set<int> all(a.servers.begin(), a.servers.end());
    launch_nodes(c, a, all, true);
  }
  if (auto g = std::exchange(st.ack_when_left, std::nullopt)) c.ack(*g);
}

/// A worker's end that begins a recovery (its machine lost, or it died on its own).
void recovering_from_now(const job_ctx& c) {
  auto& st = c.st();
  if (st.recovering) return;
  st.recovering = true;
  st.recover_from = c.now();
}

} // namespace

void assign_workers(const job_ctx& c, const job_assignment& a) {
  auto& st = c.st();
  // Wall clock, for the decision-to-launch latency a worker can measure; not a decision.
  st.decided_unix_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  if (st.torchrun) assign_nodes(c, a);
  else if (st.live_ranks.empty()) launch(c, a);
  else st.next = a;  // launched once the current workers have exited
}

void on_worker_progress(const job_ctx& c, uint32_t rank, double work_done) {
  auto& st = c.st();
  if (rank != 0 || st.next) return;
  st.progress.work_done = work_done;
  if (c.env->journal) c.self->send(c.env->journal, jprogress_atom::value, st.spec.index, work_done);
}

void adopt_workers(const job_ctx& c, const job_assignment& a) {
  // Nothing to launch: the workers run already, and report from now on.
  auto& st = c.st();
  st.generation = a.generation;
  st.workers = a.workers;
  st.stopping = false;
  for (uint32_t r = 0; r < static_cast<uint32_t>(a.workers); ++r) st.live_ranks.insert(r);
}

void on_worker_exit(const job_ctx& c, const worker_exit& e) {
  auto& st = c.st();
  const auto rank = e.rank;
  if (st.torchrun && st.leaving.count(rank)) return node_left(c, rank);
  if (!st.live_ranks.erase(rank)) return;
  if (e.code == worker_lost_code) recovering_from_now(c);  // its machine was lost
  if (st.next || st.stopping) {  // stopped by the scheduler: any exit status is expected
    if (st.next && st.live_ranks.empty()) {
      auto a = std::move(*st.next);
      st.next.reset();
      launch(c, a);
    }
    return;
  }
  if (e.code != 0 || e.signal != 0) {
    // A worker died on its own: as after a simulated worker crash, the scheduler
    // reassigns the job (bounded retries); the new workers resume from the checkpoint,
    // and the removal stops this launch's others, whose exits are then expected.
    st.stopping = true;
    recovering_from_now(c);
    st.exits.push_back(e);
    c.self->send(c.scheduler(), exits_atom::value, st.spec.index, std::exchange(st.exits, {}));
    c.self->send(c.scheduler(), wfail_atom::value, st.spec.index);
    return;
  }
  st.exits.push_back(e);
  if (!st.live_ranks.empty()) return;
  c.self->send(c.scheduler(), exits_atom::value, st.spec.index, std::exchange(st.exits, {}));
  st.progress.work_done = st.spec.duration_s;
  c.self->send(c.scheduler(), finished_atom::value, st.spec.index, st.generation);
  c.self->quit();
}

} // namespace aryl::job_detail
