#include "actors/feeder.hpp"

#include "actors/due_items.hpp"

namespace aryl {

feeder_actor::behavior_type feeder_behavior(feeder_actor::stateful_pointer<feeder_state> self,
                                            std::vector<job_spec> jobs, scheduler_actor scheduler, timebase tb) {
  self->state.jobs = std::move(jobs);
  auto arm = [=] { arm_next_due(self, self->state.jobs, self->state.next, tb, &job_spec::submit); };
  arm();
  return {
      [=](tick_atom, uint64_t) {
        // Every job due now in one message: on the wall clock the scheduler's zero-delay round
        // could otherwise run between two submits of one instant, which the simulated clock
        // never does (docs/live.md, "Fidelity").
        auto due = take_due(self->state.jobs, self->state.next, tb.now(self), &job_spec::submit);
        if (!due.empty()) self->send(scheduler, submit_atom::value, std::move(due));
        arm();
      },
  };
}

} // namespace aryl
