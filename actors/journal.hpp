#pragma once
/// The journal actor: writes what the scheduler and the jobs tell it to a state_sink (the
/// SQLite journal of `aryl serve --state`), off the scheduler's thread. Job and server
/// changes are written at once, one small transaction each; workers' progress, which comes
/// every second per job, is coalesced and written every `progress_every`. Every
/// `compact_every` ended jobs the sink folds their rows (state_sink::compact), so that the
/// journal's rows follow the active jobs, not the run's length.
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>

#include "actors/journal_protocol.hpp"

namespace aryl {

struct journal_state {
  std::shared_ptr<state_sink> sink;
  std::map<uint32_t, double> progress;  ///< not yet written
  bool flush_armed = false;
  uint32_t compact_every = 0;           ///< 0: never while running
  uint32_t ended_since_compact = 0;
  static inline const char* name = "journal";
};

/// A write that fails (disk full, file removed) ends the run with the journal's message
/// (through the recorder), rather than carrying on with a journal that no longer tells the
/// truth.
journal_actor::behavior_type journal_behavior(journal_actor::stateful_pointer<journal_state> self,
                                              std::shared_ptr<state_sink> sink, recorder_actor recorder,
                                              std::chrono::milliseconds progress_every, uint32_t compact_every);

} // namespace aryl
