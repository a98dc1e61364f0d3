// Rounds of policies with elastic scaling (DESIGN.md section 3), planned on a working copy of
// the free GPUs in which every elastic job's workers above its minimum count as free:
//  1. base demand of queued jobs in queue order (min workers for elastic jobs), so a queued
//     job never waits for GPUs that only extend an elastic job;
//  2. when the queue is empty, elastic jobs on slower GPU types move to faster free ones if
//     the move pays for its restart;
//  3. the free GPUs of each type go to elastic jobs by the multiple-choice knapsack on JCT
//     reductions, where keeping a job's current size costs nothing and changing it costs the
//     scaling overhead, each size valued at the rate of the servers its extras will span;
//  4. extra workers go on the fewest servers that hold them;
//  5. the result is diffed against the ledger: only jobs whose allocation changes get a
//     decision, applied as one batch.
// A local round (between scale rounds) does step 1 only, and scales in just the jobs whose
// extra workers' GPUs it takes.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <tuple>

#include "solvers/extra_placement.hpp"
#include "solvers/jct_value.hpp"
#include "solvers/round_planner.hpp"
#include "solvers/small_sort.hpp"

namespace aryl::detail {
namespace {

/// Adds `b`'s workers to `a`, which stays sorted by server.
void merge_into(allocation& a, const allocation& b) {
  for (auto& [sid, w] : b) {
    auto it = std::find_if(a.begin(), a.end(), [sid = sid](auto& p) { return p.first == sid; });
    if (it == a.end()) a.emplace_back(sid, w);
    else it->second += w;
  }
  std::sort(a.begin(), a.end());
}

/// Free GPUs per server as a round plans them. A view starts as the ledger has it (really
/// free GPUs, plus those of extra workers when `with_extras`) and records only the servers
/// the round changes, so that a round touching a few servers costs no pass over all of them.
struct work_view {
  const cluster_ledger& l;
  std::vector<int>& vals;        ///< by server id, where stamp == epoch
  std::vector<uint32_t>& stamp;  ///< by server id
  std::vector<int>& touched;     ///< servers changed this round, in the order changed
  uint32_t& epoch;               ///< this round's stamp (kept between rounds with the stamps)
  bool with_extras = false;

  /// A fresh view of the ledger as it is now.
  void reset(bool extras) {
    with_extras = extras;
    touched.clear();
    if (stamp.size() != l.servers.size()) {
      stamp.assign(l.servers.size(), 0);
      vals.assign(l.servers.size(), 0);
      epoch = 0;
    }
    if (++epoch == 0) {  // wrapped: no stamp may look current
      std::fill(stamp.begin(), stamp.end(), 0);
      epoch = 1;
    }
  }
  /// A server best_fit and capacity look at: of `type`, training, or loaned if `loaned`.
  static bool in_scope(const server_entry& s, int type, bool loaned) {
    return s.gpu_type == type && (s.mode == server_mode::training || (loaned && s.mode == server_mode::loaned));
  }
  int initial(size_t sid) const {
    auto& s = l.servers[sid];
    return s.free + (with_extras ? s.extra : 0);
  }
  int at(int sid) const {
    auto i = static_cast<size_t>(sid);
    return stamp[i] == epoch ? vals[i] : initial(i);
  }
  int& at_mut(int sid) {
    auto i = static_cast<size_t>(sid);
    if (stamp[i] != epoch) {
      stamp[i] = epoch;
      vals[i] = initial(i);
      touched.push_back(sid);
    }
    return vals[i];
  }

