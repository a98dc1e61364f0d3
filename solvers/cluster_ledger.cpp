#include "solvers/cluster_ledger.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace aryl {
namespace {

[[noreturn]] void broken(const std::string& what) { throw std::logic_error("ledger: " + what); }

double type_speed(const cluster_ledger& l, int type) {
  auto t = static_cast<size_t>(type);
  return type >= 0 && t < l.params.type_speed.size() ? l.params.type_speed[t] : 0.0;
}

} // namespace

void cluster_ledger::ensure_indexed() const {
  if (indexed_ == servers.size() && indexed_ > 0) return;
  size_t types = 0;
  for (auto& s : servers) types = std::max(types, static_cast<size_t>(s.gpu_type) + 1);
  free_training_.assign(types, {});
  free_loaned_.assign(types, {});
  room_training_.assign(types, {});
  room_loaned_.assign(types, {});
  smallest_.assign(types, 0);
  widest_ = 0;
  capacity_.assign(types, type_capacity{});
  totals_ = {};
  keys_.assign(servers.size(), index_key{});
  dirty_.clear();
  double best = 0, any = 0;
  for (auto& s : servers) {
    auto& m = smallest_[static_cast<size_t>(s.gpu_type)];
    m = m == 0 ? s.gpus : std::min(m, s.gpus);
    widest_ = std::max(widest_, s.gpus);
    any = std::max(any, type_speed(*this, s.gpu_type));
    if (s.home == server_home::training) best = std::max(best, type_speed(*this, s.gpu_type));
    index(s);
  }
  // A job's home type is the fastest of the training servers (of any server when none).
  home_speed_ = best > 0 ? best : (any > 0 ? any : 1.0);
  indexed_ = servers.size();
  flush_index();
}

void cluster_ledger::count(const server_entry& s, bool add) const {
  const int k = add ? 1 : -1;
  auto m = static_cast<size_t>(s.mode);
  totals_.servers[m] += k;
  totals_.gpus[m] += k * s.gpus;
  totals_.busy[m] += k * (s.gpus - s.free);
  if (s.home == server_home::inference) totals_.inference_gpus += k * s.gpus;
  if (s.mode == server_mode::training || s.mode == server_mode::loaned) {
    auto& c = capacity_[static_cast<size_t>(s.gpu_type)];
    const size_t loaned = s.mode == server_mode::loaned ? 1 : 0;
    c.free[loaned] += k * s.free;
    c.room[loaned] += k * (s.free + s.extra);
    c.gpus[loaned] += k * s.gpus;
  }
}

// The totals follow every change at once; the best-fit index only when read, and only for
// servers whose key changed: a rescale releases and takes its servers again, and where the
// counts come back to what they were, the index is not touched.
void cluster_ledger::index(const server_entry& s) const {
  count(s, true);
  auto& k = keys_[static_cast<size_t>(s.id)];
  if (!k.dirty) {
    k.dirty = true;
    dirty_.push_back(s.id);
  }
}

void cluster_ledger::unindex(const server_entry& s) const { count(s, false); }

void cluster_ledger::flush_index() const {
  auto sets = [&](const index_key& k) -> std::pair<std::set<std::pair<int, int>>*, std::set<std::pair<int, int>>*> {
    auto t = static_cast<size_t>(k.type);
    if (k.mode == server_mode::training) return {&free_training_[t], &room_training_[t]};
    if (k.mode == server_mode::loaned) return {&free_loaned_[t], &room_loaned_[t]};
    return {nullptr, nullptr};
  };
  for (int id : dirty_) {
    auto& s = servers[static_cast<size_t>(id)];
    auto& k = keys_[static_cast<size_t>(id)];
    k.dirty = false;
    index_key now{s.gpu_type, s.mode, s.free, s.free + s.extra, true, false};
    if (k.indexed && k.type == now.type && k.mode == now.mode && k.free == now.free && k.room == now.room) continue;
    // Nodes taken out are put back with their new key: no allocation once the index is built.
    auto out = [&](std::set<std::pair<int, int>>* set, int key) {
      if (auto node = set->extract({key, id})) spare_nodes_.push_back(std::move(node));
    };
    auto in = [&](std::set<std::pair<int, int>>* set, int key) {
      if (spare_nodes_.empty()) {
        set->emplace(key, id);
        return;
      }
      auto node = std::move(spare_nodes_.back());
      spare_nodes_.pop_back();
      node.value() = {key, id};
      set->insert(std::move(node));
    };
    if (k.indexed) {
      auto [f, r] = sets(k);
      if (f) {
        out(f, k.free);
        out(r, k.room);
      }
    }
    auto [f, r] = sets(now);
    if (f) {
      if (now.free > 0) in(f, now.free);
      if (now.room > 0) in(r, now.room);
    }
    k = now;
  }
  dirty_.clear();
}

