#include "actors/server.hpp"

#include <fmt/format.h>

#include "actors/end_run_on_exception.hpp"

#include "solvers/cluster_ledger.hpp"

namespace aryl {

server_actor::behavior_type server_behavior(server_actor::stateful_pointer<server_state> self,
                                            std::string name, int gpus, int mode, recorder_actor recorder,
                                            std::shared_ptr<node_link> node) {
  end_run_on_exception(self, recorder);
  self->state.server = std::move(name);
  self->state.gpus = gpus;
  self->state.mode = mode;
  self->state.node = std::move(node);
  if (self->state.node) self->state.gpu_job.assign(static_cast<size_t>(gpus), -1);
  // Starts a pending launch once the job holds enough GPU indices here.
  auto try_launch = [=](uint32_t job) {
    auto& st = self->state;
    auto p = st.pending.find(job);
    if (p == st.pending.end()) return;
    node_launch l{job, p->second.job_name, p->second.generation, p->second.rank_offset, p->second.world_size, {},
                  p->second.work_s, p->second.rate, p->second.startup_s, p->second.command,
                  p->second.decided_unix_ns};
    for (size_t g = 0; g < st.gpu_job.size() && static_cast<int>(l.gpus.size()) < p->second.workers; ++g)
      if (st.gpu_job[g] == job) l.gpus.push_back(static_cast<uint32_t>(g));
    if (static_cast<int>(l.gpus.size()) < p->second.workers) return;
    st.pending.erase(p);
    st.node->launch(l);
  };
  auto violation = [=](std::string what) {
    self->send(recorder, violation_atom::value, fmt::format("server {}: {}", self->state.server, what));
  };
  return {
      [=](place_atom, uint32_t job, int n) {
        auto& st = self->state;
        if (st.used + n > st.gpus)
          violation(fmt::format("job {} placed on {} GPUs with only {} free", job, n, st.gpus - st.used));
        if (st.mode == static_cast<int>(server_mode::serving))
          violation(fmt::format("job {} placed while the server serves inference", job));
        st.used += n;
        st.workers[job] += n;
        if (!st.node) return;
        for (size_t g = 0; g < st.gpu_job.size() && n > 0; ++g)
          if (st.gpu_job[g] < 0) {
            st.gpu_job[g] = job;
            --n;
          }
        try_launch(job);
      },
      [=](remove_atom, uint32_t job) {
        auto& st = self->state;
        auto it = st.workers.find(job);
        if (it == st.workers.end()) {
          violation(fmt::format("job {} removed but not here", job));
          return;
        }
        st.used -= it->second;
        st.workers.erase(it);
        if (!st.node) return;
        for (auto& g : st.gpu_job)
          if (g == job) g = -1;
        st.pending.erase(job);
        st.node->stop(job);
      },
      [=](mode_atom, int m) {
        auto& st = self->state;
        if (m == static_cast<int>(server_mode::serving) && st.used > 0)
          violation(fmt::format("returned to inference with {} GPUs still in training use", st.used));
        if (m == static_cast<int>(server_mode::down) && st.used > 0)
          violation(fmt::format("marked lost with {} GPUs still held by jobs", st.used));
        st.mode = m;
      },
      [=](launch_atom, launch_request& r) {
        auto& st = self->state;
        if (!st.node) return;
        auto job = r.job;
        st.owners[job] = caf::actor_cast<job_actor>(self->current_sender());
        st.pending[job] = std::move(r);
        try_launch(job);
      },
      [=](wprogress_atom, uint32_t job, uint32_t rank, double work_done) {
        auto it = self->state.owners.find(job);
        if (it != self->state.owners.end()) self->send(it->second, wprogress_atom::value, rank, work_done);
      },
      [=](wexit_atom, uint32_t job, uint32_t rank, int code, int signal) {
        auto it = self->state.owners.find(job);
        if (it != self->state.owners.end()) self->send(it->second, wexit_atom::value, rank, code, signal);
      },
  };
}

} // namespace aryl
