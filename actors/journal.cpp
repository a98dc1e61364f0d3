#include "actors/journal.hpp"

#include "actors/end_run_on_exception.hpp"

namespace aryl {

journal_actor::behavior_type journal_behavior(journal_actor::stateful_pointer<journal_state> self,
                                              std::shared_ptr<state_sink> sink, recorder_actor recorder,
                                              std::chrono::milliseconds progress_every, uint32_t compact_every) {
  end_run_on_exception(self, recorder);
  self->state.sink = std::move(sink);
  self->state.compact_every = compact_every;
  auto flush = [=] {
    auto& st = self->state;
    std::vector<std::pair<uint32_t, double>> rows(st.progress.begin(), st.progress.end());
    st.progress.clear();
    st.sink->put_progress(rows);
  };
  return {
      [=](jjob_atom, const saved_job& j) {
        auto& st = self->state;
        // A job's progress is written before its end, never after (an ended job's row is final).
        if (j.status == "ended") st.progress.erase(j.spec.index);
        st.sink->put_job(j);
        if (j.status != "ended" || st.compact_every == 0 || ++st.ended_since_compact < st.compact_every) return;
        st.ended_since_compact = 0;
        st.sink->compact();
      },
      [=](jadmit_atom, const saved_job& j, uint32_t next_index) -> uint32_t {
        self->state.sink->put_admitted(j, next_index);
        return j.spec.index;
      },
      [=](jprogress_atom, uint32_t job, double work_done) {
        auto& st = self->state;
        st.progress[job] = work_done;
        if (st.flush_armed) return;
        st.flush_armed = true;
        self->delayed_send(self, progress_every, jflush_atom::value);
      },
      [=](jserver_atom, const std::string& server, const std::string& mode) {
        self->state.sink->put_server_mode(server, mode);
      },
      [=](jmeasures_atom, const run_measures& m) { self->state.sink->put_measures(m); },
      [=](jtenants_atom, const std::vector<saved_tenant>& t) { self->state.sink->put_tenants(t); },
      [=](jflush_atom) {
        self->state.flush_armed = false;
        flush();
      },
  };
}

} // namespace aryl
