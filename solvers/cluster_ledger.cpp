#include "solvers/cluster_ledger.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace aryl {
namespace {

[[noreturn]] void broken(const std::string& what) { throw std::logic_error("ledger: " + what); }

/// Speed of a job's home type: its required type, else the fastest type of the training
/// servers (of any server when there are none).
double home_speed(const cluster_ledger& l, const job_entry& j) {
  auto speed = [&](int type) {
    auto t = static_cast<size_t>(type);
    return type >= 0 && t < l.params.type_speed.size() ? l.params.type_speed[t] : 0.0;
  };
  if (j.gpu_type >= 0 && speed(j.gpu_type) > 0) return speed(j.gpu_type);
  double best = 0, any = 0;
  for (auto& s : l.servers) {
    any = std::max(any, speed(s.gpu_type));
    if (s.home == server_home::training) best = std::max(best, speed(s.gpu_type));
  }
  if (best > 0) return best;
  return any > 0 ? any : 1.0;
}

} // namespace

double cluster_ledger::rate(const job_entry& j, const allocation& alloc, int type) const {
  return work_rate(params.model, j.gpus, count_workers(alloc), servers_spanned(alloc),
                   params.type_speed.at(static_cast<size_t>(type)));
}

void cluster_ledger::settle_attained(job_entry& j, sim_time now) {
  if (j.workers > 0 && now > j.attained_since) {
    double dt = (now - j.attained_since).seconds();
    j.attained_gpu_s += j.workers * dt;
    for (auto& [sid, w] : j.alloc)
      if (servers.at(static_cast<size_t>(sid)).home == server_home::inference) {
        j.on_loaned_s += dt;
        break;
      }
    // Called before any rate change, so `progress` still holds this interval's rate, and a
    // `since` past attained_since is an overhead being paid: no progress until then.
    double slow = j.progress.rate < j.requested_rate
                      ? dt
                      : std::clamp((j.progress.since - j.attained_since).seconds(), 0.0, dt);
    j.below_speed_s += slow;
    j.below_speed_gpu_s += j.workers * slow;
  }
  j.attained_since = now;
}

void cluster_ledger::enqueue(job_entry& j) {
  j.status = job_status::queued;
  queued.insert(j.index);
  queued_by_submit.emplace(j.submit.us, j.index);
  queued_by_remaining.emplace(j.predicted_remaining(), j.index);
}

void cluster_ledger::dequeue(const job_entry& j) {
  // A queued job's keys cannot change while it waits; if one did, its entry would be stale.
  if (queued.erase(j.index) + queued_by_submit.erase({j.submit.us, j.index}) +
          queued_by_remaining.erase({j.predicted_remaining(), j.index}) !=
      3)
    broken("job " + std::to_string(j.index) + " left the queue with keys it was not queued under");
}

void cluster_ledger::count_extras(const job_entry& j, const allocation& alloc, int sign) {
  if (!j.elastic || count_workers(alloc) <= j.min_workers) return;
  keep_on_fewest(alloc, j.min_workers, base_scratch_);
  for (auto& [sid, w] : alloc) {
    int extra = w;
    for (auto& [bsid, bw] : base_scratch_)
      if (bsid == sid) extra -= bw;
    servers[static_cast<size_t>(sid)].extra += sign * extra;
  }
}

void cluster_ledger::take(uint32_t index, const allocation& alloc) {
  for (auto& [sid, w] : alloc) {
    auto& s = servers.at(static_cast<size_t>(sid));
    if (w <= 0 || s.free < w)
      broken("job " + std::to_string(index) + " takes " + std::to_string(w) + " GPUs on " + s.name +
             " with " + std::to_string(s.free) + " free");
    s.free -= w;
    s.jobs.insert(index);
  }
  count_extras(jobs.at(index), alloc, +1);
}

void cluster_ledger::release(uint32_t index) {
  auto& j = jobs.at(index);
  count_extras(j, j.alloc, -1);
  for (auto& [sid, w] : j.alloc) {
    auto& s = servers.at(static_cast<size_t>(sid));
    s.free += w;
    s.jobs.erase(index);
    if (s.free > s.gpus) broken("server " + s.name + " freed beyond its size");
  }
  j.alloc.clear();
  j.workers = 0;
}

