#include "solvers/round_planner.hpp"

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "solvers/plural.hpp"
#include "solvers/round/round_context.hpp"

namespace aryl {

namespace detail {

bool usable_for(const server_entry& s, const job_entry& j, const policy_spec& p, const planner_options& o) {
  if (s.mode == server_mode::training) return true;
  return s.mode == server_mode::loaned && p.loaning && (j.elastic || o.inelastic_on_loaned);
}

std::vector<uint32_t> ranked(const cluster_ledger& l, const std::vector<uint32_t>& ids, const policy_spec& p,
                             const planner_options& o, sim_time now) {
  std::vector<std::pair<double, uint32_t>> keyed;
  keyed.reserve(ids.size());
  for (auto id : ids) keyed.emplace_back(priority_key(l.jobs[id], p, o, now), id);
  std::sort(keyed.begin(), keyed.end());
  std::vector<uint32_t> out;
  out.reserve(keyed.size());
  for (auto& kv : keyed) out.push_back(kv.second);
  return out;
}

} // namespace detail

namespace {

using detail::ranked;
using detail::usable_for;

int base_demand(const job_entry& j, const policy_spec& p) {
  return (p.elastic && j.elastic) ? j.min_workers : j.gpus;
}

/// The servers a job may use, with their free GPUs as the ledger has them (or all free,
/// for the what-if pass of preemptive policies).
std::vector<server_slot> slots_for(const cluster_ledger& l, const job_entry& j, const policy_spec& p,
                                   const planner_options& o, bool all_free) {
  std::vector<server_slot> out;
  out.reserve(l.servers.size());
  for (auto& s : l.servers)
    if (usable_for(s, j, p, o)) out.push_back({s.id, s.gpu_type, s.gpus, all_free ? s.gpus : s.free});
  return out;
}

/// place_one's consolidated rule for a request that fits one server of every type tried,
/// answered from the ledger's free-GPU index instead of a scan of every server: each type
/// ascending (or the required one), best fit among the servers the job may use. nullopt
/// when the index cannot answer (another rule applies); {} when nothing fits.
std::optional<std::optional<std::pair<allocation, int>>> place_indexed(const cluster_ledger& l, const job_entry& j,
                                                                       const policy_spec& p,
                                                                       const planner_options& o) {
  if (o.placement != placement_mode::consolidated) return std::nullopt;
  const int demand = base_demand(j, p);
  const bool loaned = p.loaning && (j.elastic || o.inelastic_on_loaned);
  const int types = static_cast<int>(l.params.type_speed.size());
  const int first = j.gpu_type >= 0 ? j.gpu_type : 0, last = j.gpu_type >= 0 ? j.gpu_type : types - 1;
  for (int t = first; t <= last; ++t) {
    const int smallest = l.smallest_server(t);
    if (smallest == 0) continue;  // no server of the type: place_one skips it too
    if (demand < 1 || demand > smallest) return std::nullopt;
  }
  for (int t = first; t <= last; ++t) {
    int sid = l.best_fit(t, demand, loaned);
    if (sid >= 0) return std::optional<std::pair<allocation, int>>{{allocation{{sid, demand}}, t}};
  }
  return std::optional<std::pair<allocation, int>>{};
}

std::optional<std::pair<allocation, int>> try_place(const cluster_ledger& l, const job_entry& j,
                                                   const policy_spec& p, const planner_options& o) {
  if (auto fast = place_indexed(l, j, p, o)) return *fast;
  auto slots = slots_for(l, j, p, o, false);
  place_request req{static_cast<int>(j.index), base_demand(j, p), j.gpu_type, {}};
  auto a = place_one(o.placement, slots, req);
  if (!a) return std::nullopt;
  int type = l.servers.at(static_cast<size_t>(a->front().first)).gpu_type;
  return std::make_pair(std::move(*a), type);
}

const char* policy_reason(const policy_spec& p) {
  switch (p.order) {
    case queue_order::fifo: return "first in queue order that fits";
    case queue_order::sjf: return "shortest predicted job that fits";
    case queue_order::srtf: return "shortest remaining time";
    case queue_order::las: return "least attained service";
  }
  return "";
}

void start_job(cluster_ledger& l, std::vector<decision>& out, uint32_t id, allocation alloc, int type,
               sim_time now, std::string why) {
  l.start(id, alloc, type, now);
  out.push_back({decision::kind::start, id, std::move(alloc), {}, type, std::move(why)});
}

/// Non-preemptive phase 1: queued jobs in policy order; a job that does not fit blocks the
/// rest unless backfilling is on.
void place_queue(cluster_ledger& l, const policy_spec& p, const planner_options& o, sim_time now,
                 detail::queue_walk& walk, std::vector<decision>& out) {
  detail::walk_queue(l, p, walk, [&](uint32_t id) {
    auto placed = try_place(l, l.jobs[id], p, o);
    if (!placed) return detail::quota_reclaim_rigid(l, p, o, id, now, walk.books, out, policy_reason(p)) || backfills(p, o);
    start_job(l, out, id, std::move(placed->first), placed->second, now, policy_reason(p));
    return true;
  });
}

/// Preemptive phase 1: rank queued and running jobs together, choose the set that fits an
/// empty cluster in rank order, preempt running jobs outside it, then start the chosen
/// queued jobs on the GPUs actually free (running jobs are not moved).
void place_preemptive(cluster_ledger& l, const policy_spec& p, const planner_options& o, sim_time now,
                      std::vector<decision>& out) {
  std::vector<uint32_t> ids(l.queued.begin(), l.queued.end());
  ids.insert(ids.end(), l.running.begin(), l.running.end());
  auto order = ranked(l, ids, p, o, now);

  std::vector<uint32_t> chosen;
  std::vector<char> keep(l.jobs.size(), 0);
  {
    // One what-if view per eligibility: training-only or training+loaned.
    std::vector<server_slot> view_all, view_train;
    for (auto& s : l.servers) {
      if (s.mode == server_mode::training) {
        view_all.push_back({s.id, s.gpu_type, s.gpus, s.gpus});
        view_train.push_back({s.id, s.gpu_type, s.gpus, s.gpus});
      } else if (s.mode == server_mode::loaned && p.loaning) {
        view_all.push_back({s.id, s.gpu_type, s.gpus, s.gpus});
      }
    }
    for (auto id : order) {
      auto& j = l.jobs[id];
      bool wide = p.loaning && (j.elastic || o.inelastic_on_loaned);
      auto& view = wide ? view_all : view_train;
      place_request req{static_cast<int>(id), base_demand(j, p), j.gpu_type, {}};
      auto a = place_one(o.placement, view, req);
      if (!a) continue;
      // Keep both views consistent: a slot taken in one is taken in the other.
      auto& other = wide ? view_train : view_all;
      for (auto& [sid, w] : *a)
        for (auto& s : other)
          if (s.id == sid) s.free -= w;
      keep[id] = 1;
      chosen.push_back(id);
    }
  }
  std::vector<uint32_t> running(l.running.begin(), l.running.end());
  for (auto id : running) {
    if (keep[id]) continue;
    auto before = l.jobs[id].alloc;
    l.preempt(id, now);
    out.push_back({decision::kind::preempt, id, {}, std::move(before), -1,
                   std::string("preempted for higher-priority jobs (") + policy_reason(p) + ")"});
  }
  for (auto id : chosen) {
    if (l.jobs[id].status != job_status::queued) continue;
    auto placed = try_place(l, l.jobs[id], p, o);
    if (!placed) continue;
    start_job(l, out, id, std::move(placed->first), placed->second, now, policy_reason(p));
  }
}

/// GPUs of types `first`..`last` as queue_wait_reason weighs them, each the best single type
/// (a job's workers share one GPU type): on servers open to the job, with loaned servers too,
/// with drained or cordoned ones too, free on those; and the servers lost.
struct type_gpus {
  long usable = 0, with_loaned = 0, with_held = 0, free_held = 0;
  int lost = 0;
};
type_gpus count_type_gpus(const cluster_ledger& l, int first, int last, bool may_loan) {
  type_gpus c;
  for (int t = first; t <= last; ++t) {
    long here = 0, lent = 0, held = 0, held_free = 0;
    for (auto& s : l.servers) {
      if (s.gpu_type != t) continue;
      if (s.mode == server_mode::training) here += s.gpus;
      else if (s.mode == server_mode::loaned) lent += s.gpus;
      else if (s.mode == server_mode::down) ++c.lost;
      else if (s.mode == server_mode::cordoned) {
        held += s.gpus;
        held_free += s.free;
      }
    }
    c.usable = std::max(c.usable, here + (may_loan ? lent : 0));
    c.with_loaned = std::max(c.with_loaned, here + lent);
    c.with_held = std::max(c.with_held, here + (may_loan ? lent : 0) + held);
    c.free_held = std::max(c.free_held, held_free);
  }
  return c;
}

/// Under a strict queue order (a non-preemptive policy without backfill): "behind job N in
/// queue order" when job `job` is not the queue's head.
std::optional<std::string> behind_in_queue(const cluster_ledger& l, const policy_spec& p, const planner_options& o,
                                           uint32_t job) {
  if (p.preemptive || backfills(p, o)) return std::nullopt;
  std::optional<uint32_t> head;
  detail::queue_walk walk;
  detail::walk_queue(l, p, walk, [&](uint32_t id) {
    head = id;
    return false;
  });
  if (!head || *head == job) return std::nullopt;
  std::string out = "behind job ";
  out += std::to_string(*head);
  out += " in queue order (";
  out += p.name;
  out += ')';
  return out;
}

/// The servers held for the job queued longest (reserve_after_s or reserve_stretch).
std::string held_for_text(const cluster_ledger& l, const planner_options& o) {
  std::string out = "GPUs held for job ";
  out += std::to_string(l.reserved_for);
  const bool after = o.reserve_after_s > 0 && l.jobs.at(l.reserved_for).waited_s(l.round_at) >= o.reserve_after_s;
  out += after ? " (queued past scheduler.reserve_after_s) on"
               : " (queued past scheduler.reserve_stretch x its predicted run) on";
  for (int sid : l.reserved_servers) {
    out += ' ';
    out += l.servers.at(static_cast<size_t>(sid)).name;
  }
  return out;
}

/// With quotas: why the admission the round's queue walk applies (walk_tenants, on the same
/// books) refuses `base` GPUs of job `j`; nothing when it admits them.
std::optional<std::string> quota_refusal(const cluster_ledger& l, const policy_spec& p, const job_entry& j, int base,
                                         bool may_loan) {
  if (!l.params.quotas) return std::nullopt;
  detail::tenant_round books;
  detail::begin_tenant_round(l, p, books);
  if (detail::quota_admits(l, books, j, base)) return std::nullopt;
  auto t = static_cast<size_t>(j.tenant);
  auto& e = l.tenants[t];
  std::string out = e.name.empty() ? std::string("quota: no tenant") : "quota: tenant " + e.name;
  out += e.quota > 0 ? " holds " + std::to_string(books.held[t]) + " of its quota " + std::to_string(e.quota)
                     : " has no quota";
  out += e.borrow ? ", and " + std::to_string(std::max(0L, books.lendable)) + " GPUs are free to borrow (needs " +
                        std::to_string(base) + ")"
                  : " and may not borrow";
  if (p.loaning && may_loan &&
      std::any_of(l.servers.begin(), l.servers.end(), [](auto& s) { return s.mode == server_mode::loaned; }))
    out += "; no loaned server has room for it";
  return out;
}

} // namespace

std::string queue_wait_reason(const cluster_ledger& l, const policy_spec& p, const planner_options& o,
                              uint32_t job, const std::vector<std::string>& type_names) {
  auto& j = l.jobs.at(job);
  const int base = base_demand(j, p);
  const bool may_loan = p.loaning && (j.elastic || o.inelastic_on_loaned);
  const bool loans = p.loaning && !may_loan;  // loaned servers exist, for other jobs only
  const int types = static_cast<int>(l.params.type_speed.size());
  const int first = j.gpu_type >= 0 ? j.gpu_type : 0, last = j.gpu_type >= 0 ? j.gpu_type : types - 1;
  const auto [usable, with_loaned, with_held, free_held, lost] = count_type_gpus(l, first, last, may_loan);
  std::string out;
  auto needs = [&](const char* head) {
    out += head;
    out += ": needs ";
    out += gpus_text(base);
    if (j.gpu_type >= 0) {
      out += " of type ";
      out += type_names.at(static_cast<size_t>(j.gpu_type));
    }
  };
  auto lost_note = [&] {
    if (lost == 0) return;
    out += " (";
    out += std::to_string(lost);
    out += " lost)";
  };
  const char* no_fit = may_loan ? "no fit on training or loaned servers" : "no fit on training servers";
  // Servers an operator drained or cordoned would hold it: they, not the cluster, keep it waiting.
  auto drained = [&](long have, long with) {
    needs("drained");
    out += ", servers open to it have ";
    out += std::to_string(have);
    out += ", drained or cordoned ones ";
    out += std::to_string(with - have);
    out += " more";
  };
  if (usable < base && with_held >= base) {
    drained(usable, with_held);
    return out;
  }
  if (usable < base) {
    if (loans && with_loaned >= base) {
      needs("loaned servers are for elastic jobs");
      out += ", training servers have ";
      out += std::to_string(usable);
      return out;
    }
    needs(no_fit);
    out += ", they have ";
    out += std::to_string(usable);
    out += " in all";
    lost_note();
    return out;
  }
  if (auto behind = behind_in_queue(l, p, o, job)) return *behind;
  long room = 0, room_loaned = 0;
  for (int t = first; t <= last; ++t) {
    room = std::max(room, l.capacity(t, may_loan, p.elastic));
    room_loaned = std::max(room_loaned, l.capacity(t, true, p.elastic));
  }
  auto takes = [&] {
    out += std::to_string(room);
    out += p.elastic ? " free or held by extra workers" : " free";
  };
  if (room < base && room + free_held >= base) {
    needs("drained");
    out += ", ";
    takes();
    out += ", and drained or cordoned servers ";
    out += std::to_string(free_held);
    out += " free";
    return out;
  }
  if (room < base) {
    if (loans && room_loaned >= base) {
      needs("loaned servers are for elastic jobs");
      out += ", ";
      takes();
      out += " on training servers";
      return out;
    }
    needs(no_fit);
    out += ", ";
    takes();
    lost_note();
    return out;
  }
  if (!p.elastic && !try_place(l, j, p, o)) {
    out = no_fit;
    out += ": ";
    out += gpus_text(room);
    out += " free, not placeable together";
    return out;
  }
  if (!l.reserved_servers.empty() && job != l.reserved_for) return held_for_text(l, o);
  if (auto refused = quota_refusal(l, p, j, base, may_loan)) return *refused;
  if (p.preemptive) {
    out = "ranked behind the running jobs (";
    out += p.name;
    out += ')';
    return out;
  }
  return "fits now: the next round starts it";
}

double priority_key(const job_entry& j, const policy_spec& p,
                    const planner_options& o, sim_time now) {
  switch (p.order) {
    case queue_order::fifo:
      return static_cast<double>(j.submit.us);
    case queue_order::sjf:
    case queue_order::srtf:
      // Predicted remaining seconds at the job's requested workers on speed-1.0 GPUs.
      return std::max(0.0, j.predicted_work - j.progress.done_at(now));
    case queue_order::las: {
      double attained = j.attained_gpu_s;
      if (j.workers > 0 && now > j.attained_since) attained += j.workers * (now - j.attained_since).seconds();
      double level = 0;
      for (double t : o.las_thresholds)
        if (attained >= t) level += 1;
      // Within a level, first come first served (Tiresias' discretised 2D-LAS).
      return level * 1e15 + static_cast<double>(j.submit.us) / 1e6;
    }
  }
  return 0;
}

bool freed_may_resize(const cluster_ledger& l, const policy_spec& p, const planner_options& o,
                      const allocation& servers) {
  if (!p.elastic) return true;
  auto& m = l.params.model;
  auto speed = [&](int type) { return l.params.type_speed.at(static_cast<size_t>(type)); };
  double fastest_freed = 0;
  for (auto& [sid, w] : servers) {
    auto& s = l.servers.at(static_cast<size_t>(sid));
    fastest_freed = std::max(fastest_freed, speed(s.gpu_type));
    for (auto id : s.jobs)
      if (l.jobs[id].elastic && l.jobs[id].workers < l.jobs[id].max_workers) return true;
  }
  for (auto id : l.running_elastic) {
    auto& j = l.jobs[id];
    if (j.alloc.size() > 1 && o.consolidate) return true;
    if (o.migrate && speed(j.alloc_type) < fastest_freed) return true;
    if (j.workers >= j.max_workers) continue;
    // One more worker on a second server: if even that size passes the floor, growth is not
    // bound to the job's own servers.
    const int w = j.workers + 1;
    const double r_min = work_rate(m, j.gpus, j.min_workers, std::max(servers_spanned(j.base), 1), 1.0);
    if (!(work_rate(m, j.gpus, w, 2, 1.0) * j.min_workers < o.min_extra_efficiency * r_min * w)) return true;
  }
  for (auto id : l.queued)
    if (l.jobs[id].elastic && l.jobs[id].max_workers > l.jobs[id].min_workers) return true;
  return false;
}

std::vector<decision> plan_round(cluster_ledger& l, const policy_spec& p, const planner_options& o,
                                 sim_time now, round_scope scope) {
  round_context c;
  return plan_round(l, p, o, now, c, scope);
}

std::vector<decision> plan_round(cluster_ledger& l, const policy_spec& p, const planner_options& o,
                                 sim_time now, round_context& c, round_scope scope) {
  std::vector<decision> out;
  c.recycle();
  l.round_at = now;
  // walk_queue knows the orders of the non-preemptive policies only.
  if (!p.preemptive && p.order != queue_order::fifo && p.order != queue_order::sjf)
    throw std::invalid_argument("policy " + p.name + ": a non-preemptive policy must rank by fifo or sjf");
  if (plans_by_scope(p) && scope == round_scope::local)
    detail::plan_local(l, p, o, now, c, out);
  else if (plans_by_scope(p))
    detail::plan_elastic(l, p, o, now, c, out, scope == round_scope::starts);
  else if (p.preemptive)
    place_preemptive(l, p, o, now, out);
  else
    place_queue(l, p, o, now, c.walk, out);
  return out;
}

} // namespace aryl
