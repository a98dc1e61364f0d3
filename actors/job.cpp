#include "actors/job.hpp"

#include <fmt/format.h>

#include "actors/end_run_on_exception.hpp"

namespace aryl {

job_actor::behavior_type job_behavior(job_actor::stateful_pointer<job_state> self, job_spec spec,
                                      job_env env) {
  end_run_on_exception(self, env.recorder);
  self->state.spec = std::move(spec);
  return {
      [=](assign_atom, const job_assignment& a) {
        auto& st = self->state;
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
        self->send(caf::actor_cast<scheduler_actor>(env.scheduler), ack_atom::value, job_ack{st.spec.index, a.generation, st.progress.work_done});
      },
      [=](tick_atom, uint64_t generation) {
        auto& st = self->state;
        if (generation != st.generation || st.workers == 0) return;  // stale timer
        auto now = env.tb.now(self);
        if (now > st.due) self->send(env.recorder, lag_atom::value, (now - st.due).us);
        st.progress.settle(now);
        self->send(caf::actor_cast<scheduler_actor>(env.scheduler), finished_atom::value, st.spec.index, generation);
        self->quit();
      },
  };
}

} // namespace aryl
