#include "actors/fault_injector.hpp"

#include <fmt/format.h>

#include "actors/due_items.hpp"

namespace aryl {

fault_actor::behavior_type fault_behavior(fault_actor::stateful_pointer<fault_injector_state> self,
                                          std::vector<fault_event> events, std::map<std::string, int> servers,
                                          scheduler_actor scheduler, inference_actor inference,
                                          recorder_actor recorder, timebase tb) {
  // Strikes with `e` now; what happened, for the log.
  auto strike = [=](const fault_event& e) -> std::string {
    switch (e.what) {
      case fault_event::kind::server_crash:
        self->send(scheduler, crash_atom::value, servers.at(e.server),
                   e.down_s < 0 ? int64_t{-1} : sim_time::from_seconds(e.down_s).us);
        return e.down_s < 0 ? fmt::format("server_crash {} for good", e.server)
                            : fmt::format("server_crash {} down_for={:.0f}", e.server, e.down_s);
      case fault_event::kind::worker_crash:
        self->send(scheduler, wcrash_atom::value, e.job);
        return fmt::format("worker_crash job-{}", e.job);
      case fault_event::kind::surge:
        if (inference) self->send(inference, push_atom::value, e.servers);
        return fmt::format("surge servers={}", e.servers);
      case fault_event::kind::disconnect:
        self->send(scheduler, linkfault_atom::value,
                   link_fault::disconnect(servers.at(e.server), sim_time::from_seconds(e.for_s).us));
        return fmt::format("disconnect {} for={:.0f}", e.server, e.for_s);
      case fault_event::kind::link:
        self->send(scheduler, linkfault_atom::value,
                   link_fault::degraded(servers.at(e.server), sim_time::from_seconds(e.for_s).us, e.delay_s,
                                        e.loss));
        return fmt::format("link {} for={:.0f} delay_s={:g} loss={:g}", e.server, e.for_s, e.delay_s, e.loss);
      case fault_event::kind::checkpoint:
        self->send(scheduler, ckfault_atom::value, e.job,
                   e.fail ? checkpoint_fault::failed() : checkpoint_fault::slow(e.slow_s));
        return e.fail ? fmt::format("checkpoint job-{} fail", e.job)
                      : fmt::format("checkpoint job-{} slow_s={:.0f}", e.job, e.slow_s);
      case fault_event::kind::scheduler_crash:
        self->send(scheduler, away_atom::value, sim_time::from_seconds(e.down_s).us);
        return fmt::format("scheduler_crash down_for={:.0f}", e.down_s);
    }
    return {};
  };
  self->state.events = std::move(events);
  auto arm = [=] { arm_next_due(self, self->state.events, self->state.next, tb, &fault_event::at); };
  arm();
  return {
      [=](tick_atom, uint64_t) {
        auto now = tb.now(self);
        for (auto& e : take_due(self->state.events, self->state.next, now, &fault_event::at))
          self->send(recorder, event_atom::value, event_record{now.us, "faults", "fault", strike(e), e.source});
        arm();
      },
  };
}

} // namespace aryl