void cluster_ledger::set_mode(int server, server_mode mode) {
  ensure_indexed();
  auto& s = servers.at(static_cast<size_t>(server));
  unindex(s);
  s.mode = mode;
  index(s);
}

int cluster_ledger::best_fit(int type, int gpus, bool loaned, bool with_extras) const {
  return best_fit_if(type, gpus, loaned, with_extras, [](int) { return false; });
}

long cluster_ledger::capacity(int type, bool loaned, bool with_extras) const {
  ensure_indexed();
  if (type < 0 || static_cast<size_t>(type) >= capacity_.size()) return 0;
  auto& c = capacity_[static_cast<size_t>(type)];
  auto& v = with_extras ? c.room : c.free;
  return v[0] + (loaned ? v[1] : 0);
}

long cluster_ledger::type_gpus(int type, bool loaned) const {
  ensure_indexed();
  if (type < 0 || static_cast<size_t>(type) >= capacity_.size()) return 0;
  auto& c = capacity_[static_cast<size_t>(type)];
  return c.gpus[0] + (loaned ? c.gpus[1] : 0);
}

int cluster_ledger::smallest_server(int type) const {
  ensure_indexed();
  return type >= 0 && static_cast<size_t>(type) < smallest_.size() ? smallest_[static_cast<size_t>(type)] : 0;
}

int cluster_ledger::widest_server() const {
  ensure_indexed();
  return widest_;
}

const server_totals& cluster_ledger::totals() const {
  ensure_indexed();
  return totals_;
}

double cluster_ledger::rate(const job_entry& j, const allocation& alloc, int type) const {
  return work_rate(params.model, j.gpus, count_workers(alloc), servers_spanned(alloc),
                   params.type_speed.at(static_cast<size_t>(type)));
}

void cluster_ledger::settle_attained(job_entry& j, sim_time now) {
  if (j.workers > 0 && now > j.attained_since) {
    double dt = (now - j.attained_since).seconds();
    j.attained_gpu_s += j.workers * dt;
    bool loaned = false;
    for (auto& [sid, w] : j.alloc)
      if (servers.at(static_cast<size_t>(sid)).home == server_home::inference) {
        j.on_loaned_s += dt;
        loaned = true;
        break;
      }
    // Called before any rate change, so `progress` still holds this interval's rate, and a
    // `since` past attained_since is an overhead being paid: no progress until then.
    double slow = j.progress.rate < j.requested_rate
                      ? dt
                      : std::clamp((j.progress.since - j.attained_since).seconds(), 0.0, dt);
    j.below_speed_s += slow;
    j.below_speed_gpu_s += j.workers * slow;
    // Work efficiency's parts: every worker is on the allocation's one GPU type, and the work
    // progressed is this interval's rate past any overhead.
    const double overhead = std::clamp((j.progress.since - j.attained_since).seconds(), 0.0, dt);
    const double held = j.workers * dt;
    const double weighted = held * type_speed(*this, j.alloc_type) / j.home_speed;
    const double needed = j.progress.rate * (dt - overhead) * j.gpus / j.home_speed;
    (loaned ? j.loaned_gpu_s : j.training_gpu_s) += held;
    (loaned ? j.loaned_speed_gpu_s : j.training_speed_gpu_s) += weighted;
    (loaned ? j.loaned_needed_gpu_s : j.training_needed_gpu_s) += needed;
  }
  j.attained_since = now;
}

void cluster_ledger::enqueue(job_entry& j) {
  j.status = job_status::queued;
  queued.insert(j.index);
  queued_by_submit.emplace(j.submit.us, j.index);
  queued_by_remaining.emplace(j.predicted_remaining(), j.index);
}

void cluster_ledger::park(uint32_t index) {
  auto& j = jobs.at(index);
  if (j.status != job_status::queued || j.parked) broken("job " + std::to_string(index) + " parked while not queued");
  dequeue(j);
  j.parked = true;
  parked.insert(index);
}

