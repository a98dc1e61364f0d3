#include "actors/journal.hpp"

#include <fmt/format.h>

#include <exception>

#include "actors/end_run_on_exception.hpp"

namespace aryl {
namespace {

using journal_self = journal_actor::stateful_pointer<journal_state>;

/// Writes everything kept while writes failed, oldest kind first; each item leaves the store
/// once written. Throws the sink's error at the first write that fails again.
void write_unwritten(journal_state& st) {
  while (!st.unwritten_joins.empty()) {
    st.sink->put_joined(st.unwritten_joins.front());
    st.unwritten_joins.erase(st.unwritten_joins.begin());
  }
  while (!st.unwritten_admits.empty()) {
    auto& [row, next] = st.unwritten_admits.front();
    st.sink->put_admitted(row, next);
    st.unwritten_admits.erase(st.unwritten_admits.begin());
  }
  while (!st.unwritten_jobs.empty()) {
    st.sink->put_job(st.unwritten_jobs.begin()->second);
    st.unwritten_jobs.erase(st.unwritten_jobs.begin());
  }
  while (!st.unwritten_servers.empty()) {
    auto it = st.unwritten_servers.begin();
    st.sink->put_server_mode(it->first, it->second);
    st.unwritten_servers.erase(it);
  }
  if (st.unwritten_measures) st.sink->put_measures(*st.unwritten_measures);
  st.unwritten_measures.reset();
  if (st.unwritten_tenants) st.sink->put_tenants(*st.unwritten_tenants);
  st.unwritten_tenants.reset();
  if (st.audit_dropped > 0) {
    st.sink->put_audit(fmt::format(R"({{"lost":{},"why":"the state file could not be written; audit.jsonl has them"}})",
                                   st.audit_dropped));
    st.audit_dropped = 0;
  }
  while (!st.unwritten_audit.empty()) {
    st.sink->put_audit(st.unwritten_audit.front());
    st.unwritten_audit.pop_front();
  }
  std::vector<std::pair<uint32_t, double>> rows(st.progress.begin(), st.progress.end());
  if (!rows.empty()) st.sink->put_progress(rows);
  st.progress.clear();
}

void arm_retry(journal_self self, std::chrono::milliseconds every) {
  if (std::exchange(self->state.retry_armed, true)) return;
  self->delayed_send(self, every, jretry_atom::value);
}

/// Runs `write` unless writes are failing; false (the caller keeps the item) if it did not
/// write. A write that throws starts the failing state.
template <class F>
bool try_write(journal_self self, std::chrono::milliseconds every, F&& write) {
  auto& st = self->state;
  if (st.failing) return false;
  try {
    write();
    return true;
  } catch (const std::exception& e) {
    st.failing = true;
    st.sink->trouble(e.what());
    arm_retry(self, every);
    return false;
  }
}

} // namespace

journal_actor::behavior_type journal_behavior(journal_self self, std::shared_ptr<state_sink> sink,
                                              recorder_actor recorder, std::chrono::milliseconds progress_every,
                                              uint32_t compact_every) {
  end_run_on_exception(self, recorder);
  self->state.sink = std::move(sink);
  self->state.compact_every = compact_every;
  auto flush = [=] {
    auto& st = self->state;
    std::vector<std::pair<uint32_t, double>> rows(st.progress.begin(), st.progress.end());
    if (try_write(self, progress_every, [&] { st.sink->put_progress(rows); })) st.progress.clear();
  };
  return {
      [=](jjob_atom, const saved_job& j) {
        auto& st = self->state;
        // A job's progress is written before its end, never after (an ended job's row is final).
        if (j.status == saved_status::ended) st.progress.erase(j.spec.index);
        if (!try_write(self, progress_every, [&] { st.sink->put_job(j); })) {
          st.unwritten_jobs[j.spec.index] = j;
          return;
        }
        if (j.status != saved_status::ended || st.compact_every == 0 || ++st.ended_since_compact < st.compact_every)
          return;
        st.ended_since_compact = 0;
        try_write(self, progress_every, [&] { st.sink->compact(); });
      },
      [=](jadmit_atom, const saved_job& j, uint32_t next_index) -> caf::result<uint32_t> {
        auto& st = self->state;
        if (try_write(self, progress_every, [&] { st.sink->put_admitted(j, next_index); })) return j.spec.index;
        // Kept all the same: the scheduler has the job (it cancels it on this answer), and the
        // id counter must not go back on a restart.
        st.unwritten_admits.emplace_back(j, next_index);
        return caf::make_error(caf::sec::runtime_error, "the state file cannot be written");
      },
      [=](jadmits_atom, const std::vector<saved_job>& rows, uint32_t next_index) -> caf::result<uint32_t> {
        auto& st = self->state;
        if (try_write(self, progress_every, [&] { st.sink->put_admitted_all(rows, next_index); }))
          return rows.empty() ? 0u : rows.front().spec.index;
        for (auto& j : rows) st.unwritten_admits.emplace_back(j, next_index);
        return caf::make_error(caf::sec::runtime_error, "the state file cannot be written");
      },
      [=](jprogress_atom, uint32_t job, double work_done) {
        auto& st = self->state;
        st.progress[job] = work_done;
        if (st.flush_armed || st.failing) return;
        st.flush_armed = true;
        self->delayed_send(self, progress_every, jflush_atom::value);
      },
      [=](jserver_atom, const std::string& server, const std::string& mode) {
        auto& st = self->state;
        if (!try_write(self, progress_every, [&] { st.sink->put_server_mode(server, mode); }))
          st.unwritten_servers[server] = mode;
      },
      [=](jmeasures_atom, const run_measures& m) {
        auto& st = self->state;
        if (!try_write(self, progress_every, [&] { st.sink->put_measures(m); })) st.unwritten_measures = m;
      },
      [=](jtenants_atom, const std::vector<saved_tenant>& t) {
        auto& st = self->state;
        if (!try_write(self, progress_every, [&] { st.sink->put_tenants(t); })) st.unwritten_tenants = t;
      },
      [=](jjoined_atom, const saved_machine& m) {
        auto& st = self->state;
        // After any kept before it: the order of joins is the order of server ids.
        if (!try_write(self, progress_every, [&] { st.sink->put_joined(m); })) st.unwritten_joins.push_back(m);
      },
      [=](jaudit_atom, const std::string& line) {
        auto& st = self->state;
        if (try_write(self, progress_every, [&] { st.sink->put_audit(line); })) return;
        st.unwritten_audit.push_back(line);
        if (st.unwritten_audit.size() <= journal_state::max_unwritten_audit) return;
        st.unwritten_audit.pop_front();
        ++st.audit_dropped;
      },
      [=](jflush_atom) {
        self->state.flush_armed = false;
        if (!self->state.failing) flush();
      },
      [=](jretry_atom) {
        auto& st = self->state;
        st.retry_armed = false;
        try {
          write_unwritten(st);
        } catch (const std::exception& e) {
          st.sink->trouble(e.what());
          return arm_retry(self, progress_every);
        }
        st.failing = false;
        st.sink->recovered();
      },
  };
}

} // namespace aryl
