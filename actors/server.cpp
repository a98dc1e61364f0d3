#include "actors/server.hpp"

#include <fmt/format.h>

#include "actors/end_run_on_exception.hpp"

#include "solvers/cluster_ledger.hpp"

namespace aryl {

server_actor::behavior_type server_behavior(server_actor::stateful_pointer<server_state> self,
                                            std::string name, int gpus, int mode, recorder_actor recorder) {
  end_run_on_exception(self, recorder);
  self->state.server = std::move(name);
  self->state.gpus = gpus;
  self->state.mode = mode;
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
      },
      [=](mode_atom, int m) {
        auto& st = self->state;
        if (m == static_cast<int>(server_mode::serving) && st.used > 0)
          violation(fmt::format("returned to inference with {} GPUs still in training use", st.used));
        st.mode = m;
      },
  };
}

} // namespace aryl
