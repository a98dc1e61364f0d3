#include "actors/fault_injector.hpp"

#include <fmt/format.h>

namespace aryl {

fault_actor::behavior_type fault_behavior(fault_actor::stateful_pointer<fault_injector_state> self,
                                          std::vector<fault_event> events, std::map<std::string, int> servers,
                                          scheduler_actor scheduler, inference_actor inference,
                                          recorder_actor recorder, timebase tb) {
  self->state.events = std::move(events);
  auto arm = [=] {
    auto& st = self->state;
    if (st.next < st.events.size())
      self->delayed_send(self, tb.span(st.events[st.next].at - tb.now(self)), tick_atom::value,
                         static_cast<uint64_t>(st.next));
    else
      self->quit();
  };
  arm();
  return {
      [=](tick_atom, uint64_t) {
        auto& st = self->state;
        auto now = tb.now(self);
        while (st.next < st.events.size() && st.events[st.next].at <= now) {
          auto& e = st.events[st.next++];
          std::string detail;
          switch (e.what) {
            case fault_event::kind::server_crash:
              self->send(scheduler, crash_atom::value, servers.at(e.server),
                         e.down_s < 0 ? int64_t{-1} : sim_time::from_seconds(e.down_s).us);
              detail = e.down_s < 0 ? fmt::format("server_crash {} for good", e.server)
                                    : fmt::format("server_crash {} down_for={:.0f}", e.server, e.down_s);
              break;
            case fault_event::kind::worker_crash:
              self->send(scheduler, wcrash_atom::value, e.job);
              detail = fmt::format("worker_crash job-{}", e.job);
              break;
            case fault_event::kind::surge:
              if (inference) self->send(inference, push_atom::value, e.servers);
              detail = fmt::format("surge servers={}", e.servers);
              break;
            case fault_event::kind::disconnect:
              self->send(scheduler, linkfault_atom::value,
                         link_fault::disconnect(servers.at(e.server), sim_time::from_seconds(e.for_s).us));
              detail = fmt::format("disconnect {} for={:.0f}", e.server, e.for_s);
              break;
            case fault_event::kind::link:
              self->send(scheduler, linkfault_atom::value,
                         link_fault::degraded(servers.at(e.server), sim_time::from_seconds(e.for_s).us, e.delay_s,
                                              e.loss));
              detail = fmt::format("link {} for={:.0f} delay_s={:g} loss={:g}", e.server, e.for_s, e.delay_s, e.loss);
              break;
            case fault_event::kind::checkpoint:
              self->send(scheduler, ckfault_atom::value, e.job,
                         e.fail ? checkpoint_fault::failed() : checkpoint_fault::slow(e.slow_s));
              detail = e.fail ? fmt::format("checkpoint job-{} fail", e.job)
                              : fmt::format("checkpoint job-{} slow_s={:.0f}", e.job, e.slow_s);
              break;
            case fault_event::kind::scheduler_crash:
              self->send(scheduler, away_atom::value, sim_time::from_seconds(e.down_s).us);
              detail = fmt::format("scheduler_crash down_for={:.0f}", e.down_s);
              break;
          }
          self->send(recorder, event_atom::value, event_record{now.us, "faults", "fault", detail, e.source});
        }
        arm();
      },
  };
}

} // namespace aryl