void cluster_ledger::unpark(uint32_t index) {
  auto& j = jobs.at(index);
  if (!j.parked) broken("job " + std::to_string(index) + " unparked while not parked");
  j.parked = false;
  parked.erase(index);
  enqueue(j);
}

void cluster_ledger::set_predicted_work(uint32_t index, double work) {
  auto& j = jobs.at(index);
  if (j.status != job_status::queued || j.parked) {
    if (j.predicted_work != work)
      for (auto& [sid, w] : j.alloc) stoppable_changed(sid);
    j.predicted_work = work;
    return;
  }
  auto node = queued_by_remaining.extract({j.predicted_remaining(), index});
  if (!node) broken("job " + std::to_string(index) + " is queued without its remaining-work key");
  j.predicted_work = work;
  node.value().first = j.predicted_remaining();
  queued_by_remaining.insert(std::move(node));
}

void cluster_ledger::dequeue(const job_entry& j) {
  // A queued job's keys cannot change while it waits; if one did, its entry would be stale.
  if (queued.erase(j.index) + queued_by_submit.erase({j.submit.us, j.index}) +
          queued_by_remaining.erase({j.predicted_remaining(), j.index}) !=
      3)
    broken("job " + std::to_string(j.index) + " left the queue with keys it was not queued under");
}

/// GPUs of `j`'s workers on server `sid` beyond its base (j.base, for `alloc`): 0 unless it
/// is elastic and above its minimum.
int cluster_ledger::extra_on(const job_entry& j, const allocation& alloc, int sid, int w) const {
  if (!j.elastic || count_workers(alloc) <= j.min_workers) return 0;
  for (auto& [bsid, bw] : j.base)
    if (bsid == sid) w -= bw;
  return w;
}

void cluster_ledger::take(uint32_t index, const allocation& alloc) {
  ensure_indexed();
  auto& j = jobs.at(index);
  if (j.elastic) {
    keep_on_fewest(alloc, j.min_workers, j.base);
    // Sized by the job entries' capacity, so it grows when they do: grown a job at a time, it
    // broke up the heap their own growth reuses (24 MB more peak memory on the whole trace).
    if (min_home.size() <= index) min_home.resize(jobs.capacity());
    const bool at_min = alloc.size() == 1 && alloc.front().second == j.min_workers;
    min_home[index] = {at_min ? alloc.front().first : -1, j.min_workers, j.max_workers};
  }
  const int spread = j.elastic && alloc.size() > 1 ? 1 : 0;  // an allocation lists each server once
  for (auto& [sid, w] : alloc) {
    auto& s = servers.at(static_cast<size_t>(sid));
    if (w <= 0 || s.free < w)
      broken("job " + std::to_string(index) + " takes " + std::to_string(w) + " GPUs on " + s.name +
             " with " + std::to_string(s.free) + " free");
    unindex(s);
    s.free -= w;
    s.extra += extra_on(j, alloc, sid, w);
    s.spread_elastic += spread;
    this->index(s);
    s.jobs.insert(index);
    stoppable_changed(sid);
  }
}

void cluster_ledger::stoppable_changed(int sid) const {
  auto i = static_cast<size_t>(sid);
  if (!stoppable_known || i >= stoppable_is_stale.size() || stoppable_is_stale[i]) return;
  stoppable_is_stale[i] = 1;
  stoppable_stale.push_back(sid);
}

void cluster_ledger::release(uint32_t index) {
  auto& j = jobs.at(index);
  ensure_indexed();
  const int spread = j.elastic && j.alloc.size() > 1 ? 1 : 0;
  for (auto& [sid, w] : j.alloc) {
    auto& s = servers.at(static_cast<size_t>(sid));
    unindex(s);
    s.free += w;
    s.extra -= extra_on(j, j.alloc, sid, w);
    s.spread_elastic -= spread;
    this->index(s);
    s.jobs.erase(index);
    stoppable_changed(sid);
    if (s.free > s.gpus) broken("server " + s.name + " freed beyond its size");
  }
  j.alloc.clear();
  j.base.clear();
  j.workers = 0;
}

