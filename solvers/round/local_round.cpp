// The local round of policies with elastic scaling or loaning (docs/round.md, "The steps"): the
// round between two full rounds does step 1 only, and scales in just the jobs whose extra
// workers' GPUs it takes.
#include "solvers/round/steps.hpp"

namespace aryl::detail {

void plan_local(cluster_ledger& l, const policy_spec& p, const planner_options& o, sim_time now, round_context& c,
                std::vector<decision>& out) {
  work_view view = view_of(l, c.view_mem), hard = view_of(l, c.hard_mem);
  // Jobs that fit on GPUs really free start at once, found from the ledger's index; the
  // views are built only when a job needs extra workers' GPUs. From then on the round
  // continues as step 1 of a full round does.
  const char* why = "shortest predicted job that fits its base demand (sizes wait for the scale round)";
  // Servers held for a job queued past reserve_after_s stay held (the free-GPU index does not
  // know them, so the views from the start), except for that job itself.
  bool viewing = !o.free_gpus_first || !l.reserved_servers.empty();
  if (viewing) build_views(p, view, hard);
  auto& promoted = c.step1.promoted;
  if (!l.reserved_servers.empty()) {
    // The job they are held for goes first, on them too; if it still finds no room, they stay
    // held for the rest of the round. Before any walk: its quota is read from this round's
    // books, as a walk would set them up.
    if (l.params.quotas || l.params.fair_share) begin_tenant_round(l, p, c.walk.books);
    const uint32_t id = l.reserved_for;
    promoted.push_back(id);
    if (l.queued.count(id) == 0 || find_room(l, p, holder_options(o), id, c, view, hard))
      l.reserved_servers.clear();  // it started, or left the queue (cancelled)
    for (int sid : l.reserved_servers) hold_server(sid, c.step1, view, hard);
  }
  walk_queue(l, p, c.walk, [&](uint32_t id) {
    if (!promoted.empty() && promoted.front() == id) return true;
    if (!viewing) {
      if (auto a = place_on_free(l, p, o, l.jobs[id], c.scratch)) {
        l.start(id, a->first, a->second, now);
        c.made.started_now.push_back(id);
        out.push_back({decision::kind::start, id, std::move(a->first), {}, a->second, why});
        return true;
      }
      viewing = true;
      build_views(p, view, hard);
    }
    // Strict even when backfilling: what fits behind a job that finds no room waits for the
    // next full or starts round, so backfilling walks the queue once per freeing of GPUs, not
    // once per arrival (docs/preemption.md, "Backfill").
    return find_room(l, p, o, id, c, view, hard);
  });
  if (!viewing) return;
  release_reserved(c.step1, view);
  for (auto& e : c.made.plans) e.final = e.base;  // jobs started now run at their base
  scale_in_losers(l, p, view, c.made, c.scratch);
  apply_round(l, now, c.made, c.scratch, out, why);
}

} // namespace aryl::detail
