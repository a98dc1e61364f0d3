#pragma once
/// `aryl serve --state FILE`: the journal a run is kept in, and what a restarted scheduler
/// takes from it (docs/live.md, "Scheduler restart").
#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "runtime/inputs/config.hpp"
#include "runtime/sim/driver.hpp"
#include "runtime/live/state_journal.hpp"
#include "runtime/wire/messages.hpp"

namespace aryl::live {

struct serve_state {
  std::shared_ptr<state_journal> journal;
  bool restoring = false;  ///< the file holds a run: this serve carries it on
  saved_run run;           ///< the run's record, as journaled once the run starts
  int was_running = 0;     ///< restoring: jobs the journal has running
};

/// Opens `path` (creating it if missing). For a file that holds a run: checks that it was
/// written for this cluster, workload size and speedup (else input_error naming the file and
/// the difference), folds its ended jobs' rows (state_journal::compact), takes the jobs it
/// has out of `inputs.jobs` and puts them in `world.restored`, with the next free index and
/// the restart counters, and puts the machines that joined the run mid-way in
/// `c.joined_servers` (checked as a registration is). `inventory_from_file` (`--join`): the
/// cluster is the one the file's run had, which replaces `c`'s pools. Logs what it carries
/// on. Throws input_error naming the file for one it cannot read.
serve_state open_serve_state(const std::string& path, config& c, run_inputs& inputs, live_world& world,
                             std::ostream& log, bool inventory_from_file = false);

/// The pools of `c` as a journaled cluster (cluster_fingerprint's lines) has them: each pool
/// one GPU type and count, as `aryl serve --join` makes them. Throws input_error naming `path`
/// for a line it cannot read.
void take_fingerprint(config& c, const std::vector<std::string>& cluster, const std::string& path);

/// Restoring, once every agent has registered: which jobs the journal has running keep
/// running, adopted. One whose workers, as the agents listed them (`found`, by server
/// name), are exactly its ranks 0..W-1 on the training servers and in the numbers of its
/// journaled allocation, in allocation order, one GPU each, none shared: `adopt` is filled.
/// Every other found worker is to be stopped, and its job restarts from its checkpoint.
/// Counts both in the run's record and `world`, and logs them. Returns the adopted jobs.
std::set<uint32_t> plan_adoption(serve_state& s, live_world& world,
                                 const std::map<std::string, std::vector<wire::running_worker>>& found,
                                 const config& c, std::ostream& log);

/// Right before the run starts: journals the run's record, gives `world` the run's first start
/// (for summary.json's wall time), and for a run carried on sets the simulated time it starts at
/// (wall time since the first start, times the speedup).
void begin_serve_state(serve_state& s, live_world& world);

/// This config's machines as the journal names them ("t0 V100x4 training").
std::vector<std::string> cluster_fingerprint(const config& c);

} // namespace aryl::live