  /// The servers `j` may use (of `only_type` if set) with their free GPUs in this view, into
  /// `out`.
  std::vector<server_slot>& slots(const job_entry& j, const policy_spec& p, const planner_options& o,
                                  int only_type, std::vector<server_slot>& out) const {
    out.clear();
    for (auto& s : l.servers)
      if ((only_type < 0 || s.gpu_type == only_type) && usable_for(s, j, p, o))
        out.push_back({s.id, s.gpu_type, s.gpus, at(s.id)});
    return out;
  }
  /// What place_one's consolidated rule picks for a request of `gpus` that fits one server
  /// of `type` (the fewest free >= gpus, ties lowest id), from the ledger's index for the
  /// servers this round has not changed and a look at those it has.
  int best_fit(int type, int gpus, bool loaned) const {
    int best = l.best_fit_if(type, gpus, loaned, with_extras,
                             [&](int sid) { return stamp[static_cast<size_t>(sid)] == epoch; });
    std::pair<int, int> key{best >= 0 ? at(best) : 0, best};
    for (int sid : touched) {
      if (!in_scope(l.servers[static_cast<size_t>(sid)], type, loaned)) continue;
      std::pair<int, int> k{vals[static_cast<size_t>(sid)], sid};
      if (k.first >= gpus && (key.second < 0 || k < key)) key = k;
    }
    return key.second;
  }
  /// Free GPUs of `type` in this view on the servers best_fit looks at.
  long capacity(int type, bool loaned) const {
    long c = l.capacity(type, loaned, with_extras);
    for (int sid : touched) {
      if (in_scope(l.servers[static_cast<size_t>(sid)], type, loaned))
        c += vals[static_cast<size_t>(sid)] - initial(static_cast<size_t>(sid));
    }
    return c;
  }
  void take(const allocation& a) {
    for (auto& [sid, w] : a) at_mut(sid) -= w;
  }
  void give(const allocation& a) {
    for (auto& [sid, w] : a) at_mut(sid) += w;
  }
};

int type_of(const cluster_ledger& l, const allocation& a) {
  return l.servers.at(static_cast<size_t>(a.front().first)).gpu_type;
}

double speed(const cluster_ledger& l, int type) { return l.params.type_speed.at(static_cast<size_t>(type)); }

/// GPU types to try, fastest first (ties: lower id); just `required` when it is set; into `out`.
void types_by_speed(const cluster_ledger& l, int required, std::vector<int>& out) {
  out.clear();
  if (required >= 0) {
    out.push_back(required);
    return;
  }
  for (size_t i = 0; i < l.params.type_speed.size(); ++i) out.push_back(static_cast<int>(i));
  small_stable_sort(out.begin(), out.end(), [&](int a, int b) { return speed(l, a) > speed(l, b); });
}

/// Calls f(server, workers) for each server where `a` has workers beyond those in `base`.
template <class F>
void for_each_extra(const allocation& a, const allocation& base, F f) {
  for (auto [sid, w] : a) {
    for (auto& [bsid, bw] : base)
      if (bsid == sid) w -= bw;
    if (w > 0) f(sid, w);
  }
}

/// An elastic job in this round: its base allocation and where it stands.
struct elastic_plan {
  uint32_t job = 0;
  allocation base;
  int type = -1;
  int current = 0;      ///< workers now (min for a job started this round)
  bool started = false; ///< started this round
  allocation final;     ///< its allocation after this round
  bool frozen = false;  ///< keeps its allocation: within its cooldown and all its GPUs there
  /// What justified its change, for the decision's reason (seconds of predicted JCT): the
  /// net gain over keeping its size (after cost and margin), the cost (overhead and
  /// checkpoint; a move's restart), and the holding time the values assumed (0: to the end).
  /// `forced`: queued base demand took GPUs of its extra workers, so it changes anyway.
  double net_s = 0, cost_s = 0, hold_s = 0;
  bool forced = false;
  bool preempted = false;  ///< preempted this round for a shorter queued job
};

/// Server ids of `a`, most workers first (ties: as listed, i.e. lowest id), into `out`.
void by_workers(const allocation& a, allocation& scratch, std::vector<int>& out) {
  scratch.assign(a.begin(), a.end());
  small_stable_sort(scratch.begin(), scratch.end(), [](auto& x, auto& y) { return x.second > y.second; });
  out.clear();
  for (auto& [sid, w] : scratch) out.push_back(sid);
}

/// Where `extra` workers of plan `e` may go, into `req`: filling its base servers spans
/// nothing new; among new servers, those its current extras are on (same type) keep workers
/// in place.
void extras_for(const elastic_plan& e, const job_entry& j, int extra, allocation& scratch, extras_request& req) {
  req.gpus = extra;
  req.gpu_type = e.type;
  by_workers(e.base, scratch, req.home);
  scratch.clear();
  if (!e.started && e.type == j.alloc_type)
    for_each_extra(j.alloc, e.base, [&](int sid, int w) { scratch.emplace_back(sid, w); });
  thread_local allocation order;
  by_workers(scratch, order, req.occupied);
}

struct start {
  uint32_t job;
  allocation alloc;
  long plan;  ///< its elastic plan, or -1
};

/// A running job preempted this round for a queued one, and why.
struct victim {
  uint32_t job;
  std::string why;
};

/// A round's working arrays, kept between rounds (one set per thread) so that an instant
/// does not allocate and free arrays the size of the cluster and of the running jobs. No
/// content outlives its round: every use starts from clear().
struct round_buffers {
  std::vector<int> free_view, free_hard, touched_view, touched_hard;
  std::vector<uint32_t> stamp_view, stamp_hard;
  uint32_t epoch_view = 0, epoch_hard = 0;
  std::vector<int> changed;
  std::vector<elastic_plan> plans;
  std::vector<start> starts;
  std::vector<victim> victims;
  std::vector<std::pair<double, uint32_t>> candidates;  ///< (-predicted remaining s, job)
  std::vector<std::tuple<long, int, int>> preempt_options;
  std::vector<std::vector<uint32_t>> server_victims;  ///< by server id
  mckp_input in;
  std::vector<size_t> class_plan;
  std::vector<uint32_t> losers;  ///< a local round's jobs with extra workers on one server
  std::vector<std::pair<size_t, int>> still_needed;
  std::vector<std::pair<double, size_t>> slow;  ///< step 2's candidates
  std::vector<long> hard_type_free, view_type_free;
  mckp_result sol;
  std::vector<std::vector<server_slot>> extra_slots;  ///< step 4's servers with GPUs left, by type
  std::vector<char> listed;                           ///< ... whether listed this round
  extras_request extras;
  allocation placed, scratch;
  std::vector<cluster_ledger::reassignment> changes;
  extras_request home_only;
  std::vector<server_slot> slots;
  std::vector<std::vector<server_slot>> ranking;  ///< by GPU type
  std::vector<int> spans, types;
  std::vector<double> hold_by_type;  ///< the ledger's holding-time estimate, this round
  allocation base, kept;
  /// Vectors of last round's plans and knapsack classes, emptied, for this round's.
  std::vector<allocation> spare_allocs;
  std::vector<std::vector<mckp_item>> spare_items;

