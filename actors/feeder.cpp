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
        while (st.next < st.jobs.size() && st.jobs[st.next].submit <= now)
          self->send(scheduler, submit_atom::value, std::move(st.jobs[st.next++]));
        arm();
      },
  };
}

} // namespace aryl
