#include "actors/feeder.hpp"

namespace aryl {

feeder_actor::behavior_type feeder_behavior(feeder_actor::stateful_pointer<feeder_state> self,
                                            std::vector<job_spec> jobs, scheduler_actor scheduler, timebase tb) {
  self->state.jobs = std::move(jobs);
  auto arm = [=] {
    auto& st = self->state;
    if (st.next < st.jobs.size())
      self->delayed_send(self, tb.span(st.jobs[st.next].submit - tb.now(self)), tick_atom::value,
                         static_cast<uint64_t>(st.next));
    else
      self->quit();
  };
  arm();
  return {
      [=](tick_atom, uint64_t) {
        auto& st = self->state;
        auto now = tb.now(self);
        // Every job due now in one message: on the wall clock the scheduler's zero-delay round
        // could otherwise run between two submits of one instant, which the simulated clock
        // never does (docs/live.md, "Fidelity").
        std::vector<job_spec> due;
        while (st.next < st.jobs.size() && st.jobs[st.next].submit <= now) due.push_back(std::move(st.jobs[st.next++]));
        if (!due.empty()) self->send(scheduler, submit_atom::value, std::move(due));
        arm();
      },
  };
}

} // namespace aryl
