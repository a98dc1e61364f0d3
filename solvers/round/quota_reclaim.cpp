// Step 1's quota reclaim (docs/tenants.md, "Tenants and quotas"): a queued job within its
// tenant's unused quota that fits nowhere stops jobs of tenants that borrow, the fewest
// possible (choose_quota_victims), after the GPUs of extra workers, which it takes first.
#include "solvers/reason_text.hpp"
#include "solvers/round/steps.hpp"
#include "solvers/plural.hpp"

namespace aryl::detail {
namespace {

/// Where a quota reclaim makes room: a server (demand that fits one) or the pool (-1).
struct quota_site {
  int server = -1;
  int type = -1;
  quota_reclaim_result res;
};

/// The best site for `demand` GPUs of job `q` on training servers of the types it tries.
/// `free_at(sid)`: GPUs the job could take there now; `base_on(job, sid)`: GPUs a stop of
/// that job frees there (-1: every server); `excluded(job)`: not a candidate.
template <class Free, class BaseOn, class Excluded>
std::optional<quota_site> best_site(const cluster_ledger& l, const tenant_round& books, const planner_options& o,
                                    const job_entry& q, int demand,
                                    const std::vector<int>& types, Free free_at, BaseOn base_on, Excluded excluded) {
  const auto borrowed = borrowed_now(l, books);
  std::optional<quota_site> best;
  auto candidate = [&](uint32_t vid, int sid, quota_reclaim_input& in) {
    auto& v = l.jobs[vid];
    if (v.status != job_status::running || v.tenant == q.tenant || excluded(vid)) return;
    if (borrowed[static_cast<size_t>(v.tenant)] <= 0) return;
    if (l.servers[static_cast<size_t>(v.alloc.front().first)].home != server_home::training) return;
    int frees = base_on(vid, sid);
    int gpus = base_on(vid, -1);
    if (frees <= 0 || gpus <= 0) return;
    in.jobs.push_back({vid, v.tenant, frees, gpus, l.params.restart_overhead_s + l.checkpoint_time_s(v.workers)});
  };
  auto consider = [&](int sid, int type, quota_reclaim_input& in) {
    in.borrowed = borrowed;
    auto res = choose_quota_victims(in);
    if (!res.ok || res.victims.empty()) return;
    auto k = [](const quota_reclaim_result& r) { return std::make_tuple(r.victims.size(), r.gpus, r.cost_s); };
    if (!best || k(res) < k(best->res)) best = quota_site{sid, type, std::move(res)};
  };
  for (int type : types) {
    const bool one_server = o.placement == placement_mode::consolidated && demand <= l.smallest_server(type);
    if (one_server) {
      for (auto& s : l.servers) {
        if (s.home != server_home::training || s.mode != server_mode::training || s.gpu_type != type ||
            s.gpus < demand)
          continue;
        quota_reclaim_input in;
        in.need = demand - free_at(s.id);
        if (in.need <= 0) continue;
        for (auto vid : s.jobs) candidate(vid, s.id, in);
        consider(s.id, type, in);
      }
    } else {
      quota_reclaim_input in;
      long have = 0;
      for (auto& s : l.servers)
        if (s.home == server_home::training && s.mode == server_mode::training && s.gpu_type == type)
          have += free_at(s.id);
      in.need = demand - have;
      if (in.need <= 0) continue;
      for (auto id : l.running) {
        auto& v = l.jobs[id];
        if (!v.alloc.empty() && v.alloc_type == type) candidate(id, -1, in);
      }
      consider(-1, type, in);
    }
  }
  return best;
}

std::string why(const cluster_ledger& l, const tenant_round& books, uint32_t victim, uint32_t id) {
  auto& v = l.jobs[victim];
  auto& q = l.jobs[id];
  const long borrowed = borrowed_now(l, books)[static_cast<size_t>(v.tenant)];
  return reason_text("quota reclaim for job ", id, " of tenant ", l.tenants[static_cast<size_t>(q.tenant)].name,
                     ": tenant ", l.tenants[static_cast<size_t>(v.tenant)].name, " borrows ", borrowed,
                     gpus_word(borrowed), " beyond its quota");
}

/// The round's books: a victim's tenant holds its base GPUs no more.
void released(const cluster_ledger& l, const policy_spec& p, const quota_site& site, tenant_round& books) {
  for (auto vid : site.res.victims) {
    auto& v = l.jobs[vid];
    long gpus = base_held(v, p);
    books.held[static_cast<size_t>(v.tenant)] -= gpus;
    books.lendable += gpus;
  }
}

/// GPUs of job `v`'s base on server `sid` (-1: all of its base).
int base_gpus(const job_entry& v, const policy_spec& p, int sid, allocation& scratch) {
  base_of(v, p, scratch);
  int n = 0;
  for (auto& [s, w] : scratch)
    if (sid < 0 || s == sid) n += w;
  return n;
}

} // namespace

bool quota_reclaim_for(const cluster_ledger& l, const policy_spec& p, const planner_options& o, uint32_t id,
                       round_context& c, work_view& view, work_view& hard) {
  auto& q = l.jobs[id];
  const int demand = base_demand(q, p);
  if (!l.params.quotas || demand < 1 || !quota_entitled(l, c.walk.books, q, demand)) return false;
  auto& b = c;
  auto& types = b.scratch.types;
  types_for(l, q, o, types);
  allocation scratch;
  auto is_victim = [&](uint32_t vid) {
    if (std::any_of(b.made.victims.begin(), b.made.victims.end(), [&](auto& x) { return x.job == vid; })) return true;
    if (b.made.started_now_has(vid)) return true;
    return std::any_of(b.made.starts.begin(), b.made.starts.end(), [&](auto& s) { return s.job == vid; });
  };
  auto site = best_site(
      l, c.walk.books, o, q, demand, types, [&](int sid) { return view.at(sid); },
      [&](uint32_t vid, int sid) { return base_gpus(l.jobs[vid], p, sid, scratch); }, is_victim);
  if (!site) return false;
  auto give = [&](bool back) {
    for (auto vid : site->res.victims) {
      base_of(l.jobs[vid], p, scratch);
      if (back) {
        view.take(scratch);
        hard.take(l.jobs[vid].alloc);
      } else {
        view.give(scratch);
        hard.give(l.jobs[vid].alloc);
      }
    }
  };
  give(false);
  std::optional<allocation> a;
  if (site->server >= 0) {
    a = allocation{{site->server, demand}};
  } else {
    auto& slots = view.slots(q, p, o, site->type, b.scratch.slots);
    std::erase_if(slots, [&](auto& s) { return l.servers[static_cast<size_t>(s.id)].home != server_home::training; });
    a = place_one(o.placement, slots, {static_cast<int>(id), demand, site->type, {}});
  }
  if (!a) {
    give(true);
    return false;
  }
  // A victim gets no plan in this round (plan_running skips the victims).
  for (auto vid : site->res.victims) b.made.victims.push_back({vid, why(l, b.walk.books, vid, id)});
  released(l, p, *site, b.walk.books);
  view.take(*a);
  hard.take(*a);
  long plan = -1;
  if (q.elastic) {
    plan = static_cast<long>(b.made.plans.size());
    b.made.plans.push_back(elastic_plan{id, *a, site->type, base_workers(q, p), true, {}});
  }
  b.made.starts.push_back({id, std::move(*a), plan});
  return true;
}

bool quota_reclaim_rigid(cluster_ledger& l, const policy_spec& p, const planner_options& o, uint32_t id, sim_time now,
                         tenant_round& books, std::vector<decision>& out, const char* start_why) {
  auto& q = l.jobs[id];
  const int demand = base_demand(q, p);
  if (!l.params.quotas || demand < 1 || !quota_entitled(l, books, q, demand)) return false;
  std::vector<int> types;
  types_by_speed(l, q.gpu_type, types);
  auto site = best_site(
      l, books, o, q, demand, types, [&](int sid) { return l.servers[static_cast<size_t>(sid)].free; },
      [&](uint32_t vid, int sid) {
        int n = 0;
        for (auto& [s, w] : l.jobs[vid].alloc)
          if (sid < 0 || s == sid) n += w;
        return n;
      },
      // A job started this round (the ledger has it running already) is not stopped in it.
      [&](uint32_t vid) { return l.jobs[vid].resized_at == now; });
  if (!site) return false;
  // Stopped only if the job then fits: a whole site's victims, counted before any stops.
  std::vector<server_slot> slots;
  for (auto& s : l.servers)
    if (s.home == server_home::training && s.mode == server_mode::training && s.gpu_type == site->type)
      slots.push_back({s.id, s.gpu_type, s.gpus, s.free});
  for (auto vid : site->res.victims)
    for (auto& [sid, w] : l.jobs[vid].alloc)
      for (auto& s : slots)
        if (s.id == sid) s.free += w;
  std::optional<allocation> a;
  if (site->server >= 0) a = allocation{{site->server, demand}};
  else a = place_one(o.placement, slots, {static_cast<int>(id), demand, site->type, {}});
  if (!a) return false;
  std::vector<std::string> reasons;
  for (auto vid : site->res.victims) reasons.push_back(why(l, books, vid, id));
  released(l, p, *site, books);
  for (size_t k = 0; k < site->res.victims.size(); ++k) {
    auto vid = site->res.victims[k];
    auto reason = std::move(reasons[k]);
    auto before = l.jobs[vid].alloc;
    l.preempt(vid, now);
    out.push_back({decision::kind::preempt, vid, {}, std::move(before), -1, std::move(reason)});
  }
  l.start(id, *a, site->type, now);
  out.push_back({decision::kind::start, id, std::move(*a), {}, site->type, start_why});
  return true;
}

} // namespace aryl::detail
