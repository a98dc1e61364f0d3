// The scheduler taking jobs in: a submitted job into the queue with its actor, and after a
// restart the journal's jobs restored, their surviving workers adopted.
#include <fmt/format.h>

#include <algorithm>

#include "actors/job.hpp"
#include "actors/scheduler_parts.hpp"

namespace aryl::sched {

namespace {

/// Whether an arriving job may start above its minimum: elastic, with GPUs free now beyond
/// its base demand. Only then does its arrival need a round that re-plans sizes
/// (scheduler.scale_rounds=capacity); any other arrival only takes GPUs.
bool may_grow_at_start(const scheduler_state& st, const job_entry& j) {
  auto& p = st.setup.policy;
  if (!p.elastic || !j.elastic || j.max_workers <= j.min_workers) return false;
  long free = 0;
  for (int t = 0; t < static_cast<int>(st.ledger.params.type_speed.size()); ++t)
    if (j.gpu_type < 0 || j.gpu_type == t) free += st.ledger.capacity(t, p.loaning, false);
  return free > j.min_workers;
}

/// Makes room for job `index` in the ledger and in every by-job vector of the job table.
void make_room(scheduler_state& st, uint32_t index) {
  if (st.ledger.jobs.size() > index) return;
  st.ledger.jobs.resize(index + 1);
  auto& t = st.jobs;
  t.actors.resize(index + 1);
  t.names.resize(index + 1);
  t.durations.resize(index + 1);
  t.unpredicted.resize(index + 1);
  t.retries.resize(index + 1);
  t.attempts.resize(index + 1);
  if (keeps_specs(st)) t.specs.resize(index + 1);
}

} // namespace

/// The most GPUs of one type an elastic job needing `gpu_type` (empty: any) may hold in the
/// configured cluster: training servers, and inference ones when the policy loans (0: none).
long floor_cap(scheduler_state& st, const std::string& gpu_type) {
  if (st.jobs.pool_gpus.empty()) {
    st.jobs.pool_gpus.assign(st.setup.type_names.size(), {0, 0});
    for (auto& s : st.setup.servers)
      if (s.gpu_type >= 0 && static_cast<size_t>(s.gpu_type) < st.jobs.pool_gpus.size())
        st.jobs.pool_gpus[static_cast<size_t>(s.gpu_type)][s.home == server_home::inference ? 1 : 0] += s.gpus;
  }
  long most = 0;
  for (size_t t = 0; t < st.jobs.pool_gpus.size(); ++t)
    if (gpu_type.empty() || st.setup.type_names[t] == gpu_type)
      most = std::max(most, st.jobs.pool_gpus[t][0] + (st.setup.policy.loaning ? st.jobs.pool_gpus[t][1] : 0));
  return most;
}

/// Takes a submitted job into the queue and spawns its actor. `restored`: the job as the
/// journal of a scheduler that went away had it; it keeps its submit time, measurements and
/// retries, and counts the restart as a preemption (its workers were stopped, its next
/// start pays the restart overhead and resumes from the checkpoint). Journaling the job is
/// the caller's: a client's submit is journaled otherwise than a trace job's. `now`: the
/// scheduler's clock, read once by the caller (a client's job is stamped with it).
void accept_job(self_ptr self, job_spec& spec, sim_time now, const saved_job* restored) {
  auto& st = self->state;
  auto& l = st.ledger;
  make_room(st, spec.index);
  if (keeps_specs(st)) st.jobs.specs[spec.index] = spec;
  st.jobs.attempts[spec.index].time_limit_s = spec.time_limit_s;
  st.jobs.attempts[spec.index].max_retries = spec.max_retries;
  st.jobs.names[spec.index] = spec.name;
  st.jobs.durations[spec.index] = spec.duration_s;
  st.jobs.unpredicted[spec.index] = spec.predicted ? 0 : 1;
  auto& j = l.jobs[spec.index];
  j.index = spec.index;
  // When it was submitted, not when the scheduler took it: later only if the scheduler was
  // away (a crash; a live restart submitting the trace jobs it missed).
  j.submit = std::min(now, spec.submit);
  j.gpus = spec.gpus;
  j.min_workers = spec.elastic ? floor_workers(spec.min_workers, spec.gpus, spec.max_workers, st.setup.planner,
                                               floor_cap(st, spec.gpu_type))
                               : spec.min_workers;
  j.max_workers = spec.max_workers;
  j.elastic = spec.elastic;
  j.gpu_type = -1;
  for (size_t t = 0; t < st.setup.type_names.size(); ++t)
    if (st.setup.type_names[t] == spec.gpu_type) j.gpu_type = static_cast<int>(t);
  j.tenant = tenant_of(st, spec.tenant);
  j.priority = spec.priority;
  // Classes change rounds only once some job has one: without, decisions stay as they were.
  if (spec.priority != 0) st.ledger.params.priorities = true;
  // A job that gives neither a duration nor an estimate (a client's) has none.
  // A client's job submitted without a duration runs (emulated) for the default estimate, but
  // the scheduler estimates it as any job without one.
  j.estimated = spec.estimated && spec.predicted && (spec.estimate_s > 0 || spec.duration_s > 0);
  if (!j.estimated) ++st.jobs.unestimated_active;
  j.predicted_work = spec.estimate_s > 0 ? spec.estimate_s : spec.duration_s * spec.predict_factor;
  // The queue is ordered by submit time and remaining work: a restored job's are set first.
  if (restored) {
    auto& r = restored->record;
    bool was_running = restored->status == saved_status::running;
    j.submit = restored->spec.submit;
    j.queued_s = r.queued_s;
    j.attained_gpu_s = r.gpu_seconds;
    j.started_once = r.first_start_us >= 0;
    if (j.started_once) j.first_start = sim_time::from_us(r.first_start_us);
    j.preemptions = r.preemptions + (was_running && restored->adopt.empty() ? 1 : 0);
    j.scale_ins = r.scale_ins;
    j.scale_outs = r.scale_outs;
    j.on_loaned_s = r.on_loaned_s;
    j.below_speed_s = r.below_speed_s;
    j.below_speed_gpu_s = r.below_speed_gpu_s;
    j.training_gpu_s = r.training_gpu_s;
    j.loaned_gpu_s = r.loaned_gpu_s;
    j.training_speed_gpu_s = r.training_speed_gpu_s;
    j.loaned_speed_gpu_s = r.loaned_speed_gpu_s;
    j.training_needed_gpu_s = r.training_needed_gpu_s;
    j.loaned_needed_gpu_s = r.loaned_needed_gpu_s;
    j.progress.work_done = restored->work_done;
    st.jobs.retries[spec.index] = restored->retries;
    // Its limit counts from its restart if an attempt failed before: when that one ended is
    // not journaled.
    auto& a = st.jobs.attempts[spec.index];
    a.ended = r.attempts;
    if (!a.ended.empty()) a.base_held_s = std::max(0.0, (now - j.submit).seconds() - j.queued_s);
    else if (j.started_once) a.start_us = j.first_start.us;
  }
  if (!j.estimated)
    j.predicted_work = j.progress.work_done + st.jobs.history.expected_remaining(j.tenant, j.progress.work_done,
                                                                           st.setup.planner.unestimated_prior_s);
  l.submit(spec.index, restored ? now : j.submit);  // queued since its submission
  if (restored) {
    bool was_running = restored->status == saved_status::running;
    log(self, now, "restore",
        fmt::format("{} gpus={} elastic={} name={} was={} work_done={:.1f}", job_name(spec.index), spec.gpus,
                    spec.elastic ? 1 : 0, spec.name, to_string(restored->status), restored->work_done),
        !restored->adopt.empty() ? "the scheduler restarted; its workers all still run: adopted"
        : was_running            ? "the scheduler restarted; its workers were stopped: it restarts from its checkpoint"
                                 : "the scheduler restarted; queued again");
  } else {
    // "job-I gpus=G elastic=E name=N", appended piece by piece (see describe_into).
    std::string detail;
    detail.reserve(40 + spec.name.size());  // one allocation for the line
    detail += "job-";
    append_number(detail, spec.index);
    detail += " gpus=";
    append_number(detail, spec.gpus);
    detail += spec.elastic ? " elastic=1 name=" : " elastic=0 name=";
    detail += spec.name;
    log(self, now, "submit", std::move(detail), "");
  }
  take_rules(self, spec, restored);
  st.jobs.actors[spec.index] = self->spawn(job_behavior_shared, std::move(spec), st.jenv);
  const bool sized_alone = st.setup.planner.rounds == scale_rounds::capacity;
  mark_dirty(self, round_cause::arrival,
             restored != nullptr        ? replan::sizes
             : may_grow_at_start(st, j) ? (sized_alone ? replan::starts : replan::sizes)
                                        : replan::none);
}

namespace {

/// A submit with the key of job (or array) `id`'s: answered repeat_answer(id), once `id` is
/// journaled.
caf::result<int64_t> repeated_submit(self_ptr self, const job_spec& spec, uint32_t id) {
  auto& st = self->state;
  log(self, st.jenv->tb.now(self), "resubmit", fmt::format("{} key={}", job_name(id), spec.key),
      "a submit with the same key took it");
  auto w = st.jobs.key_waits.find(id);
  if (w == st.jobs.key_waits.end()) return repeat_answer(id);
  auto repeat = self->make_response_promise<int64_t>();
  w->second.push_back(repeat);
  return repeat;
}

} // namespace

/// A client's job (see admit in scheduler_protocol.hpp): numbered, taken, journaled; the
/// answer is its index once the journal has it.
caf::result<int64_t> admit_job(self_ptr self, job_spec& spec) {
  auto& st = self->state;
  if (!spec.key.empty()) {
    auto first = st.jobs.keyed.find({spec.user, spec.key});
    if (first != st.jobs.keyed.end()) return repeated_submit(self, spec, first->second);
  }
  if (!spec.array.empty()) return admit_array(self, spec);
  auto index = spec.index = st.jobs.next_index++;
  // A client's job arrives now: whatever time the sender put on it is not the scheduler's.
  auto now = st.jenv->tb.now(self);
  spec.submit = now;
  // Before anything else about the job reaches the recorder: the run now waits for it.
  self->send(st.jenv->recorder, expect_atom::value);
  note_key(self, spec, index);  // before accept_job, which takes the spec
  accept_job(self, spec, now);
  if (!st.setup.journal) {
    settle_never(self, index);
    return static_cast<int64_t>(index);
  }
  // The client learns the id only once the job and the index counter are on disk: a
  // scheduler killed after the answer carries the job on and never gives the id again.
  // The job is scheduled meanwhile; its later rows reach the journal after this one.
  return answer_when_journaled(self,
                               self->request(st.setup.journal, caf::infinite, jadmit_atom::value,
                                             journal_row(self, index, st.jenv->tb.now(self)), st.jobs.next_index),
                               index, {index});
}

void note_key(self_ptr self, const job_spec& spec, uint32_t id) {
  auto& st = self->state;
  if (spec.key.empty()) return;
  st.jobs.keyed[{spec.user, spec.key}] = id;
  if (st.setup.journal) st.jobs.key_waits[id];  // repeats wait until answer_when_journaled hears
}

/// After a restart: starts a restored (queued) job on the workers found still running, in
/// rank order (the order its launch numbered them across its servers), without a launch.
void adopt_job(self_ptr self, const saved_job& row) {
  auto& st = self->state;
  auto now = st.jenv->tb.now(self);
  auto& l = st.ledger;
  auto job = row.spec.index;
  auto found = row.adopt;
  std::sort(found.begin(), found.end(), [](auto& a, auto& b) { return a.rank < b.rank; });
  allocation alloc;
  std::vector<std::vector<uint32_t>> ranks, gpus;
  for (auto& w : found) {
    if (alloc.empty() || alloc.back().first != w.server) {
      alloc.emplace_back(w.server, 0);
      ranks.emplace_back();
      gpus.emplace_back();
    }
    ++alloc.back().second;
    ranks.back().push_back(w.rank);
    gpus.back().push_back(w.gpu);
  }
  int type = l.servers.at(static_cast<size_t>(alloc.front().first)).gpu_type;
  l.start(job, alloc, type, now);
  auto& j = l.jobs[job];
  job_assignment a;
  a.generation = j.generation;
  a.workers = j.workers;
  a.type_speed = l.params.type_speed.at(static_cast<size_t>(type));
  for (auto& [sid, w] : alloc) {
    a.servers.push_back(sid);
    a.server_workers.push_back(w);
  }
  self->send(st.jobs.actors[job], adopt_atom::value, a);
  attempt_running(self, job, now);
  for (size_t i = 0; i < alloc.size(); ++i)
    self->send(st.servers[static_cast<size_t>(alloc[i].first)], adopt_atom::value, job, ranks[i], gpus[i],
               st.jobs.actors[job]);
  log(self, now, "adopt",
      fmt::format("{} workers={} {} {}", job_name(job), j.workers, st.setup.type_names[static_cast<size_t>(type)],
                  describe(st, alloc)),
      "its workers still run where the journal placed them");
  journal_job(self, job, now);
}

/// One job of a restarted scheduler's journal (see restore in scheduler_protocol.hpp).
void restore_job(self_ptr self, saved_job& row) {
  auto& st = self->state;
  auto now = st.jenv->tb.now(self);
  auto index = row.spec.index;
  if (row.status != saved_status::ended) {
    auto spec = row.spec;
    accept_job(self, spec, now, &row);
    journal_job(self, index, now);
    if (!row.adopt.empty()) adopt_job(self, row);
    return;
  }
  // Ended before the scheduler went away: recorded as it ended, once.
  make_room(st, index);
  st.jobs.names[index] = row.spec.name;
  st.jobs.durations[index] = row.spec.duration_s;
  ++st.metrics.jobs_finished;
  count_outcome(st, row.record.outcome);
  after_end(self, index, row.record.outcome);
  log(self, now, "restore",
      fmt::format("{} name={} outcome={}", job_name(index), row.spec.name, to_string(row.record.outcome)),
      "ended before the scheduler restarted");
  self->send(st.jenv->recorder, jobrec_atom::value, std::move(row.record));
}

void on_submit(self_ptr self, job_spec& spec) {
  auto& st = self->state;
  if (st.drained) {
    log(self, st.jenv->tb.now(self), "refuse", fmt::format("{} name={}", job_name(spec.index), spec.name),
        "the run is stopping");
    return;
  }
  auto index = spec.index;
  auto now = st.jenv->tb.now(self);
  accept_job(self, spec, now);
  journal_job(self, index, now);
  settle_never(self, index);
}

int on_restore(self_ptr self, std::vector<saved_job>& rows) {
  auto& st = self->state;
  // Every array task is in its array, in task order, before any job is taken: a job restored
  // first that depends on an array waits for all its tasks.
  std::vector<const job_spec*> tasks;
  for (auto& row : rows) {
    auto& s = row.spec;
    if (s.array_job >= 0) tasks.push_back(&s);
    // A repeat of a submit the journal has, ended or not, is answered its id.
    if (!s.key.empty()) st.jobs.keyed[{s.user, s.key}] = s.array_job >= 0 ? static_cast<uint32_t>(s.array_job) : s.index;
  }
  std::sort(tasks.begin(), tasks.end(), [](auto* a, auto* b) { return a->index < b->index; });
  for (auto* s : tasks) {
    make_room(st, s->index);
    join_array(st, *s);
  }
  for (auto& row : rows) restore_job(self, row);
  for (auto& row : rows) settle_never(self, row.spec.index);
  return static_cast<int>(rows.size());
}

} // namespace aryl::sched
