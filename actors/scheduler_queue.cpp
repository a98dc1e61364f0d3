// A queue's users' rules, kept in the scheduler's job table: holds, dependencies and array
// tasks' limits. Each keeps a queued job parked (cluster_ledger::park): out of the queue a
// round walks, where it was, until nothing keeps it any longer. A job without any of them
// never passes through here but for its end (after_end), so runs without them decide as before.
#include <fmt/format.h>

#include <algorithm>

#include "actors/job.hpp"
#include "actors/scheduler_parts.hpp"
#include "solvers/input_error.hpp"

namespace aryl::sched {

namespace {

job_table::job_rules& rules_of(scheduler_state& st, uint32_t job) {
  if (st.jobs.rules.size() <= job) st.jobs.rules.resize(job + 1);
  return st.jobs.rules[job];
}

bool known(const scheduler_state& st, uint32_t job) {
  return job < st.jobs.actors.size() && (!st.jobs.names[job].empty() || st.jobs.actors[job]);
}

/// The array whose id is `job` (its first task), or null.
const job_table::array_entry* array_named(const scheduler_state& st, uint32_t job) {
  auto it = st.jobs.arrays.find(job);
  return it != st.jobs.arrays.end() ? &it->second : nullptr;
}

/// Dependencies with an array's id stand for each of its tasks.
std::vector<job_dependency> per_task(const scheduler_state& st, const std::vector<job_dependency>& deps) {
  std::vector<job_dependency> out;
  for (auto& d : deps) {
    if (auto* a = array_named(st, d.job))
      for (auto t : a->tasks) out.push_back({t, d.kind});
    else
      out.push_back(d);
  }
  return out;
}

std::optional<bool> ended_how(const scheduler_state& st, uint32_t job) {
  if (job >= st.jobs.ended.size() || st.jobs.ended[job] == ended_as::not_yet) return std::nullopt;
  return st.jobs.ended[job] == ended_as::done;
}

const char* kind_word(after_kind k) {
  switch (k) {
    case after_kind::ok: return "afterok";
    case after_kind::any: return "afterany";
    case after_kind::notok: return "afternotok";
  }
  return "?";
}

void fill(self_ptr self, uint32_t array);

/// Parks or unparks a queued job as its rules say now; an array task takes a place of its
/// array, or gives its place back, as it may run or not.
void settle(self_ptr self, uint32_t job) {
  auto& st = self->state;
  auto& l = st.ledger;
  auto& j = l.jobs[job];
  if (j.status != job_status::queued || job >= st.jobs.rules.size()) return;
  auto& r = st.jobs.rules[job];
  bool blocked = r.held || !r.waiting.empty();
  bool freed = false;
  if (r.array_job >= 0) {
    auto& a = st.jobs.arrays[static_cast<uint32_t>(r.array_job)];
    if (blocked && r.counted) {
      r.counted = false;
      --a.active;
      freed = true;
    } else if (!blocked && !r.counted && (a.limit == 0 || a.active < a.limit)) {
      r.counted = true;
      ++a.active;
    }
    blocked = blocked || !r.counted;
  }
  if (blocked && !j.parked) {
    l.park(job);
  } else if (!blocked && j.parked) {
    l.unpark(job);
    mark_dirty(self, round_cause::arrival, replan::none);
  }
  if (freed) fill(self, static_cast<uint32_t>(r.array_job));
}

/// Places of the array free: its next tasks that nothing else keeps take them, in task order.
void fill(self_ptr self, uint32_t array) {
  auto& st = self->state;
  auto& a = st.jobs.arrays[array];
  for (auto t : a.tasks) {
    if (a.limit > 0 && a.active >= a.limit) return;
    auto& r = st.jobs.rules[t];
    if (!r.counted && st.ledger.jobs[t].status == job_status::queued && !r.held && r.waiting.empty()) settle(self, t);
  }
}

/// A dependency of `job` on `on` (its state now): waiting ones are noted where `on` ends.
void depend(scheduler_state& st, uint32_t job, const job_dependency& d) {
  auto& r = st.jobs.rules[job];
  r.waiting.push_back(d);
  st.jobs.dependents[d.job].push_back(job);
}

void forget_waiting(scheduler_state& st, uint32_t job) {
  for (auto& d : st.jobs.rules[job].waiting) {
    auto it = st.jobs.dependents.find(d.job);
    if (it == st.jobs.dependents.end()) continue;
    auto& v = it->second;
    v.erase(std::remove(v.begin(), v.end(), job), v.end());
    if (v.empty()) st.jobs.dependents.erase(it);
  }
  st.jobs.rules[job].waiting.clear();
}

std::string job_label(const scheduler_state& st, uint32_t job) {
  if (job < st.jobs.rules.size() && st.jobs.rules[job].array_job >= 0)
    return fmt::format("job {}_{}", st.jobs.rules[job].array_job, st.jobs.rules[job].array_task);
  return fmt::format("job {}", job);
}

/// Why an update of `job` with `o` is refused ("" if it is not).
std::string update_refusal(const scheduler_state& st, uint32_t job, const job_order& o) {
  auto& j = st.ledger.jobs[job];
  const int min = o.min_workers > 0 ? o.min_workers : j.min_workers;
  const int max = o.max_workers > 0 ? o.max_workers : j.max_workers;
  if (min > max)
    return fmt::format("{}: --max-workers {} is below --min-workers {}", job_label(st, job), max, min);
  if (j.gpus < min || j.gpus > max)
    return fmt::format("{}: it requests {} workers: --min-workers must be at most {} and --max-workers at least {}",
                       job_label(st, job), j.gpus, j.gpus, j.gpus);
  if (o.time_limit_s < 0 && o.time_limit_s != -1)
    return fmt::format("{}: the time limit must be a duration of at least 0", job_label(st, job));
  if (o.duration_s != -1 && !(o.duration_s > 0))
    return fmt::format("{}: --duration must be more than 0 seconds", job_label(st, job));
  if (o.set_after) return vet_after(st, job, o.after);
  return {};
}

void apply_update(self_ptr self, uint32_t job, const job_order& o, sim_time now) {
  auto& st = self->state;
  auto& l = st.ledger;
  auto& j = l.jobs[job];
  job_spec* spec = job < st.jobs.specs.size() ? &st.jobs.specs[job] : nullptr;
  std::string what;
  if (o.set_priority) {
    j.priority = o.priority;
    if (o.priority != 0) l.params.priorities = true;
    if (spec) spec->priority = o.priority;
    what += fmt::format(" priority={}", o.priority);
  }
  if (o.time_limit_s >= 0) {
    st.jobs.attempts[job].time_limit_s = o.time_limit_s;
    if (spec) spec->time_limit_s = o.time_limit_s;
    what += fmt::format(" time_limit_s={:g}", o.time_limit_s);
  }
  if (o.min_workers > 0 || o.max_workers > 0) {
    const int min = o.min_workers > 0 ? o.min_workers : (spec ? spec->min_workers : j.min_workers);
    const int max = o.max_workers > 0 ? o.max_workers : j.max_workers;
    j.elastic = min < max;
    j.max_workers = max;
    j.min_workers = j.elastic ? floor_workers(min, j.gpus, max, st.setup.planner, floor_cap(st, spec ? spec->gpu_type : ""))
                              : min;
    if (spec) {
      spec->min_workers = min;
      spec->max_workers = max;
      spec->elastic = j.elastic;
    }
    what += fmt::format(" min_workers={} max_workers={}", j.min_workers, j.max_workers);
  }
  if (o.duration_s > 0) {
    st.jobs.durations[job] = o.duration_s;
    st.jobs.unpredicted[job] = 0;
    if (!j.estimated) --st.jobs.unestimated_active;
    j.estimated = true;
    l.set_predicted_work(job, o.duration_s * (spec ? spec->predict_factor : 1.0));
    if (spec) {
      spec->duration_s = o.duration_s;
      spec->estimate_s = 0;
      spec->estimated = spec->predicted = true;
      // Not started yet: its actor is made again with the new work (an emulated worker's).
      self->send_exit(st.jobs.actors[job], caf::exit_reason::user_shutdown);
      st.jobs.actors[job] = self->spawn(job_behavior_shared, job_spec{*spec}, st.jenv);
    }
    what += fmt::format(" duration_s={:g}", o.duration_s);
  }
  if (o.set_after) {
    auto& r = rules_of(st, job);
    forget_waiting(st, job);
    r.after = after_of(o.after);
    for (auto& d : per_task(st, r.after))
      if (!ended_how(st, d.job)) depend(st, job, d);
    if (spec) spec->after = after_text(r.after);
    what += fmt::format(" after={}", o.after.empty() ? "none" : after_text(r.after));
  }
  if (job < st.jobs.rules.size()) settle(self, job);
  log(self, now, "update", fmt::format("job-{}{}", job, what), o.by.empty() ? "updated" : "updated by " + o.by);
}

/// One job's hold, release or update; "" or why not.
std::string order_one(self_ptr self, uint32_t job, job_action action, const job_order& o, sim_time now) {
  auto& st = self->state;
  auto& j = st.ledger.jobs[job];
  const auto label = job_label(st, job);
  if (!st.jobs.actors[job]) return fmt::format("{} ({}) has already ended", label, st.jobs.names[job]);
  if (action == job_action::update) {
    if (j.status != job_status::queued || j.started_once)
      return fmt::format("{} ({}) has started: only a job not yet started can be updated", label, st.jobs.names[job]);
    if (auto why = update_refusal(st, job, o); !why.empty()) return why;
    apply_update(self, job, o, now);
  } else {
    if (j.status != job_status::queued)
      return fmt::format("{} ({}) is running: only a queued job can be {}", label, st.jobs.names[job],
                         done_word(action));
    const bool hold = action == job_action::hold;
    auto& r = rules_of(st, job);
    if (!hold && !r.held) return fmt::format("{} ({}) is not held", label, st.jobs.names[job]);
    r.held = hold;
    r.held_by = hold ? o.by : std::string();
    if (job < st.jobs.specs.size()) st.jobs.specs[job].held = hold;
    settle(self, job);
    log(self, now, std::string(to_string(action)), fmt::format("job-{}", job),
        std::string(done_word(action)) + (o.by.empty() ? std::string() : " by " + o.by));
  }
  journal_job(self, job, now);
  return {};
}

} // namespace

bool keeps_specs(const scheduler_state& st) { return st.setup.journal || st.setup.workers.follow_workers; }

std::string vet_after(const scheduler_state& st, uint32_t job, const std::string& text) {
  std::vector<job_dependency> deps;
  try {
    deps = after_of(text);
  } catch (const input_error& e) {
    return e.what();
  }
  for (auto& d : deps) {
    if (d.job == job) return fmt::format("job {} cannot wait for itself", job);
    if (!known(st, d.job)) return fmt::format("--after: job {}: no such job", d.job);
  }
  auto after = [&](uint32_t x) {
    return x < st.jobs.rules.size() ? per_task(st, st.jobs.rules[x].after) : std::vector<job_dependency>{};
  };
  if (closes_cycle(job, per_task(st, deps), after))
    return fmt::format("--after {}: a cycle: one of those jobs waits, through its dependencies, for job {}", text, job);
  for (auto& d : per_task(st, deps))
    if (dependency_state_of(d.kind, ended_how(st, d.job)) == dependency_state::never)
      return fmt::format("--after: {}:{} can never be met: job {} ended {}", kind_word(d.kind), d.job, d.job,
                         ended_how(st, d.job).value_or(false) ? "done" : "other than done");
  return {};
}

std::string vet_spec(const scheduler_state& st, const job_spec& spec) {
  // A repeat of a keyed submit is answered its first's id, whatever its rules would say now.
  if (!spec.key.empty() && st.jobs.keyed.count({spec.user, spec.key})) return {};
  if (!spec.array.empty()) {
    try {
      parse_array(spec.array, "--array");
    } catch (const input_error& e) {
      return e.what();
    }
  }
  if (spec.after.empty()) return {};
  return vet_after(st, st.jobs.next_index, spec.after);
}

void take_rules(self_ptr self, const job_spec& spec, const saved_job* restored) {
  auto& st = self->state;
  const bool task = spec.array_job >= 0;
  if (!spec.held && spec.after.empty() && !task) return;
  const auto job = spec.index;
  auto& r = rules_of(st, job);
  // A job a restarted scheduler found running had nothing keeping it.
  const bool running = restored && restored->status == saved_status::running;
  r.held = spec.held && !running;
  try {
    r.after = after_of(spec.after);
  } catch (const input_error& e) {
    log(self, st.jenv->tb.now(self), "refuse", fmt::format("job-{} after={}", job, spec.after), e.what());
  }
  if (task) {
    // A restored task is in its array already (on_restore), with every task of it in order.
    if (!restored) join_array(st, spec);
    auto& a = st.jobs.arrays[static_cast<uint32_t>(spec.array_job)];
    if (running) {
      r.counted = true;
      ++a.active;
    }
  }
  if (!running)
    for (auto& d : per_task(st, r.after))
      if (!ended_how(st, d.job) || dependency_state_of(d.kind, ended_how(st, d.job)) == dependency_state::never)
        depend(st, job, d);  // a dependency never met ends it in settle_never
  settle(self, job);
}

void join_array(scheduler_state& st, const job_spec& spec) {
  if (spec.array_job < 0) return;
  auto& r = rules_of(st, spec.index);
  r.array_job = spec.array_job;
  r.array_task = spec.array_task;
  auto& a = st.jobs.arrays[static_cast<uint32_t>(spec.array_job)];
  a.tasks.push_back(spec.index);
  a.ids.push_back(spec.array_task);
  a.limit = spec.array_limit;
}

void settle_never(self_ptr self, uint32_t job) {
  auto& st = self->state;
  if (job >= st.jobs.rules.size() || !st.jobs.actors[job]) return;
  for (auto& d : st.jobs.rules[job].waiting) {
    auto how = ended_how(st, d.job);
    // Ended before this job was taken (a trace's job, a restart): as if it ended now.
    if (how && dependency_state_of(d.kind, how) == dependency_state::never) {
      auto why = fmt::format("its dependency {}:{} can never be met: job {} ended {}", kind_word(d.kind), d.job, d.job,
                             *how ? "done" : "other than done");
      end_job(self, job, job_outcome::dependency_never_met, why);
      return;
    }
  }
}

void after_end(self_ptr self, uint32_t job, job_outcome outcome) {
  auto& st = self->state;
  if (st.jobs.ended.size() <= job) st.jobs.ended.resize(job + 1, ended_as::not_yet);
  st.jobs.ended[job] = outcome == job_outcome::done ? ended_as::done : ended_as::other;
  // The run stops: every active job ends cancelled, none is started or ended otherwise.
  if (st.drained) return;
  if (job < st.jobs.rules.size() && st.jobs.rules[job].counted) {
    auto& r = st.jobs.rules[job];
    r.counted = false;
    --st.jobs.arrays[static_cast<uint32_t>(r.array_job)].active;
    fill(self, static_cast<uint32_t>(r.array_job));
  }
  auto it = st.jobs.dependents.find(job);
  if (it == st.jobs.dependents.end()) return;
  auto waiting = std::move(it->second);
  st.jobs.dependents.erase(it);
  for (auto d : waiting) {
    if (!st.jobs.actors[d]) continue;
    auto& w = st.jobs.rules[d].waiting;
    auto dep = std::find_if(w.begin(), w.end(), [&](auto& x) { return x.job == job; });
    if (dep == w.end()) continue;
    auto kind = dep->kind;
    w.erase(dep);
    if (dependency_state_of(kind, outcome == job_outcome::done) == dependency_state::never) {
      end_job(self, d, job_outcome::dependency_never_met,
              fmt::format("its dependency {}:{} can never be met: job {} ended {}", kind_word(kind), job, job,
                          to_string(outcome)));
      continue;
    }
    settle(self, d);
  }
}

std::string parked_reason(const scheduler_state& st, uint32_t job) {
  if (job >= st.jobs.rules.size()) return "parked";
  auto& r = st.jobs.rules[job];
  if (r.held) return r.held_by.empty() ? "held" : "held by " + r.held_by;
  if (!r.waiting.empty()) {
    std::string on;
    for (auto& d : r.waiting) on += fmt::format("{}{}:{}", on.empty() ? "" : ",", kind_word(d.kind), d.job);
    return "dependency (" + on + ")";
  }
  if (r.array_job >= 0)
    return fmt::format("array limit (at most {} of its tasks at once)",
                       st.jobs.arrays.at(static_cast<uint32_t>(r.array_job)).limit);
  return "parked";
}

std::string cancel_job(self_ptr self, uint32_t job) {
  auto& st = self->state;
  if (!known(st, job)) return fmt::format("job {}: no such job", job);
  if (auto* a = array_named(st, job)) {
    // Parked tasks first: their ends free no place that another task would take.
    std::vector<uint32_t> tasks;
    for (auto t : a->tasks)
      if (st.jobs.actors[t]) tasks.push_back(t);
    if (tasks.empty()) return fmt::format("array {} ({}) has already ended", job, st.jobs.names[job]);
    std::stable_partition(tasks.begin(), tasks.end(), [&](uint32_t t) { return st.ledger.jobs[t].parked; });
    for (auto t : tasks)
      if (st.jobs.actors[t]) end_job(self, t, job_outcome::cancelled, "cancelled by a client (its array)");
    return {};
  }
  if (!st.jobs.actors[job]) return fmt::format("job {} ({}) has already ended", job, st.jobs.names[job]);
  end_job(self, job, job_outcome::cancelled, "cancelled by a client");
  return {};
}

caf::result<int64_t> admit_array(self_ptr self, const job_spec& spec) {
  auto& st = self->state;
  array_tasks tasks;
  try {
    tasks = parse_array(spec.array, "--array");
  } catch (const input_error&) {
    return answer_of(admit_refusal::bad_array);  // vetted before: a client that skipped it
  }
  const auto first = st.jobs.next_index;
  const auto now = st.jenv->tb.now(self);
  std::vector<saved_job> rows;
  std::vector<uint32_t> indices;
  for (size_t i = 0; i < tasks.ids.size(); ++i) {
    auto t = spec;
    t.index = st.jobs.next_index++;
    t.submit = now;
    t.array.clear();
    t.array_job = first;
    t.array_task = tasks.ids[i];
    t.array_count = static_cast<uint32_t>(tasks.ids.size());
    t.array_limit = tasks.limit;
    indices.push_back(t.index);
    // Before anything else about the task reaches the recorder: the run now waits for it.
    self->send(st.jenv->recorder, expect_atom::value);
    accept_job(self, t, now);
  }
  note_key(self, spec, first);
  if (!st.setup.journal) {
    for (auto i : indices) settle_never(self, i);
    return static_cast<int64_t>(first);
  }
  for (auto i : indices) rows.push_back(journal_row(self, i, now));
  // As a single job's admit: the client hears the array's id once every task is on disk.
  return answer_when_journaled(
      self, self->request(st.setup.journal, caf::infinite, jadmits_atom::value, std::move(rows), st.jobs.next_index),
      first, std::move(indices));
}

node_answer on_job_order(self_ptr self, const job_order& o) {
  auto& st = self->state;
  auto now = st.jenv->tb.now(self);
  if (!known(st, o.job)) return {false, fmt::format("job {}: no such job", o.job)};
  const auto action = job_action_named(o.action);
  if (!action) return {false, fmt::format("job {}: '{}' is not hold, release, update or cancel", o.job, o.action)};
  auto* a = array_named(st, o.job);
  std::vector<uint32_t> targets;
  std::string label = fmt::format("job {}", o.job);
  if (o.task >= 0) {
    if (!a) return {false, fmt::format("job {} is not an array: {}_{} names no task", o.job, o.job, o.task)};
    auto at = std::find(a->ids.begin(), a->ids.end(), static_cast<uint32_t>(o.task));
    if (at == a->ids.end())
      return {false, fmt::format("array {} has no task {} (its tasks: {})", o.job, o.task, array_ranges(a->ids))};
    targets.push_back(a->tasks[static_cast<size_t>(at - a->ids.begin())]);
    label = fmt::format("job {}_{}", o.job, o.task);
  } else if (a) {
    for (auto t : a->tasks)
      if (st.jobs.actors[t]) targets.push_back(t);
    label = fmt::format("array {} ({} active tasks)", o.job, targets.size());
    if (targets.empty()) return {false, fmt::format("array {} ({}) has already ended", o.job, st.jobs.names[o.job])};
  } else {
    targets.push_back(o.job);
  }
  if (action == job_action::cancel) {
    if (o.task < 0) {
      auto why = cancel_job(self, o.job);
      return {why.empty(), why.empty() ? "cancelled " + label : why};
    }
    if (!st.jobs.actors[targets[0]]) return {false, fmt::format("{} has already ended", label)};
    end_job(self, targets[0], job_outcome::cancelled, "cancelled by a client");
    return {true, "cancelled " + label};
  }
  // An array as a whole: each of its tasks the order applies to; refused only if none.
  std::string first_refusal;
  size_t done = 0;
  for (auto t : targets) {
    auto why = order_one(self, t, *action, o, now);
    if (why.empty()) ++done;
    else if (first_refusal.empty()) first_refusal = why;
  }
  if (done == 0) return {false, first_refusal};
  const auto verb = done_word(*action);
  if (targets.size() == 1) return {true, fmt::format("{} {}", label, verb)};
  return {true, fmt::format("{}: {} {} of its tasks{}", label, verb, done,
                            done < targets.size() ? " (" + first_refusal + ", and the like)" : "")};
}

} // namespace aryl::sched