  allocation spare_alloc() {
    if (spare_allocs.empty()) return {};
    auto a = std::move(spare_allocs.back());
    spare_allocs.pop_back();
    a.clear();
    return a;
  }
  std::vector<mckp_item> spare_item_list() {
    if (spare_items.empty()) return {};
    auto v = std::move(spare_items.back());
    spare_items.pop_back();
    v.clear();
    return v;
  }
  void recycle() {
    for (auto& e : plans) {
      spare_allocs.push_back(std::move(e.base));
      spare_allocs.push_back(std::move(e.final));
    }
    plans.clear();
    for (auto& c : in.classes) spare_items.push_back(std::move(c.items));
    in.classes.clear();
  }
};
thread_local round_buffers buffers;

/// Without elastic scaling (loan-only) a job's base is its whole allocation: it only moves.
int base_workers(const job_entry& j, const policy_spec& p) { return p.elastic ? j.min_workers : j.gpus; }

/// A running job's base allocation, into `out`: the ledger keeps it for elastic scaling.
void base_of(const job_entry& j, const policy_spec& p, allocation& out) {
  if (p.elastic && j.elastic) out.assign(j.base.begin(), j.base.end());
  else keep_on_fewest(j.alloc, base_workers(j, p), out);
}

/// The GPU types a queued job tries, in order, into `types`: fastest first, or slowest first
/// for a short elastic job (sum of JCTs is least when the longest jobs run fastest).
void types_for(const cluster_ledger& l, const job_entry& j, const planner_options& o, std::vector<int>& types) {
  types_by_speed(l, j.gpu_type, types);
  if (j.elastic && j.predicted_remaining() < o.short_job_s) std::reverse(types.begin(), types.end());
}

/// GPUs an elastic job's base should find on one server of `type` so that it can grow there
/// (planner_options::base_room_to_grow): its maximum, at most a server; 0 for others.
int grow_room(const cluster_ledger& l, const policy_spec& p, const planner_options& o, const job_entry& j, int type) {
  if (!o.base_room_to_grow || !p.elastic || !j.elastic) return 0;
  return std::min(j.max_workers, l.smallest_server(type));
}

/// Step 1 for one queued job: its base demand on GPUs that are really free (`hard`) if it
/// fits there, so that running jobs are disturbed only when they must be, else on GPUs held
/// by extra workers (`view`). Records the start; false if it fits nowhere.
bool place_base(const cluster_ledger& l, const policy_spec& p, const planner_options& o, uint32_t id,
                work_view& view, work_view& hard) {
  auto& b = buffers;
  auto& j = l.jobs[id];
  std::optional<allocation> a;
  auto& types = b.types;
  types_for(l, j, o, types);
  const int demand = j.elastic ? base_workers(j, p) : j.gpus;
  const bool loaned = p.loaning && (j.elastic || o.inelastic_on_loaned);
  auto try_on = [&](work_view& v, int type) {
    if (o.placement == placement_mode::consolidated && demand >= 1 && demand <= l.smallest_server(type)) {
      const int room = grow_room(l, p, o, j, type);
      int sid = room > demand ? v.best_fit(type, room, loaned) : -1;
      if (sid < 0) sid = v.best_fit(type, demand, loaned);
      if (sid >= 0) a = allocation{{sid, demand}};
      else a.reset();
      return a.has_value();
    }
    if (v.capacity(type, loaned) < demand) {  // most rounds with a blocked queue head: no scan
      a.reset();
      return false;
    }
    auto& slots = v.slots(j, p, o, type, b.slots);
    a = place_one(o.placement, slots, {static_cast<int>(id), demand, type, {}});
    return a.has_value();
  };
  if (o.free_gpus_first) {
    for (int type : types)
      if (try_on(hard, type)) break;
    if (!a)
      for (int type : types)
        if (try_on(view, type)) break;
  } else {
    for (int type : types)
      if (try_on(hard, type) || try_on(view, type)) break;
  }
  if (!a) return false;
  view.take(*a);
  for (auto& [sid, w] : *a) {
    auto& f = hard.at_mut(sid);
    f = std::max(0, f - w);
  }
  long plan = -1;
  if (j.elastic) {
    plan = static_cast<long>(b.plans.size());
    b.plans.push_back(elastic_plan{id, *a, type_of(l, *a), base_workers(j, p), true, {}});
  }
  b.starts.push_back({id, std::move(*a), plan});
  return true;
}

/// Step 1's fallback for queued job `id` whose base demand fits nowhere: preempt running
/// jobs without extra workers (rigid, or elastic at their minimum), each victim's predicted
/// remaining time being above preempt_ratio x (the queued job's predicted run + the
/// victim's restart overhead and checkpoint), and none preempted max_preemptions times
/// already. A demand that fits one server goes on the server where the fewest GPUs must
/// stop; a larger one on whole servers, those where the fewest GPUs must stop first.
/// Longest-remaining victims first on each server. Records the victims and the start; false
/// if the demand cannot be met so.
bool preempt_for(const cluster_ledger& l, const policy_spec& p, const planner_options& o, uint32_t id,
                 work_view& view, work_view& hard) {
  if (o.preempt_ratio <= 0) return false;
  auto& b = buffers;
  auto& q = l.jobs[id];
  const int demand = q.elastic ? base_workers(q, p) : q.gpus;
  const bool loaned = p.loaning && (q.elastic || o.inelastic_on_loaned);
  if (demand < 1) return false;
  auto& types = b.types;
  types_for(l, q, o, types);
  for (int type : types) {
    const bool one_server = demand <= l.smallest_server(type);
    const int span = one_server ? 1 : (demand + std::max(l.smallest_server(type), 1) - 1) / std::max(l.smallest_server(type), 1);
    const double q_run =
        q.predicted_remaining() / work_rate(l.params.model, q.gpus, demand, span, speed(l, type));
    // Per server that can give its share: (victims' GPUs, -GPUs it gives, server), and the
    // victims, in b.server_victims[k].
    auto& opts = b.preempt_options;
    opts.clear();
    b.server_victims.resize(std::max(b.server_victims.size(), l.servers.size()));
    for (auto& s : l.servers) {
      if (!work_view::in_scope(s, type, loaned) || (one_server && s.gpus < demand)) continue;
      const int need = one_server ? demand : s.gpus;
      int have = view.at(s.id);
      auto& cand = b.candidates;
      cand.clear();
      if (have < need)
        for (auto vid : s.jobs) {
          auto& v = l.jobs[vid];
          if (v.status != job_status::running || v.preemptions >= o.max_preemptions) continue;
          if (v.elastic && p.elastic && v.workers > v.min_workers) continue;  // its extras go first
          if (std::any_of(b.victims.begin(), b.victims.end(), [&](auto& x) { return x.job == vid; })) continue;
          double rate = l.rate(v, v.alloc, v.alloc_type);
          if (rate <= 0) continue;
          double v_time = v.predicted_remaining() / rate;
          double cost = l.params.restart_overhead_s + l.checkpoint_time_s(v.workers);
          if (v_time > o.preempt_ratio * (q_run + cost)) cand.emplace_back(-v_time, vid);
        }
      std::sort(cand.begin(), cand.end());  // longest remaining first: they lose least by waiting
      auto& chosen = b.server_victims[static_cast<size_t>(s.id)];
      chosen.clear();
      long gpus = 0;
      for (auto& [neg, vid] : cand) {
        if (have >= need) break;
        auto& v = l.jobs[vid];
        for (auto& [sid, w] : v.alloc)
          if (sid == s.id) have += w;
        gpus += v.workers;
        chosen.push_back(vid);
      }
      if (have < need || (one_server && chosen.empty())) continue;
      opts.push_back({gpus, -std::min(have, need), s.id});
    }
    std::sort(opts.begin(), opts.end());
    // Servers until the demand is met: one for a demand that fits one.
    allocation a;
    int left = demand;
    size_t used = 0;
    for (; used < opts.size() && left > 0; ++used) {
      int give = std::min(left, -std::get<1>(opts[used]));
      a.emplace_back(std::get<2>(opts[used]), give);
      left -= give;
    }
    if (left > 0) continue;
    bool any = false;
    for (size_t k = 0; k < used; ++k)
      any = any || !b.server_victims[static_cast<size_t>(std::get<2>(opts[k]))].empty();
    if (!any) continue;  // it fits without stopping anyone: not this step's to place
    std::sort(a.begin(), a.end());
    for (size_t k = 0; k < used; ++k)
      for (auto vid : b.server_victims[static_cast<size_t>(std::get<2>(opts[k]))]) {
        if (std::any_of(b.victims.begin(), b.victims.end(), [&](auto& x) { return x.job == vid; })) continue;
        auto& v = l.jobs[vid];
        view.give(v.alloc);
        hard.give(v.alloc);
        char buf[256];
        std::snprintf(buf, sizeof buf,
                      "preempted for job %u: its predicted remaining %.0f s exceeds %g x (that job's run %.0f s + "
                      "its restart and checkpoint %.0f s)",
                      id, v.predicted_remaining() / l.rate(v, v.alloc, v.alloc_type), o.preempt_ratio, q_run,
                      l.params.restart_overhead_s + l.checkpoint_time_s(v.workers));
        b.victims.push_back({vid, buf});
        for (auto& e : b.plans)
          if (e.job == vid && !e.started) e.preempted = true;
      }
    view.take(a);
    for (auto& [sid, w] : a) {
      auto& f = hard.at_mut(sid);
      f = std::max(0, f - w);
    }
    long plan = -1;
    if (q.elastic) {
      plan = static_cast<long>(b.plans.size());
      b.plans.push_back(elastic_plan{id, a, type, base_workers(q, p), true, {}});
    }
    b.starts.push_back({id, std::move(a), plan});
    return true;
  }
  return false;
}

/// The views of a round: `view` counts every elastic job's extra workers free, `hard` only
/// the GPUs really free; a full round also plans each elastic job from its base.
void build_views(const cluster_ledger& l, const policy_spec& p, work_view& view, work_view& hard,
                 round_scope scope) {
  auto& b = buffers;
  hard.reset(false);
  view.reset(p.elastic);
  if (scope == round_scope::local) return;
  for (auto id : l.running) {
    auto& j = l.jobs[id];
    if (!j.elastic) continue;
    elastic_plan e{id, b.spare_alloc(), j.alloc_type, j.workers, false, b.spare_alloc()};
    base_of(j, p, e.base);
    b.plans.push_back(std::move(e));
  }
}

/// A queued job's base demand on GPUs really free now, from the ledger (its free-GPU index
/// where the request fits one server), in the order of step 1.
std::optional<std::pair<allocation, int>> place_on_free(const cluster_ledger& l, const policy_spec& p,
                                                        const planner_options& o, const job_entry& j) {
  auto& b = buffers;
  auto& types = b.types;
  types_for(l, j, o, types);
  const int demand = j.elastic ? base_workers(j, p) : j.gpus;
  const bool loaned = p.loaning && (j.elastic || o.inelastic_on_loaned);
  for (int type : types) {
    if (o.placement == placement_mode::consolidated && demand >= 1 && demand <= l.smallest_server(type)) {
      const int room = grow_room(l, p, o, j, type);
      int sid = room > demand ? l.best_fit(type, room, loaned) : -1;
      if (sid < 0) sid = l.best_fit(type, demand, loaned);
      if (sid >= 0) return std::make_pair(allocation{{sid, demand}}, type);
      continue;
    }
    auto& slots = b.slots;
    slots.clear();
    for (auto& s : l.servers)
      if (s.gpu_type == type && usable_for(s, j, p, o)) slots.push_back({s.id, s.gpu_type, s.gpus, s.free});
    if (auto a = place_one(o.placement, slots, {static_cast<int>(j.index), demand, type, {}})) return std::make_pair(std::move(*a), type);
  }
  return std::nullopt;
}

/// Why plan `e` changes job `j` to `workers` workers, with the gain and the cost that
/// justified it (seconds of predicted JCT).
std::string change_reason(const cluster_ledger& l, const elastic_plan& e, const job_entry& j, int workers) {
  char buf[256];
  const char* what = workers > j.workers ? "scale out" : workers < j.workers ? "scale in" : "rebalance";
  if (e.type != j.alloc_type)
    std::snprintf(buf, sizeof buf,
                  "move to faster free GPUs: saves %.0f s of predicted JCT beyond its restart (%.0f s) and margin",
                  e.net_s, e.cost_s);
  else if (e.forced)
    std::snprintf(buf, sizeof buf,
                  "%s: queued base demand took GPUs of its extra workers; its best size left is worth %.0f s "
                  "after its cost (%.0f s)",
                  what, e.net_s, l.params.scale_overhead_s + l.checkpoint_time_s(j.workers));
  else if (e.hold_s > 0)
    std::snprintf(buf, sizeof buf,
                  "%s: gains %.0f s of predicted JCT over keeping its size, after its cost (%.0f s) and margin, "
                  "over an expected hold of %.0f s",
                  what, e.net_s, e.cost_s, e.hold_s);
  else
    std::snprintf(buf, sizeof buf,
                  "%s: gains %.0f s of predicted JCT over keeping its size (to its end), after its cost (%.0f s) "
                  "and margin",
                  what, e.net_s, e.cost_s);
  return buf;
}

/// Applies a round: changed running jobs as one batch, then the starts.
void apply(cluster_ledger& l, sim_time now, std::vector<decision>& out, const char* start_why) {
  auto& b = buffers;
  auto& changes = b.changes;
  for (auto& c : changes) b.spare_allocs.push_back(std::move(c.alloc));
  changes.clear();
  for (auto& v : b.victims) {
    auto before = l.jobs[v.job].alloc;
    l.preempt(v.job, now);
    out.push_back({decision::kind::preempt, v.job, {}, std::move(before), -1, std::move(v.why)});
  }
  b.victims.clear();
  for (auto& e : b.plans) {
    if (e.started || e.preempted) continue;
    auto id = e.job;
    auto& j = l.jobs[id];
    auto& fin = e.final;
    if (fin == j.alloc && e.type == j.alloc_type) continue;
    out.push_back({decision::kind::rescale, id, fin, j.alloc, e.type, change_reason(l, e, j, count_workers(fin))});
    changes.push_back({id, b.spare_alloc(), e.type});
    changes.back().alloc.assign(fin.begin(), fin.end());
  }
  l.reassign(changes, now);
  for (auto& s : b.starts) {
    auto& alloc = s.plan >= 0 ? b.plans[static_cast<size_t>(s.plan)].final : s.alloc;
    int type = type_of(l, alloc);
    l.start(s.job, alloc, type, now);
    out.push_back({decision::kind::start, s.job, alloc, {}, type, start_why});
  }
}

} // namespace

void plan_local(cluster_ledger& l, const policy_spec& p, const planner_options& o, sim_time now,
                std::vector<decision>& out) {
  auto& b = buffers;
  b.recycle();
  b.starts.clear();
  b.victims.clear();
  work_view view{l, b.free_view, b.stamp_view, b.touched_view, b.epoch_view},
      hard{l, b.free_hard, b.stamp_hard, b.touched_hard, b.epoch_hard};
  // Jobs that fit on GPUs really free start at once, found from the ledger's index; the
  // views are built only when a job needs extra workers' GPUs. From then on the round
  // continues as step 1 of a full round does.
  const char* why = "shortest predicted job that fits its base demand (sizes wait for the scale round)";
  bool viewing = !o.free_gpus_first;  // interleaved types need the views from the start
  if (viewing) build_views(l, p, view, hard, round_scope::local);
  walk_queue(l, p, [&](uint32_t id) {
    if (!viewing) {
      if (auto a = place_on_free(l, p, o, l.jobs[id])) {
        l.start(id, a->first, a->second, now);
        out.push_back({decision::kind::start, id, std::move(a->first), {}, a->second, why});
        return true;
      }
      viewing = true;
      build_views(l, p, view, hard, round_scope::local);
    }
    return place_base(l, p, o, id, view, hard) || preempt_for(l, p, o, id, view, hard) || o.backfill;
  });
  if (!viewing) return;
  for (auto& e : b.plans) e.final = e.base;  // jobs started now run at their base
  // Where starts took GPUs of extra workers, those jobs scale in: the shortest predicted
  // remaining time first (the longest keep their extras, which save them the most); no
  // other job changes. GPUs left free wait for the next full round.
  // Only servers this round took GPUs from can have lost extra workers' GPUs; in id order.
  auto& losers = b.losers;
  auto& changed = b.changed;
  changed.assign(view.touched.begin(), view.touched.end());
  std::sort(changed.begin(), changed.end());
  for (int sid : changed) {
    auto& s = l.servers[static_cast<size_t>(sid)];
    const int kept = std::min(p.elastic ? s.extra : 0, view.at(sid));
    int lost = (p.elastic ? s.extra : 0) - kept;
    if (lost <= 0) continue;
    losers.clear();
    for (auto id : s.jobs)
      if (l.jobs[id].elastic) losers.push_back(id);
    std::sort(losers.begin(), losers.end(), [&](uint32_t x, uint32_t y) {  // a total order
      auto rx = l.jobs[x].predicted_remaining(), ry = l.jobs[y].predicted_remaining();
      return rx < ry || (rx == ry && x > y);
    });
    for (auto id : losers) {
      if (lost == 0) break;
      auto& j = l.jobs[id];
      base_of(j, p, b.base);
      int extra = 0;
      for_each_extra(j.alloc, b.base, [&](int sid, int w) {
        if (sid == s.id) extra = w;
      });
      if (extra == 0) continue;
      // The job's plan: found if an earlier server already shrank it.
      auto it = std::find_if(b.plans.begin(), b.plans.end(), [&](auto& e) { return e.job == id && !e.started; });
      if (it == b.plans.end()) {
        b.plans.push_back(elastic_plan{id, {}, j.alloc_type, j.workers, false, j.alloc});
        it = b.plans.end() - 1;
        it->forced = true;
      }
      int k = std::min(extra, lost);
      lost -= k;
      for (auto& [sid, w] : it->final)
        if (sid == s.id) w -= k;
      std::erase_if(it->final, [](auto& sw) { return sw.second == 0; });
    }
  }
  apply(l, now, out, why);
}

void plan_elastic(cluster_ledger& l, const policy_spec& p, const planner_options& o, sim_time now,
                  std::vector<decision>& out) {
  auto& b = buffers;
  work_view view{l, b.free_view, b.stamp_view, b.touched_view, b.epoch_view},
      hard{l, b.free_hard, b.stamp_hard, b.touched_hard, b.epoch_hard};
  b.recycle();
  b.starts.clear();
  b.victims.clear();
  build_views(l, p, view, hard, round_scope::full);
  // 1. Base demand in queue order.
  bool queue_cleared = true;
  walk_queue(l, p, [&](uint32_t id) {
    if (place_base(l, p, o, id, view, hard) || preempt_for(l, p, o, id, view, hard)) return true;
    queue_cleared = false;
    return o.backfill;
  });
  auto& plans = b.plans;
  auto base_workers = [&](const job_entry& j) { return aryl::detail::base_workers(j, p); };

  // 2. Moves off slower GPU types, longest predicted remaining time first.
  if (o.migrate && (queue_cleared || !o.migrate_only_when_queue_empty)) {
    auto& slow = b.slow;
    slow.clear();
    double best = 0;
    for (auto s : l.params.type_speed) best = std::max(best, s);
    for (size_t i = 0; i < plans.size(); ++i)
      if (!plans[i].started && !plans[i].preempted && speed(l, plans[i].type) < best)
        slow.emplace_back(-l.jobs[plans[i].job].predicted_remaining(), i);
    std::sort(slow.begin(), slow.end());
    // Free GPUs per type on the servers elastic jobs may use, kept as moves take them.
    auto& hard_type_free = b.hard_type_free;
    auto& view_type_free = b.view_type_free;
    hard_type_free.assign(l.params.type_speed.size(), 0);
    view_type_free.assign(l.params.type_speed.size(), 0);
    if (!slow.empty()) {
      job_entry any_elastic;
      any_elastic.elastic = true;
      for (auto& s : l.servers)
        if (usable_for(s, any_elastic, p, o)) {
          hard_type_free[static_cast<size_t>(s.gpu_type)] += hard.at(s.id);
          view_type_free[static_cast<size_t>(s.gpu_type)] += view.at(s.id);
        }
    }
    for (auto& [neg_rem, i] : slow) {
      auto& e = plans[i];
      auto id = e.job;
      auto& j = l.jobs[id];
      double rem = -neg_rem;
      double t_now = remaining_time_s(l.params.model, rem, j.gpus, e.current, servers_spanned(j.alloc),
                                      speed(l, e.type));
      auto t_new = [&](int type, int servers, int workers) {
        return l.params.restart_overhead_s +
               remaining_time_s(l.params.model, rem, j.gpus, workers, servers, speed(l, type));
      };
      // A job grown on the slow type moves with its size where the fast GPUs hold it (kept
      // there as it is, out of this round's knapsack), else at its base.
      const int sized = o.move_with_size && p.elastic ? std::min(e.current, j.max_workers) : base_workers(j);
      std::optional<allocation> a;
      int moved_workers = 0;
      for (size_t t = 0; t < l.params.type_speed.size() && !a; ++t) {
        int type = static_cast<int>(t);
        if (speed(l, type) <= speed(l, e.type)) continue;
        // Only onto GPUs that are really free: a move never takes GPUs from other jobs.
        auto& target = o.migrate_onto_extras ? view : hard;
        auto& target_free = o.migrate_onto_extras ? view_type_free : hard_type_free;
        const int sizes[2] = {std::max(sized, base_workers(j)), base_workers(j)};
        for (int k = 0; k < (sizes[0] > sizes[1] ? 2 : 1); ++k) {
          const int w = sizes[k];
          // One server is the best any placement gives: no need to place where that cannot pay.
          if (t_now - t_new(type, 1, w) <= o.migrate_min_gain_s) continue;
          if (target_free[t] < w) continue;  // most rounds: the fast GPUs are all busy
          auto& slots = target.slots(j, p, o, type, b.slots);
          a = place_one(o.placement, slots, {static_cast<int>(id), w, type, {}});
          if (a && t_now - t_new(type, servers_spanned(*a), w) > o.migrate_min_gain_s) {
            moved_workers = w;
            break;
          }
          a.reset();
        }
        if (!a) continue;
        e.net_s = t_now - t_new(type, servers_spanned(*a), moved_workers) - o.migrate_min_gain_s;
        e.cost_s = l.params.restart_overhead_s;
        view.give(e.base);
        view.take(*a);
        view_type_free[static_cast<size_t>(e.type)] += count_workers(e.base);
        view_type_free[t] -= count_workers(*a);
        for (auto& [sid, w] : *a) {
          auto& f = hard.at_mut(sid);
          hard_type_free[t] -= std::min(f, w);
          f = std::max(0, f - w);
        }
        if (moved_workers > base_workers(j)) {
          keep_on_fewest(*a, base_workers(j), e.base);
          e.final = std::move(*a);
          e.frozen = true;
        } else {
          e.base = std::move(*a);
        }
        e.type = type;
      }
    }
  }

  // 3. Scale-out knapsack over what is left, per GPU type. A job within its cooldown whose
  // extra workers all still have their GPUs keeps them (no voluntary change), and is left
  // out of the knapsack.
  if (p.elastic && o.rescale_cooldown_s > 0)
    for (auto& e : plans) {
      auto& j = l.jobs[e.job];
      if (e.started || e.type != j.alloc_type || e.current <= j.min_workers) continue;
      if ((now - j.resized_at).seconds() >= o.rescale_cooldown_s) continue;
      bool intact = true;
      for_each_extra(j.alloc, e.base, [&](int sid, int w) { intact = intact && view.at(sid) >= w; });
      if (!intact) continue;
      auto& kept = b.kept;
      kept.clear();
      for_each_extra(j.alloc, e.base, [&](int sid, int w) { kept.emplace_back(sid, w); });
      view.take(kept);
      e.final = e.base;
      merge_into(e.final, kept);
      e.frozen = true;
    }
  auto& in = b.in;
  in.capacity.assign(l.params.type_speed.size(), 0);
  job_entry any_elastic;
  any_elastic.elastic = true;
  for (auto& s : l.servers)
    if (usable_for(s, any_elastic, p, o)) in.capacity[static_cast<size_t>(s.gpu_type)] += view.at(s.id);
  // Every elastic job may use the same servers: one ranking of their free GPUs per type
  // serves all the jobs' spans.
  auto& ranking = b.ranking;
  ranking.resize(l.params.type_speed.size());
  for (size_t t = 0; t < ranking.size(); ++t)
    if (in.capacity[t] > 0) most_free_first(view.slots(any_elastic, p, o, static_cast<int>(t), b.slots), static_cast<int>(t), ranking[t]);
    else ranking[t].clear();
  b.hold_by_type.clear();
  for (size_t t = 0; t < l.params.type_speed.size(); ++t)
    b.hold_by_type.push_back(l.hold_estimate(static_cast<int>(t), now));
  auto& class_plan = b.class_plan;
  class_plan.clear();
  for (size_t i = 0; i < plans.size(); ++i) {
    auto& e = plans[i];
    auto& j = l.jobs[e.job];
    if (!p.elastic || j.max_workers <= j.min_workers || e.frozen || e.preempted) continue;
    double rem = j.predicted_remaining();
    double sp = speed(l, e.type);
    bool moved = !e.started && e.type != j.alloc_type;
    // Keeping its size is free only for a job whose extra workers all still have their GPUs.
    bool intact = !moved;
    if (intact && !e.started)
      for_each_extra(j.alloc, e.base, [&](int sid, int w) {
        if (view.at(sid) < w) intact = false;
      });
    e.forced = !e.started && !intact && !moved;
    // No GPU of its type to size it with (its own intact extras would be counted): it runs
    // at its base, as an empty class would choose.
    if (in.capacity[static_cast<size_t>(e.type)] == 0) continue;
    int current = e.current;
    double t_min = remaining_time_s(l.params.model, rem, j.gpus, j.min_workers, servers_spanned(e.base), sp);
    mckp_class c{b.spare_item_list(), e.type};
    // No job can take more extra workers than its type has free GPUs: items past that could
    // never be chosen, and a trace's max_workers may be far beyond the cluster.
    const int top = std::min(j.max_workers, j.min_workers + in.capacity[static_cast<size_t>(e.type)]);
    // Each size at the span step 4 gives it: the job's current allocation when it keeps its
    // size, else its extras on the fewest servers that hold them. Planned as if alone: when
    // other jobs' extras take the same servers it can end up on more (the ledger then runs
    // it at the rate of the servers it really gets).
    auto& req = b.home_only;  // spans need the home servers only, in any order
    req.gpu_type = e.type;
    req.home.clear();
    long home_free = 0;
    for (auto& [sid, w] : e.base) {  // a base has each server once
      req.home.push_back(sid);
      home_free += view.at(sid);
    }
    auto& spans = b.spans;
    spans_from_ranking(ranking[static_cast<size_t>(e.type)], home_free, req, top - j.min_workers, spans);
    const int base_span = std::max(servers_spanned(e.base), 1);
    const double r_min = work_rate(l.params.model, j.gpus, j.min_workers, base_span, sp);
    const bool hold = o.horizon == scale_horizon::hold;
    const double hold_s = hold ? b.hold_by_type[static_cast<size_t>(e.type)] : 0;
    // A change now: the overhead, and (valuing by holding time) the stop's checkpoint of the
    // workers it has. Relative to staying at min, so a job already above min pays it for
    // min too (the class's empty choice), and keeping its size pays nothing.
    const double change_s = l.params.scale_overhead_s + (hold ? l.checkpoint_time_s(current) : 0) + o.rescale_margin_s;
    const bool pays_change = !e.started && intact;
    if (!moved) {  // a move's reason is its own gain and restart
      e.cost_s = change_s - o.rescale_margin_s;
      e.hold_s = hold_s;
    }
    double keep_v = 0;  // keeping its size: the empty choice at min, else its kept item
    for (int w = j.min_workers + 1; w <= top; ++w) {
      bool kept = !e.started && intact && w == current;
      int servers = kept ? servers_spanned(j.alloc) : spans[static_cast<size_t>(w - j.min_workers)];
      double r_w = work_rate(l.params.model, j.gpus, w, std::max(servers, 1), sp);
      // Sizes whose GPUs do too little work each are not offered (kept ones stay offered:
      // dropping them would force a change).
      if (!kept && r_w * j.min_workers < o.min_extra_efficiency * r_min * w) continue;
      double v;
      if (hold) {
        // Kept for an exponential time of mean H, or until the job ends (T_w): the JCT saved
        // is E[min(X, T_w)] x (r_w / r_min - 1), and with probability P(X < T_w) the extras
        // are taken back, which is one more change (its overhead and checkpoint).
        double t_w = rem / r_w;
        double p_back = -std::expm1(-t_w / hold_s);
        double held = hold_s * p_back;
        v = held * (r_w / r_min - 1) - p_back * (l.params.scale_overhead_s + l.checkpoint_time_s(w));
      } else {
        v = t_min - rem / r_w;
      }
      if (pays_change) {
        if (w != current) v -= change_s;
        if (current > j.min_workers) v += change_s;
      }
      if (kept) keep_v = v;
      c.items.push_back({w - j.min_workers, v});
    }
    if (!moved) e.net_s = keep_v;  // until the knapsack's choice: what keeping its size is worth
    in.classes.push_back(std::move(c));
    class_plan.push_back(i);
  }
  auto& sol = b.sol;
  solve_mckp(in, sol);

  // 4. Extra workers. A job that keeps its size and still has all its GPUs keeps exactly its
  // allocation (the knapsack charged it no overhead, and any other change costs one). The
  // others' extras go on the fewest servers that hold them, largest first (ties: class
  // order), so that big demands find room before small ones split the free servers.
  auto& still_needed = b.still_needed;  // (plan, extra workers)
  still_needed.clear();
  for (auto& e : plans)
    if (!e.frozen) e.final = e.base;
  for (size_t c = 0; c < class_plan.size(); ++c) {
    auto& e = plans[class_plan[c]];
    auto& j = l.jobs[e.job];
    // Net gain over keeping its size: the chosen item's value (or the empty choice's, 0)
    // less what keeping was worth.
    if (e.started || e.type == j.alloc_type)
      e.net_s = (sol.choice[c] < 0 ? 0 : in.classes[c].items[static_cast<size_t>(sol.choice[c])].value) - e.net_s;
    if (sol.choice[c] < 0) continue;
    int extra = in.classes[c].items[static_cast<size_t>(sol.choice[c])].weight;
    if (!e.started && e.type == j.alloc_type && j.min_workers + extra == e.current) {
      auto& kept = b.kept;
      kept.clear();
      bool fits = true;
      for_each_extra(j.alloc, e.base, [&](int sid, int w) {
        kept.emplace_back(sid, w);
        fits = fits && view.at(sid) >= w;
      });
      if (fits) {
        view.take(kept);
        merge_into(e.final, kept);
        continue;
      }
    }
    still_needed.emplace_back(class_plan[c], extra);
  }
  // Listed in plan order: largest first, ties by plan, is the order a stable sort gives.
  std::sort(still_needed.begin(), still_needed.end(),
            [](auto& x, auto& y) { return x.second > y.second || (x.second == y.second && x.first < y.first); });
  // The servers with GPUs left, per type, listed once: place_extras takes from this list as
  // from the view, and servers without free GPUs change nothing in where extras go, so one
  // list serves every job of the type instead of a pass over all servers per job.
  auto& left = b.extra_slots;
  left.resize(l.params.type_speed.size());
  for (auto& v : left) v.clear();
  b.listed.assign(left.size(), 0);
  for (auto& [i, extra] : still_needed) {
    auto& e = plans[i];
    auto& j = l.jobs[e.job];
    auto t = static_cast<size_t>(e.type);
    if (!b.listed[t]) {
      b.listed[t] = 1;
      for (auto& s : l.servers)
        if (s.gpu_type == e.type && usable_for(s, j, p, o) && view.at(s.id) > 0)
          left[t].push_back({s.id, s.gpu_type, s.gpus, view.at(s.id)});
    }
    extras_for(e, j, extra, b.scratch, b.extras);
    if (!place_extras(left[t], b.extras, b.placed)) continue;  // cannot happen: the capacity counted these GPUs
    // The knapsack valued each size at the span the job would have alone; other jobs' extras
    // may have taken its room. If the servers it really gets leave its GPUs below the
    // efficiency floor, it keeps only the extras on its base's servers.
    if (o.min_extra_efficiency > 0 && p.elastic) {
      allocation& trial = b.kept;
      trial.assign(e.final.begin(), e.final.end());
      merge_into(trial, b.placed);
      const int w = count_workers(trial);
      const double sp = speed(l, e.type);
      const double r_min = work_rate(l.params.model, j.gpus, j.min_workers, std::max(servers_spanned(e.base), 1), sp);
      const double r_w = work_rate(l.params.model, j.gpus, w, servers_spanned(trial), sp);
      if (r_w * j.min_workers < o.min_extra_efficiency * r_min * w) {
        for (auto& [sid, k] : b.placed) {
          bool home = std::any_of(e.base.begin(), e.base.end(), [sid = sid](auto& x) { return x.first == sid; });
          if (home) continue;
          auto slot = std::find_if(left[t].begin(), left[t].end(), [sid = sid](auto& x) { return x.id == sid; });
          if (slot != left[t].end()) slot->free += k;
          else left[t].push_back({sid, e.type, l.servers[static_cast<size_t>(sid)].gpus, k});
          k = 0;
        }
        std::erase_if(b.placed, [](auto& x) { return x.second == 0; });
      }
    }
    view.take(b.placed);
    merge_into(e.final, b.placed);
  }

  apply(l, now, out, "shortest predicted job that fits its base demand");
}

} // namespace aryl::detail
