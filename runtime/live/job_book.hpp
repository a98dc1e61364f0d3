#pragma once
/// What `aryl serve` remembers of every job for its clients (`aryl show`, `aryl status --all`):
/// the spec, each scheduler decision about it (as events.log has it) and, once it ended, its
/// final record. Fed by the run's output hooks and by the gateway's submits; read by the
/// gateway. Thread-safe: the recorder's thread writes, the network thread reads.
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "solvers/job_spec.hpp"
#include "actors/run_records.hpp"
#include "runtime/wire/messages.hpp"

namespace aryl::live {

class job_book {
 public:
  /// The job's spec as submitted (a trace job at the start, a client's once accepted). An
  /// array's (s.array set, s.index its id) is booked as each of its tasks' (indices from the id
  /// on, in task order).
  void spec(const job_spec& s);
  /// A client's update of a queued job took (`task`: of that array task; none: of the job, or
  /// of each task of the array `job`): its spec shows the new values.
  void updated(uint32_t job, std::optional<uint32_t> task, const wire::job_request& q);
  /// The index of task `task` of the array whose id is `job`; nothing if it has no such task.
  std::optional<uint32_t> task_index(uint32_t job, uint32_t task) const;
  /// One line of events.log; those of the scheduler about one job ("job-N ...") are kept
  /// as its history, the latest wire::max_list of them.
  void event(const event_record& e);
  /// The job's final record: it has ended.
  void ended(const job_record& r);
  /// The complete lines of an events.log a killed serve left (a run carried on after a
  /// scheduler restart), taken as events, so histories cover the whole run. Lines that do not
  /// parse are skipped (the outputs keep them; the book is for clients).
  void replay(const std::string& events_log);

  /// What the book knows of `job`: spec fields, history, and for an ended job its state,
  /// end time and run time. Nothing for a job it never heard of. The caller fills in what
  /// only the scheduler knows of an active job (state, workers, servers, reason).
  std::optional<wire::show_reply> show(uint32_t job) const;
  /// The user `job` was submitted by ("" for none); nothing for a job it never heard of.
  std::optional<std::string> owner(uint32_t job) const;
  /// Whether `job` has ended.
  bool has_ended(uint32_t job) const;
  /// Whether a submit of `user` with `key` was booked (job_spec::key).
  bool keyed(const std::string& user, const std::string& key) const;
  /// Ended jobs, the latest end first, at most `max`.
  std::vector<wire::job_info> ended_jobs(size_t max) const;

 private:
  struct entry {
    std::optional<job_spec> spec;
    std::vector<wire::history_entry> history;
    std::optional<job_record> end;
  };
  mutable std::mutex m_;
  std::map<uint32_t, entry> jobs_;
  /// Submit keys by (user, key).
  std::set<std::pair<std::string, std::string>> keys_;
  /// Arrays by id: their tasks' job indices by task id.
  std::map<uint32_t, std::map<uint32_t, uint32_t>> arrays_;
  /// Ended jobs in the order they ended.
  std::vector<uint32_t> ended_order_;
};

/// The wire state of an ended job's outcome: failed for each of the failures (failed, timeout,
/// node_lost), which wire::job_state names as one.
wire::job_state outcome_state(job_outcome outcome);

} // namespace aryl::live