void cluster_ledger::submit(uint32_t index, sim_time now) {
  auto& j = jobs.at(index);
  if (j.status != job_status::unsubmitted) broken("job " + std::to_string(index) + " submitted twice");
  j.requested_rate = work_rate(params.model, j.gpus, j.gpus, 1, home_speed(*this, j));
  j.progress.since = now;
  j.attained_since = now;
  j.queued_since = now;
  enqueue(j);
}

void cluster_ledger::start(uint32_t index, const allocation& alloc, int type, sim_time now) {
  auto& j = jobs.at(index);
  if (j.status != job_status::queued) broken("job " + std::to_string(index) + " started while not queued");
  take(index, alloc);
  j.alloc = alloc;
  j.workers = count_workers(alloc);
  j.alloc_type = type;
  double overhead = j.preemptions > 0 ? params.restart_overhead_s : 0.0;
  j.progress.change_rate(now, rate(j, j.alloc, type), overhead);
  j.attained_since = now;
  j.queued_s += (now - j.queued_since).seconds();
  if (!j.started_once) {
    j.started_once = true;
    j.first_start = now;
  }
  ++j.generation;
  j.status = job_status::running;
  dequeue(j);
  running.insert(index);
}

void cluster_ledger::preempt(uint32_t index, sim_time now) {
  auto& j = jobs.at(index);
  if (j.status != job_status::running) broken("job " + std::to_string(index) + " preempted while not running");
  settle_attained(j, now);
  j.progress.change_rate(now, 0, 0);
  release(index);
  ++j.preemptions;
  ++j.generation;
  j.queued_since = now;
  running.erase(index);
  enqueue(j);
}

void cluster_ledger::rescale(uint32_t index, const allocation& alloc, sim_time now) {
  auto& j = jobs.at(index);
  if (j.status != job_status::running) broken("job " + std::to_string(index) + " rescaled while not running");
  settle_attained(j, now);
  release(index);
  int before = j.workers;
  take(index, alloc);
  j.alloc = alloc;
  j.workers = count_workers(alloc);
  if (j.workers < before) ++j.scale_ins;
  if (j.workers > before) ++j.scale_outs;
  j.progress.change_rate(now, rate(j, j.alloc, j.alloc_type), params.scale_overhead_s);
  ++j.generation;
}

void cluster_ledger::reassign(const std::vector<reassignment>& changes, sim_time now) {
  std::vector<int> before;
  for (auto& c : changes) {
    auto& j = jobs.at(c.job);
    if (j.status != job_status::running) broken("job " + std::to_string(c.job) + " reassigned while not running");
    settle_attained(j, now);
    before.push_back(j.workers);
    release(c.job);
  }
  for (size_t i = 0; i < changes.size(); ++i) {
    auto& c = changes[i];
    auto& j = jobs[c.job];
    take(c.job, c.alloc);
    j.alloc = c.alloc;
    j.workers = count_workers(c.alloc);
    bool moved = c.type != j.alloc_type;
    j.alloc_type = c.type;
    if (j.workers < before[i]) ++j.scale_ins;
    if (j.workers > before[i]) ++j.scale_outs;
    if (moved) ++j.migrations;
    j.progress.change_rate(now, rate(j, j.alloc, j.alloc_type),
                           moved ? params.restart_overhead_s : params.scale_overhead_s);
    ++j.generation;
  }
}

void cluster_ledger::finish(uint32_t index, sim_time now) {
  auto& j = jobs.at(index);
  if (j.status == job_status::queued) {
    j.queued_s += (now - j.queued_since).seconds();
    dequeue(j);
    j.status = job_status::done;
    return;
  }
  if (j.status != job_status::running) broken("job " + std::to_string(index) + " finished while not running");
  settle_attained(j, now);
  j.progress.settle(now);
  release(index);
  j.status = job_status::done;
  running.erase(index);
}

} // namespace aryl