void cluster_ledger::submit(uint32_t index, sim_time now) {
  auto& j = jobs.at(index);
  if (j.status != job_status::unsubmitted) broken("job " + std::to_string(index) + " submitted twice");
  ensure_indexed();
  const double home = j.gpu_type >= 0 && type_speed(*this, j.gpu_type) > 0 ? type_speed(*this, j.gpu_type) : home_speed_;
  j.requested_rate = work_rate(params.model, j.gpus, j.gpus, 1, home);
  j.home_speed = home;
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
  j.resized_at = now;
  dequeue(j);
  running.insert(index);
  if (j.elastic) running_elastic.insert(index);
  track_extras(j, now, false);
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
  running_elastic.erase(index);
  enqueue(j);
  track_extras(j, now, true);
}

void cluster_ledger::rescale(uint32_t index, const allocation& alloc, sim_time now) {
  auto& j = jobs.at(index);
  if (j.status != job_status::running) broken("job " + std::to_string(index) + " rescaled while not running");
  settle_attained(j, now);
  int before = j.workers;  // release() zeroes it
  release(index);
  take(index, alloc);
  j.alloc = alloc;
  j.workers = count_workers(alloc);
  if (j.workers < before) ++j.scale_ins;
  if (j.workers > before) ++j.scale_outs;
  j.progress.change_rate(now, rate(j, j.alloc, j.alloc_type), params.scale_overhead_s);
  ++j.generation;
  j.resized_at = now;
  track_extras(j, now, j.workers < before);
}

void cluster_ledger::reassign(const std::vector<reassignment>& changes, sim_time now) {
  auto& before = workers_before_;
  before.clear();
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
    j.resized_at = now;
    track_extras(j, now, j.workers < before[i]);
  }
}

void cluster_ledger::finish(uint32_t index, sim_time now) {
  auto& j = jobs.at(index);
  if (j.status == job_status::queued) {
    j.queued_s += (now - j.queued_since).seconds();
    if (j.parked) {
      j.parked = false;
      parked.erase(index);
    } else {
      dequeue(j);
    }
    j.status = job_status::done;
    return;
  }
  if (j.status != job_status::running) broken("job " + std::to_string(index) + " finished while not running");
  settle_attained(j, now);
  j.progress.settle(now);
  release(index);
  j.status = job_status::done;
  running.erase(index);
  running_elastic.erase(index);
  track_extras(j, now, false);
}

hold_stats& cluster_ledger::holds(int type, sim_time now) {
  auto t = static_cast<size_t>(type);
  if (holds_.size() <= t) holds_.resize(t + 1);
  auto& h = holds_[t];
  if (now > h.decayed_at) {
    double f = params.hold_halflife_s > 0 ? std::exp2(-(now - h.decayed_at).seconds() / params.hold_halflife_s) : 1.0;
    h.ended_s *= f;
    h.revoked *= f;
    h.decayed_at = now;
  }
  return h;
}

void cluster_ledger::track_extras(job_entry& j, sim_time now, bool revoked) {
  if (j.extras_type >= 0) {
    auto& h = holds(j.extras_type, now);
    double since = j.extras_since.seconds();
    h.ended_s += now.seconds() - since;
    h.revoked += revoked ? 1 : 0;
    h.open -= 1;
    h.open_since_s -= since;
    j.extras_type = -1;
  }
  if (j.status == job_status::running && j.elastic && j.workers > j.min_workers) {
    auto& h = holds(j.alloc_type, now);
    j.extras_type = j.alloc_type;
    j.extras_since = now;
    h.open += 1;
    h.open_since_s += now.seconds();
  }
}

double cluster_ledger::hold_estimate(int type, sim_time now) const {
  double ended = 0, revoked = 0, open_s = 0;
  if (type >= 0 && static_cast<size_t>(type) < holds_.size()) {
    auto& h = holds_[static_cast<size_t>(type)];
    double f = params.hold_halflife_s > 0 && now > h.decayed_at
                   ? std::exp2(-(now - h.decayed_at).seconds() / params.hold_halflife_s)
                   : 1.0;
    ended = h.ended_s * f;
    revoked = h.revoked * f;
    open_s = std::max(0.0, static_cast<double>(h.open) * now.seconds() - h.open_since_s);
  }
  // The prior is one spell of hold_prior_s, revoked.
  return (ended + open_s + params.hold_prior_s) / (revoked + 1);
}

} // namespace aryl
