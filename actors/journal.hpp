#pragma once
/// The journal actor: writes what the scheduler and the jobs tell it to a state_sink (the
/// SQLite journal of `aryl serve --state`), off the scheduler's thread. Job and server
/// changes are written at once, one small transaction each; workers' progress, which comes
/// every second per job, is coalesced and written every `progress_every`.
#include <chrono>
#include <map>
#include <memory>

#include "actors/journal_protocol.hpp"

namespace aryl {

struct journal_state {
  std::shared_ptr<state_sink> sink;
  std::map<uint32_t, double> progress;  ///< not yet written
  bool flush_armed = false;
  static inline const char* name = "journal";
};

/// A write that fails (disk full, file removed) ends the run with the journal's message
/// (through the recorder), rather than carrying on with a journal that no longer tells the
/// truth.
journal_actor::behavior_type journal_behavior(journal_actor::stateful_pointer<journal_state> self,
                                              std::shared_ptr<state_sink> sink, recorder_actor recorder,
                                              std::chrono::milliseconds progress_every);

} // namespace aryl
