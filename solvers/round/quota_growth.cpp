// Step 1b's quota growth (docs/tenants.md, "Tenants and quotas"): a running elastic job below
// its requested size, of a tenant whose quota has room for the rest, grows to it on its own
// server, on GPUs free or held by extra workers, else by stopping the fewest jobs of tenants
// that borrow there (choose_quota_victims), when the time it saves pays for every stop.
#include <algorithm>

#include "solvers/jct_value.hpp"
#include "solvers/reason_text.hpp"
#include "solvers/round/steps.hpp"
#include "solvers/plural.hpp"

namespace aryl::detail {
namespace {

/// Removes the plan of job `id` (a victim of this step): later steps must not size it. The
/// starts' plan indices follow.
void drop_plan(uint32_t id, round_plans& made) {
  auto it = std::find_if(made.plans.begin(), made.plans.end(), [&](auto& e) { return !e.started && e.job == id; });
  if (it == made.plans.end()) return;
  const long k = it - made.plans.begin();
  made.plans.erase(it);
  for (auto& s : made.starts)
    if (s.plan > k) --s.plan;
}

std::string why(const cluster_ledger& l, uint32_t victim, uint32_t id, long borrowed) {
  auto& v = l.jobs[victim];
  auto& q = l.jobs[id];
  return reason_text("quota reclaim for job ", id, " of tenant ", l.tenants[static_cast<size_t>(q.tenant)].name,
                     " to grow to its requested ", q.gpus, " workers: tenant ", l.tenants[static_cast<size_t>(v.tenant)].name,
                     " borrows ", borrowed, gpus_word(borrowed), " beyond its quota");
}

} // namespace

void own_quota_growth(const cluster_ledger& l, const policy_spec& p, const planner_options& o, sim_time now,
                      tenant_round& books, work_view& view, work_view& hard, round_plans& made) {
  if (!l.params.quotas || !p.elastic) return;
  // Room left in each quota for its jobs' extra workers up to their requested sizes.
  std::vector<long> room(l.tenants.size(), 0);
  for (size_t t = 0; t < room.size(); ++t) room[t] = l.tenants[t].quota > 0 ? l.tenants[t].quota - books.held[t] : 0;
  allocation scratch;
  for (auto id : l.running) {
    auto& j = l.jobs[id];
    auto t = static_cast<size_t>(j.tenant);
    if (!j.elastic || j.alloc.empty() || room[t] <= 0) continue;
    if (made.stopped(id)) continue;
    const int sid = j.alloc.front().first;
    auto& s = l.servers[static_cast<size_t>(sid)];
    if (s.home != server_home::training || s.mode != server_mode::training) continue;
    const int want = std::min({j.gpus, j.max_workers, s.gpus});
    const int target = static_cast<int>(std::min<long>(want, j.min_workers + room[t]));
    room[t] -= std::max(0, std::min(j.workers, want) - j.min_workers);  // what it holds of its quota
    // On one server only: growth in place spans nothing new.
    if (j.alloc.size() != 1 || target <= j.workers) continue;
    if (o.rescale_cooldown_s > 0 && (now - j.resized_at).seconds() < o.rescale_cooldown_s) continue;
    // The view counts the job's own extra workers' GPUs free: its target's extras need that many.
    const int extras = target - j.min_workers;
    const long need = extras - view.at(sid);
    quota_reclaim_result res;
    std::vector<long> borrowed;
    if (need > 0) {
      borrowed = borrowed_now(l, books);
      quota_reclaim_input in;
      in.need = need;
      in.borrowed = borrowed;
      for (auto vid : s.jobs) {
        auto& v = l.jobs[vid];
        if (v.tenant == j.tenant || v.status != job_status::running || v.resized_at == now) continue;
        if (borrowed[static_cast<size_t>(v.tenant)] <= 0) continue;
        if (made.stopped(vid)) continue;
        base_of(v, p, scratch);
        int here = 0;
        for (auto& [vs, w] : scratch)
          if (vs == sid) here += w;
        const int gpus = count_workers(scratch);
        if (here <= 0 || gpus <= 0) continue;
        in.jobs.push_back({vid, v.tenant, here, gpus, l.params.restart_overhead_s + l.checkpoint_time_s(v.workers)});
      }
      res = choose_quota_victims(in);
      if (!res.ok) continue;
    }
    // It pays: the time its remaining work saves at the target exceeds its change (overhead,
    // checkpoint), every stop's restart and checkpoint, and the margin.
    const double rem = j.predicted_remaining(), sp = speed(l, j.alloc_type);
    const double gain = remaining_time_s(l.params.model, rem, j.gpus, j.workers, 1, sp) -
                        remaining_time_s(l.params.model, rem, j.gpus, target, 1, sp);
    const double cost = l.params.scale_overhead_s + l.checkpoint_time_s(j.workers) + res.cost_s;
    if (gain - cost - o.rescale_margin_s <= 0) continue;
    room[t] -= target - std::max(j.min_workers, std::min(j.workers, want));
    for (auto vid : res.victims) {
      auto& v = l.jobs[vid];
      made.victims.push_back({vid, why(l, vid, id, borrowed[static_cast<size_t>(v.tenant)])});
      drop_plan(vid, made);
      base_of(v, p, scratch);
      view.give(scratch);
      hard.give(v.alloc);
      const long g = base_held(v, p);
      books.held[static_cast<size_t>(v.tenant)] -= g;
      books.lendable += g;
    }
    allocation grown{{sid, extras}};
    view.take(grown);
    // Really free is never more than the view has left (a start of step 1 may have taken the
    // job's own extra workers' GPUs, which it now needs again).
    auto& f = hard.at_mut(sid);
    f = std::min(f - std::max(0, target - j.workers), view.at(sid));
    auto it = std::find_if(made.plans.begin(), made.plans.end(), [&](auto& e) { return !e.started && e.job == id; });
    if (it == made.plans.end()) {
      made.plans.push_back(elastic_plan{id, made.spare_alloc(), j.alloc_type, j.workers, false, made.spare_alloc()});
      it = made.plans.end() - 1;
      base_of(j, p, it->base);
    }
    it->final.assign(it->base.begin(), it->base.end());
    merge_into(it->final, grown);
    it->frozen = true;
    it->quota_growth = true;
    it->net_s = gain - cost - o.rescale_margin_s;
    it->cost_s = cost;
  }
}

} // namespace aryl::detail
