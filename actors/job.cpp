#include "actors/job.hpp"

#include <fmt/format.h>

#include "actors/end_run_on_exception.hpp"

namespace aryl {

job_actor::behavior_type job_behavior(job_actor::stateful_pointer<job_state> self, job_spec spec,
                                      job_env env) {
  end_run_on_exception(self, env.recorder);
  self->state.spec = std::move(spec);
  auto scheduler = [=] { return caf::actor_cast<scheduler_actor>(env.scheduler); };
  // Live mode: launches the workers of `a` (none for a preemption) and acknowledges.
  auto launch = [=](const job_assignment& a) {
    auto& st = self->state;
    st.generation = a.generation;
    st.workers = a.workers;
    uint32_t rank = 0;
    double rate = work_rate(env.model, st.spec.gpus, a.workers, a.type_speed) * env.workers.speedup;
    for (size_t i = 0; i < a.servers.size(); ++i) {
      launch_request r{st.spec.index, st.spec.name, a.generation, rank, a.server_workers[i],
                       static_cast<uint32_t>(a.workers),
                       st.spec.duration_s, rate,
                       a.overhead_s / env.workers.speedup, env.workers.command};
      for (int w = 0; w < a.server_workers[i]; ++w) st.live_ranks.insert(rank++);
      self->send((*env.servers)[static_cast<size_t>(a.servers[i])], launch_atom::value, std::move(r));
    }
    self->send(scheduler(), ack_atom::value, job_ack{st.spec.index, a.generation, st.progress.work_done});
  };
  return {
      [=](assign_atom, const job_assignment& a) {
        auto& st = self->state;
        if (env.workers.follow_workers) {
          if (st.live_ranks.empty()) launch(a);
          else st.next = a;  // launched once the current workers have exited
          return;
        }
        auto now = env.tb.now(self);
        double before = st.progress.done_at(now);
        double rate = work_rate(env.model, st.spec.gpus, a.workers, a.type_speed);
        st.progress.change_rate(now, rate, a.workers > 0 ? a.overhead_s : 0.0);
        st.generation = a.generation;
        st.workers = a.workers;
        if (env.check_invariants && st.progress.work_done + 1e-6 < before)
          self->send(env.recorder, violation_atom::value,
                     fmt::format("job {} lost progress: {} -> {}", st.spec.name, before, st.progress.work_done));
        if (a.workers > 0) {
          auto at = st.progress.finish_time(st.spec.duration_s);
          if (at >= sim_time::horizon())
            throw input_error(fmt::format("job {} ({}) would finish after the simulation horizon of {:.0f} s "
                                          "at {} workers; check its duration and the GPU speeds",
                                          st.spec.index, st.spec.name, sim_time::horizon().seconds(), a.workers));
          st.due = at;
          self->delayed_send(self, env.tb.span(at - now), tick_atom::value, a.generation);
        }
        self->send(scheduler(), ack_atom::value, job_ack{st.spec.index, a.generation, st.progress.work_done});
      },
      [=](tick_atom, uint64_t generation) {
        auto& st = self->state;
        if (generation != st.generation || st.workers == 0) return;  // stale timer
        auto now = env.tb.now(self);
        if (now > st.due) self->send(env.recorder, lag_atom::value, (now - st.due).us);
        st.progress.settle(now);
        self->send(scheduler(), finished_atom::value, st.spec.index, generation);
        self->quit();
      },
      [=](wprogress_atom, uint32_t rank, double work_done) {
        auto& st = self->state;
        if (rank == 0 && !st.next) st.progress.work_done = work_done;
      },
      [=](wexit_atom, uint32_t rank, int code, int signal) {
        auto& st = self->state;
        if (!st.live_ranks.erase(rank)) return;
        if (st.next) {  // stopped by the scheduler: any exit status is expected
          if (st.live_ranks.empty()) {
            auto a = std::move(*st.next);
            st.next.reset();
            launch(a);
          }
          return;
        }
        if (code != 0 || signal != 0) {
          self->send(env.recorder, failed_atom::value,
                     fmt::format("job {} ({}): worker rank {} failed (exit code {}, signal {})", st.spec.index,
                                 st.spec.name, rank, code, signal),
                     3);
          self->quit();
          return;
        }
        if (!st.live_ranks.empty()) return;
        st.progress.work_done = st.spec.duration_s;
        self->send(scheduler(), finished_atom::value, st.spec.index, st.generation);
        self->quit();
      },
  };
}

} // namespace aryl
