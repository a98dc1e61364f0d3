#pragma once
/// The journal actor: writes what the scheduler and the jobs tell it to a state_sink (the
/// SQLite journal of `aryl serve --state`), off the scheduler's thread. Job and server
/// changes are written at once, one small transaction each; workers' progress, which comes
/// every second per job, is coalesced and written every `progress_every`. Every
/// `compact_every` ended jobs the sink folds their rows (state_sink::compact), so that the
/// journal's rows follow the active jobs, not the run's length.
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/journal_protocol.hpp"

namespace aryl {

struct journal_state {
  std::shared_ptr<state_sink> sink;
  std::map<uint32_t, double> progress;  ///< not yet written
  bool flush_armed = false;
  uint32_t compact_every = 0;           ///< 0: never while running
  uint32_t ended_since_compact = 0;
  /// While writes fail: what is still to be written, the latest of each kind (a job's later row
  /// replaces its earlier one), and the retry timer.
  bool failing = false;
  bool retry_armed = false;
  std::vector<std::pair<saved_job, uint32_t>> unwritten_admits;
  std::map<uint32_t, saved_job> unwritten_jobs;
  std::map<std::string, std::string> unwritten_servers;
  std::optional<run_measures> unwritten_measures;
  std::optional<std::vector<saved_tenant>> unwritten_tenants;
  std::vector<saved_machine> unwritten_joins;
  /// Audit lines, oldest first, at most max_unwritten_audit (the oldest then give way: the
  /// run folder's audit.jsonl still has them), and how many gave way.
  std::deque<std::string> unwritten_audit;
  uint64_t audit_dropped = 0;
  static constexpr size_t max_unwritten_audit = 100'000;
  static inline const char* name = "journal";
};

/// A write that fails (disk full, the file's folder unwritable) stops no work: the journal
/// keeps what it could not write (in memory, the latest row per job and per server), tells the
/// sink (state_sink::trouble), refuses clients' submits (jadmit answers an error), and tries
/// again every `progress_every` until everything kept is written, in order: joined machines,
/// admitted jobs, job rows, servers, measures, tenants, audit lines, progress. Compaction waits
/// until then.
journal_actor::behavior_type journal_behavior(journal_actor::stateful_pointer<journal_state> self,
                                              std::shared_ptr<state_sink> sink, recorder_actor recorder,
                                              std::chrono::milliseconds progress_every, uint32_t compact_every);

} // namespace aryl
