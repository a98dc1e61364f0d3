#include "actors/recorder.hpp"

#include <algorithm>
#include <string_view>

#include "actors/journal_protocol.hpp"
#include "solvers/round_planner.hpp"

namespace aryl {
namespace {

using recorder_self = recorder_actor::stateful_pointer<recorder_state>;

void close_outputs(recorder_state& s) {
  if (s.status->finished.load()) return;
  s.header.jobs_submitted = s.expected;
  s.status->summary = s.writer->finish(s.header);
  s.status->finished.store(true, std::memory_order_release);
}

/// Once every job has finished the outputs are closed; later messages (the last snapshot, a
/// final round) change nothing in them.
void record_event(recorder_state& s, const event_record& e) {
  if (s.status->finished.load()) return;
  const int64_t t_us = s.last_event_us = std::max(s.last_event_us, e.t_us);
  // Copied only when restamped: an event is written a few hundred thousand times a run.
  if (t_us == e.t_us) {
    s.writer->event(e);
  } else {
    event_record later = e;
    later.t_us = t_us;
    s.writer->event(later);
  }
  s.status->now_us.store(t_us, std::memory_order_relaxed);
  using namespace std::string_view_literals;
  const std::string_view actor = e.actor, event = e.event;
  if (actor == "scheduler"sv && event != "loan"sv && event != "reclaim"sv && event != "return"sv)
    s.status->last_job_event_us.store(t_us, std::memory_order_relaxed);
}

void record_job(recorder_state& s, const job_record& j) {
  // Every submitted job completes exactly once.
  if (j.index >= s.completed.size() || s.completed[j.index]) {
    if (!s.status->failed.load()) {
      s.status->failure = "invariant violated: job " + std::to_string(j.index) + " completed twice or was never submitted";
      s.status->failed.store(true, std::memory_order_release);
    }
    return;
  }
  s.completed[j.index] = 1;
  s.writer->job(j);
  s.status->jobs_done.store(s.writer->jobs_recorded(), std::memory_order_relaxed);
  if (s.writer->jobs_recorded() == s.expected && !s.keep_open) close_outputs(s);
}

void record_snapshot(recorder_state& s, const cluster_snapshot& c) {
  s.status->running_jobs.store(c.running_jobs, std::memory_order_relaxed);
  if (!s.status->finished.load()) s.writer->snapshot(c);
}

/// A round's scope (and a full round's cause) counted in the summary.
void count_round(recorder_state& s, bool decided_nothing, round_kind kind) {
  auto& h = s.header;
  if (s.status->finished.load()) return;
  switch (kind.scope) {
    case round_scope::full:
      ++h.full_rounds;
      h.full_rounds_deciding_nothing += decided_nothing;
      ++h.full_rounds_by_cause[static_cast<size_t>(kind.cause)];
      break;
    case round_scope::starts: ++h.starts_rounds; break;
    case round_scope::local: ++h.local_rounds; break;
  }
}

/// The run's first failure ends it; later ones are not recorded.
void fail_run(recorder_state& s, std::string what, int code) {
  if (s.status->failed.load()) return;
  s.status->failure = std::move(what);
  s.status->failure_code = code;
  s.status->failed.store(true, std::memory_order_release);
}

/// A measure changed: the journal, if any, keeps the measures so far.
void measured(recorder_self self) {
  auto& s = self->state;
  if (s.journal) self->send(caf::actor_cast<journal_actor>(s.journal), jmeasures_atom::value, s.writer->measures());
}

} // namespace

recorder_actor::behavior_type recorder_behavior(recorder_self self, std::shared_ptr<run_sink> writer,
                                                std::shared_ptr<run_status> status, uint64_t expected,
                                                run_summary header, bool keep_open, uint64_t index_space) {
  auto& st = self->state;
  st.keep_open = keep_open;
  st.writer = std::move(writer);
  st.status = std::move(status);
  st.expected = expected;
  st.completed.assign(std::max(expected, index_space), 0);
  st.header = std::move(header);
  return {
      [=](event_atom, const event_record& e) { record_event(self->state, e); },
      [=](roundlog_atom, const std::vector<event_record>& es, const cluster_snapshot& c, round_kind kind) {
        count_round(self->state, es.empty(), kind);
        for (auto& e : es) record_event(self->state, e);
        record_snapshot(self->state, c);
      },
      [=](jobrec_atom, const job_record& j) { record_job(self->state, j); },
      [=](ended_atom, const event_record& e, const job_record& j) {
        record_event(self->state, e);
        record_job(self->state, j);
      },
      [=](snapshot_atom, const cluster_snapshot& c) { record_snapshot(self->state, c); },
      [=](violation_atom, const std::string& what) {
        auto& s = self->state;
        if (s.status->failed.load()) return;
        s.status->failure = "invariant violated at t=" + std::to_string(s.status->now_us.load() / 1e6) +
                            " s: " + what;
        s.status->failed.store(true, std::memory_order_release);
      },
      [=](failed_atom, const std::string& what, int code) { fail_run(self->state, what, code); },
      [=](lag_atom, int64_t us) {
        auto& lag = self->state.status->max_lag_us;
        if (us > lag.load(std::memory_order_relaxed)) lag.store(us, std::memory_order_relaxed);
      },
      [=](slo_atom, int count) {
        self->state.writer->slo_misses(count);
        self->state.status->slo_misses += static_cast<uint64_t>(count);
        measured(self);
      },
      [=](need_atom, int servers) { self->state.status->inference_needed.store(servers, std::memory_order_relaxed); },
      [=](serving_atom, int64_t t_us, int gpus) {
        if (!self->state.status->finished.load()) self->state.writer->serving(t_us, gpus);
      },
      [=](expect_atom) {
        auto& s = self->state;
        s.completed.push_back(0);
        ++s.expected;
      },
      [=](lostwork_atom, double gpu_s, double recovery_s) {
        if (self->state.status->finished.load()) return;
        self->state.writer->lost_work(gpu_s, recovery_s);
        measured(self);
      },
      [=](rdone_atom, double latency_s, double late_s) {
        if (self->state.status->finished.load()) return;
        self->state.writer->reclaim_done(latency_s, late_s);
        measured(self);
      },
      [=](qdone_atom, double latency_s, double late_s) {
        if (self->state.status->finished.load()) return;
        self->state.writer->quota_done(latency_s, late_s);
        measured(self);
      },
      [=](measures_to_atom, const caf::actor& journal) { self->state.journal = journal; },
      [=](close_atom) {
        auto& s = self->state;
        // Trace jobs never submitted are not part of the run; every submitted one is recorded.
        s.expected = s.writer->jobs_recorded();
        close_outputs(s);
      },
  };
}

} // namespace aryl
