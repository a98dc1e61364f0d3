#include "actors/server.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <set>
#include <utility>

#include "actors/end_run_on_exception.hpp"

#include "solvers/cluster_ledger.hpp"
#include "solvers/plural.hpp"

namespace aryl {

namespace {

/// What every handler of one server's actor works with.
struct server_ctx {
  server_actor::stateful_pointer<server_state> self;
  recorder_actor recorder;

  server_state& st() const { return self->state; }
  void violation(const std::string& what) const {
    self->send(recorder, violation_atom::value, fmt::format("server {}: {}", self->state.server, what));
  }
};

// ---- live mode: the machine's workers -------------------------------------------------

/// Starts a pending launch once the job holds enough GPU indices here.
void try_launch(const server_ctx& c, uint32_t job) {
  auto& st = c.st();
  auto p = st.pending.find(job);
  if (p == st.pending.end()) return;
  auto& q = p->second;
  node_launch l{job, q.job_name, q.generation, q.rank_offset, q.world_size, {}, q.work_s, q.rate, q.startup_s,
                q.command, q.decided_unix_ns, q.user, q.master_server, q.group_rank, q.group_count,
                q.array_job, q.array_task, q.array_count, q.torchrun, q.max_nodes, q.rdzv_epoch};
  for (size_t g = 0; g < st.gpu_job.size() && static_cast<int>(l.gpus.size()) < q.workers; ++g)
    if (st.gpu_job[g] == job) l.gpus.push_back(static_cast<uint32_t>(g));
  if (static_cast<int>(l.gpus.size()) < q.workers) return;
  st.pending.erase(p);
  ++st.launches;
  // A torchrun node is one process, reported under its slot.
  const uint32_t processes = l.torchrun ? 1 : static_cast<uint32_t>(l.gpus.size());
  for (uint32_t r = 0; r < processes; ++r) st.running[job][l.rank_offset + r] = st.launches;
  if (l.torchrun) st.torchrun_jobs.insert(job);
  st.node->launch(l);
}

/// A worker whose exit will never be reported: the job hears it as lost now.
void give_up(const server_ctx& c, uint32_t job, uint32_t rank) {
  auto& st = c.st();
  auto o = st.owners.find(job);
  if (o != st.owners.end())
    c.self->send(o->second, wexit_atom::value, worker_exit{rank, worker_lost_code, worker_lost_signal});
}

/// Whether a report comes from a worker given up and found running on reconciling; its exit
/// (`forget`) is the last report it makes.
bool stray(const server_ctx& c, uint32_t job, uint32_t rank, bool forget) {
  auto& st = c.st();
  auto it = st.strays.find(job);
  if (it == st.strays.end() || !it->second.count(rank)) return false;
  if (forget) {
    it->second.erase(rank);
    if (it->second.empty()) st.strays.erase(it);
  }
  return true;
}

/// Whether a report of this worker is still awaited here.
bool expected(const server_state& st, uint32_t job, uint32_t rank) {
  auto it = st.running.find(job);
  return it != st.running.end() && it->second.count(rank) > 0;
}

/// Gives `job` free GPU indices up to the GPUs it is placed on here, then launches it if it
/// waits for them.
void fill(const server_ctx& c, uint32_t job) {
  auto& st = c.st();
  auto w = st.workers.find(job);
  if (w == st.workers.end()) return;
  int n = w->second - static_cast<int>(std::count(st.gpu_job.begin(), st.gpu_job.end(), job));
  for (size_t g = 0; g < st.gpu_job.size() && n > 0; ++g)
    if (st.gpu_job[g] < 0) {
      st.gpu_job[g] = job;
      --n;
    }
  try_launch(c, job);
}

/// A parked torchrun node not placed again: stopped, and its GPU indices go to the jobs
/// placed here meanwhile.
void unpark_stop(const server_ctx& c, uint32_t job) {
  auto& st = c.st();
  if (!st.parked.erase(job)) return;
  st.node->stop(job);
  for (auto& g : st.gpu_job)
    if (g == job) g = -1;
  std::vector<uint32_t> waiting;
  for (auto& [j, n] : st.workers) waiting.push_back(j);
  for (auto j : waiting) fill(c, j);
}

/// launch(r): a job's launch here, started once it holds its GPU indices.
void on_launch(const server_ctx& c, launch_request& r) {
  auto& st = c.st();
  if (!st.node) return;
  auto job = r.job;
  st.owners[job] = caf::actor_cast<job_actor>(c.self->current_sender());
  st.pending[job] = std::move(r);
  try_launch(c, job);
}

/// wprogress from the machine: passed on to the job, if its worker's reports are awaited.
void on_progress(const server_ctx& c, uint32_t job, uint32_t rank, double work_done) {
  auto& st = c.st();
  if (!expected(st, job, rank) || stray(c, job, rank, false)) return;
  auto it = st.owners.find(job);
  if (it != st.owners.end()) c.self->send(it->second, wprogress_atom::value, rank, work_done);
}

/// wexit from the machine: passed on to the job, unless given up for lost already.
void on_exit(const server_ctx& c, uint32_t job, const worker_exit& e) {
  const uint32_t rank = e.rank;
  auto& st = c.st();
  if (stray(c, job, rank, true) || !expected(st, job, rank)) return;
  auto r = st.running.find(job);
  r->second.erase(rank);
  if (r->second.empty()) st.running.erase(r);
  auto it = st.owners.find(job);
  if (it != st.owners.end()) c.self->send(it->second, wexit_atom::value, e);
}

/// adopt: after a scheduler restart, a job's workers that run here already.
void adopt(const server_ctx& c, uint32_t job, const std::vector<uint32_t>& ranks, const std::vector<uint32_t>& gpus,
           job_actor owner) {
  auto& st = c.st();
  int n = static_cast<int>(ranks.size());
  if (st.used + n > st.gpus)
    c.violation(fmt::format("job {} adopted on {} with only {} free", job, gpus_text(n), st.gpus - st.used));
  st.used += n;
  st.workers[job] += n;
  if (!st.node) return;
  st.owners[job] = std::move(owner);
  for (size_t i = 0; i < ranks.size() && i < gpus.size(); ++i) {
    if (gpus[i] >= st.gpu_job.size() || st.gpu_job[gpus[i]] >= 0)
      c.violation(fmt::format("job {} adopted on GPU {}, which is not free", job, gpus[i]));
    else st.gpu_job[gpus[i]] = job;
    st.running[job][ranks[i]] = 0;  // before any launch: a returning agent still lists it
  }
}

/// reconcile: the workers the machine's agent runs as it registers again, against those
/// launched here.
void reconcile(const server_ctx& c, const std::vector<uint32_t>& jobs, const std::vector<uint32_t>& ranks,
               uint64_t seen) {
  auto& st = c.st();
  if (!st.node) return;
  std::set<std::pair<uint32_t, uint32_t>> there;
  for (size_t i = 0; i < jobs.size() && i < ranks.size(); ++i) there.emplace(jobs[i], ranks[i]);
  // Launched here before the agent registered, gone there: the agent restarted without
  // them (its machine rebooted), or the launch went down with the old connection.
  for (auto it = st.running.begin(); it != st.running.end();) {
    for (auto r = it->second.begin(); r != it->second.end();) {
      if (r->second > seen || there.count({it->first, r->first})) {
        ++r;
        continue;
      }
      give_up(c, it->first, r->first);
      r = it->second.erase(r);
    }
    it = it->second.empty() ? st.running.erase(it) : std::next(it);
  }
  // Running there for a job no longer placed here (moved away while its agent was gone):
  // stopped. The exit of one given up already is its own, not a later launch's: dropped.
  std::set<uint32_t> stop;
  for (auto& [job, rank] : there) {
    if (st.workers.count(job)) continue;
    stop.insert(job);
    if (!expected(st, job, rank)) st.strays[job].insert(rank);
  }
  for (auto job : stop) st.node->stop(job);
}

// ---- placements -----------------------------------------------------------------------

void place_job(const server_ctx& c, uint32_t job, int n) {
  auto& st = c.st();
  if (auto pk = st.parked.find(job); pk != st.parked.end()) {
    if (pk->second.gpus == n) {  // the same share here: its node runs on
      st.parked.erase(pk);
      st.used += n;
      st.workers[job] += n;
      return;
    }
    unpark_stop(c, job);
  }
  if (st.used + n > st.gpus)
    c.violation(fmt::format("job {} placed on {} with only {} free", job, gpus_text(n), st.gpus - st.used));
  if (st.mode == static_cast<int>(server_mode::serving))
    c.violation(fmt::format("job {} placed while the server serves inference", job));
  st.used += n;
  st.workers[job] += n;
  if (!st.node) return;
  fill(c, job);
}

void remove_job(const server_ctx& c, uint32_t job) {
  auto& st = c.st();
  auto it = st.workers.find(job);
  if (it == st.workers.end()) {
    c.violation(fmt::format("job {} removed but not here", job));
    return;
  }
  st.used -= it->second;
  const int n = it->second;
  st.workers.erase(it);
  if (!st.node) return;
  st.pending.erase(job);
  if (st.torchrun_jobs.count(job) && st.running.count(job)) {
    // Its node may stay (the same share in the same round): decided by a place, or stopped
    // when the park ends. The scheduler sends a round's removal and placement back to back.
    auto serial = ++st.parks;
    st.parked[job] = {n, serial};
    c.self->delayed_send(c.self, std::chrono::milliseconds(500), park_atom::value, job, serial);
    return;
  }
  st.torchrun_jobs.erase(job);
  for (auto& g : st.gpu_job)
    if (g == job) g = -1;
  st.node->stop(job);
}

/// mode(m): serving, training or down; a lost machine's workers report nothing more, so their
/// jobs stop waiting for them.
void set_mode(const server_ctx& c, int m) {
  auto& st = c.st();
  if (m == static_cast<int>(server_mode::serving) && st.used > 0)
    c.violation(fmt::format("returned to inference with {} still in training use", gpus_text(st.used)));
  if (m == static_cast<int>(server_mode::down) && st.used > 0)
    c.violation(fmt::format("marked lost with {} still held by jobs", gpus_text(st.used)));
  st.mode = m;
  if (m != static_cast<int>(server_mode::down)) return;
  auto gone = std::move(st.running);
  st.running.clear();
  for (auto& [job, ranks] : gone)
    for (auto& [r, launch] : ranks) give_up(c, job, r);
}

} // namespace

server_actor::behavior_type server_behavior(server_actor::stateful_pointer<server_state> self,
                                            std::string name, int gpus, int mode, recorder_actor recorder,
                                            std::shared_ptr<node_link> node) {
  end_run_on_exception(self, recorder);
  self->state.server = std::move(name);
  self->state.gpus = gpus;
  self->state.mode = mode;
  self->state.node = std::move(node);
  if (self->state.node) self->state.gpu_job.assign(static_cast<size_t>(gpus), -1);
  const server_ctx c{self, std::move(recorder)};
  return {
      [c](place_atom, uint32_t job, int n) { place_job(c, job, n); },
      [c](remove_atom, uint32_t job) { remove_job(c, job); },
      [c](changes_atom, const std::vector<uint32_t>& removed, const std::vector<uint32_t>& placed,
          const std::vector<int>& gpus) {
        for (auto job : removed) remove_job(c, job);
        for (size_t i = 0; i < placed.size() && i < gpus.size(); ++i) place_job(c, placed[i], gpus[i]);
      },
      [c](mode_atom, int m) { set_mode(c, m); },
      [c](park_atom, uint32_t job, uint64_t serial) {
        auto pk = c.st().parked.find(job);
        if (pk != c.st().parked.end() && pk->second.serial == serial) unpark_stop(c, job);
      },
      [c](launch_atom, launch_request& r) { on_launch(c, r); },
      [c](wprogress_atom, uint32_t job, uint32_t rank, double work_done) { on_progress(c, job, rank, work_done); },
      [c](wexit_atom, uint32_t job, const worker_exit& e) { on_exit(c, job, e); },
      [c](adopt_atom, uint32_t job, const std::vector<uint32_t>& ranks, const std::vector<uint32_t>& gpus,
          job_actor owner) { adopt(c, job, ranks, gpus, std::move(owner)); },
      [c](reconcile_atom, const std::vector<uint32_t>& jobs, const std::vector<uint32_t>& ranks, uint64_t seen) {
        reconcile(c, jobs, ranks, seen);
      },
  };
}

} // namespace aryl
