#pragma once
/// The emulated worker of live mode (`aryl worker`): a stand-in for a training process that
/// does no work but keeps the contract of a real one. It advances `work_done` at the job's
/// rate of wall-clock time, prints progress on stdout for its agent, checkpoints, resumes
/// from its checkpoint, and stops cleanly on SIGTERM.
///
/// Exit codes: 0 = the work is done (final checkpoint written); 143 = stopped by SIGTERM or
/// SIGINT after writing a checkpoint (preempted, not finished); 2 = a missing or invalid
/// environment variable or checkpoint file (one line on stderr naming it); 1 = the
/// checkpoint could not be written.
#include <cstdint>
#include <iosfwd>
#include <string>

namespace aryl::live {

/// Exit code of a worker stopped by SIGTERM after checkpointing (128 + SIGTERM).
inline constexpr int worker_preempted_exit = 143;
/// Exit code of a worker whose environment is missing or invalid.
inline constexpr int worker_usage_exit = 2;
/// Name of the emulated checkpoint inside ARYL_CHECKPOINT_DIR.
inline constexpr const char* emulated_checkpoint_name = "emulated.ckpt";

/// The emulated worker's configuration, from its environment.
struct worker_options {
  uint64_t job_id = 0;         ///< ARYL_JOB_ID
  uint32_t rank = 0;           ///< ARYL_RANK, < world_size
  uint32_t world_size = 1;     ///< ARYL_WORLD_SIZE, >= 1
  std::string checkpoint_dir;  ///< ARYL_CHECKPOINT_DIR, not empty
  double work_s = 0;           ///< ARYL_WORK_S: total work of the job, in work-seconds, >= 0
  double rate = 1;             ///< ARYL_RATE: work-seconds per wall-clock second, > 0
  double checkpoint_interval_s = 1;  ///< ARYL_CHECKPOINT_INTERVAL_S (optional), > 0
  /// ARYL_STARTUP_S (optional), >= 0: real seconds without progress first, the restart or
  /// rescale cost a simulation charges.
  double startup_s = 0;
};

/// Where the job stands: what the checkpoint file holds.
struct worker_checkpoint {
  double work_done = 0;  ///< work-seconds done since the job started
  uint64_t step = 0;     ///< steps done since the job started
};

/// The options from the environment. Throws aryl::input_error whose what() names the
/// variable, e.g. "ARYL_RATE: missing" or "ARYL_RATE: '0' is not a positive number".
worker_options worker_options_from_env();

/// The checkpoint in `dir`, or {0, 0} when there is none. Text, one "key=value" per line:
/// work_done=<float>, step=<int>. Throws aryl::input_error naming the file when it exists
/// but cannot be read or parsed.
worker_checkpoint read_worker_checkpoint(const std::string& dir);

/// Writes `c` to `dir`'s checkpoint atomically (a temporary file renamed over it). Throws
/// std::runtime_error naming the file on failure.
void write_worker_checkpoint(const std::string& dir, const worker_checkpoint& c);

/// Runs the emulated worker: reads its options from the environment, resumes from the
/// checkpoint, ticks every ~50 ms, and prints `ARYL_PROGRESS work_done=<x> step=<n>` lines
/// (rank 0 only, at most ~10 per second, each flushed) on stdout. Rank 0 writes the
/// checkpoint every checkpoint_interval_s, at completion and on SIGTERM/SIGINT; every rank
/// reads it at start. Installs its own SIGTERM and SIGINT handlers for the duration of the
/// call (restored on return). Errors go to `log`, one line each. Returns the exit code
/// (see the top of this file).
int run_worker(std::ostream& log);

} // namespace aryl::live
