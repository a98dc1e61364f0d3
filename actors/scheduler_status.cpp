#include <fmt/format.h>

#include "actors/scheduler_parts.hpp"

namespace aryl::sched {

cluster_status status_of(const scheduler_state& st, sim_time now) {
  auto& l = st.ledger;
  cluster_status out;
  out.t_us = now.us;
  out.jobs_finished = st.metrics.jobs_finished;
  out.jobs_failed = st.metrics.jobs_failed;
  out.jobs_cancelled = st.metrics.jobs_cancelled;
  out.reclaim_latency_s = st.metrics.reclaim_latency_s;
  out.rounds = st.metrics.rounds;
  out.counts = st.metrics.counts;
  out.ends = st.metrics.ends;
  auto add = [&](uint32_t id, bool running, std::string reason) {
    auto& j = l.jobs[id];
    out.jobs.push_back({id, st.jobs.names[id], running, j.workers, std::move(reason), j.gpus, j.min_workers,
                        j.max_workers,
                        j.gpu_type >= 0 ? st.setup.type_names[static_cast<size_t>(j.gpu_type)] : std::string(),
                        j.started_once ? (now - j.first_start).seconds() : -1.0, alloc_text(st, j.alloc),
                        !st.jobs.unpredicted[id], l.tenants[static_cast<size_t>(j.tenant)].name});
    if (id < st.jobs.rules.size()) {
      auto& r = st.jobs.rules[id];
      out.jobs.back().held = r.held;
      out.jobs.back().array_job = r.array_job;
      out.jobs.back().array_task = r.array_task;
    }
  };
  for (auto id : l.running) add(id, true, {});
  for (auto id : l.queued) add(id, false, queue_wait_reason(l, st.setup.policy, st.setup.planner, id, st.setup.type_names));
  for (auto id : l.parked) add(id, false, parked_reason(st, id));
  // A lost or held server's GPUs are not free: nothing can be placed there until its agent is
  // back or an operator resumes it.
  for (auto& s : l.servers)
    out.servers.push_back({s.name, st.setup.type_names[static_cast<size_t>(s.gpu_type)], s.gpus,
                           s.mode == server_mode::down || s.mode == server_mode::cordoned ? 0 : s.free,
                           s.home == server_home::inference, std::string(to_string(s.mode)), hold_state::up, ""});
  describe_holds(st, out);
  out.tenants = tenant_reports(st);
  return out;
}

} // namespace aryl::sched
