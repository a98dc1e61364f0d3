#pragma once
/// `aryl serve --state FILE`: the scheduler's state journaled in SQLite (WAL), so that a
/// scheduler killed mid-run can be started again on the same file and carry the run on
/// (docs/live.md, "Scheduler restart"). Plain structs in and out; no CAF.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>

#include "actors/state_records.hpp"
#include "runtime/live/history_view.hpp"

struct sqlite3;

namespace aryl::live {

/// The format this build reads and writes; another version is refused by name, but version
/// 1 (no compact store of ended jobs) is upgraded in place.
inline constexpr int state_format_version = 2;

/// Ended jobs' final records per row of the compact store: a compaction tops up the last row
/// before it begins another.
inline constexpr size_t ended_records_per_row = 256;

class state_journal : public state_sink {
 public:
  /// Opens `path`, creating it if missing (WAL mode), and holds it exclusively until
  /// destroyed. Throws aryl::input_error naming the file if it exists and is not a regular
  /// file (a device, a FIFO, a directory), if it is not an aryl state file
  /// (corrupt, another program's database), of another format version, or in use by another
  /// process or journal.
  explicit state_journal(std::string path);
  ~state_journal() override;
  state_journal(const state_journal&) = delete;
  state_journal& operator=(const state_journal&) = delete;

  const std::string& path() const { return path_; }
  /// True if the file holds no run yet (just created, or empty).
  bool fresh() const;
  /// Everything journaled. Throws input_error naming the file and the job on a record it
  /// cannot read.
  saved_state load() const;
  /// Records the run (its cluster, workload size, clock) and clears nothing else: called
  /// when a run starts and after a restart (with the restart counters raised).
  void put_run(const saved_run& r);

  void put_job(const saved_job& j) override;
  /// The job and the counter in one transaction, synced to disk before it returns.
  void put_admitted(const saved_job& j, uint32_t next_index) override;
  void put_admitted_all(const std::vector<saved_job>& rows, uint32_t next_index) override;
  /// Moves the rows of ended jobs from `jobs` to the compact store (their final records,
  /// ended_records_per_row to a row) in one transaction; load() returns them as ended jobs
  /// whose spec holds what the record does (index, name, sizes, submit, duration).
  size_t compact() override;
  /// Rows in the file, every table but history counted (for tests and the log).
  size_t rows() const;
  void put_progress(const std::vector<std::pair<uint32_t, double>>& work_done) override;
  void put_server_mode(const std::string& server, const std::string& mode) override;
  void put_next_index(uint32_t next) override;
  /// Kept in the meta table (key 'measures') as one JSON object, replaced each time.
  void put_measures(const run_measures& m) override;
  void put_tenants(const std::vector<saved_tenant>& t) override;
  /// Appended to meta 'joined' (a JSON array), read and written in one transaction.
  void put_joined(const saved_machine& m) override;
  void put_audit(const std::string& line) override;
  /// Rows of the history table (history_table.hpp) for `jobs`, in one transaction: a
  /// simulation's jobs (`aryl simulate --db`) and a file from before the table. A job's row
  /// is also written with each of its changes (put_job, put_admitted).
  void put_history(const std::vector<saved_job>& jobs);
  /// A simulation's database (`aryl simulate --db`): history reads it, serve refuses it.
  void mark_simulated();
  bool simulated() const;
  /// `aryl history` asked of serve (history_request): the jobs `f` keeps with an id above
  /// `after` (none: from the first), at most `limit`, read through this journal's own connection (no other can read
  /// the file while it holds it). Safe from any thread: the connection is serialized (SQLite's
  /// FULLMUTEX), and each page is one bounded statement. Throws aryl::input_error.
  std::vector<history_row> history_page(const history_filter& f, std::optional<uint32_t> after, size_t limit) const;
  /// The audit lines journaled, oldest first.
  std::vector<std::string> audit_lines() const;

  /// Writes failing: the first failure, and every 30th while they go on, is logged to the
  /// stream given to watch_troubles; current_trouble() says why until recovered().
  void trouble(const std::string& what) override;
  void recovered() override;
  /// Where trouble and recovery are logged (serve's log); none by default.
  void watch_troubles(std::ostream& log) { log_ = &log; }
  /// Empty while writes succeed; else the last write's error. Safe from any thread.
  std::string current_trouble() const override;
  /// Failed writes since the file was opened (retries included). Safe from any thread.
  uint64_t write_failures() const;

 private:
  void exec(const char* sql) const;
  // Inside a transaction of the caller's.
  void write_job(const saved_job& j);
  void write_next_index(uint32_t next);
  /// Creates the history table where missing, filled from the jobs a file from before it has.
  void history_table();
  /// Runs `f` in one transaction (state_journal_history.cpp), rolled back if it throws.
  template <class F>
  void history_transaction(F&& f);
  /// Sets meta row `key` to `value`, in a transaction of its own.
  void put_meta(const char* key, const std::string& value);
  [[noreturn]] void fail(const std::string& what) const;
  std::string path_;
  sqlite3* db_ = nullptr;
  std::ostream* log_ = nullptr;
  mutable std::mutex trouble_m_;  ///< the journal actor writes, clients' threads read
  std::string trouble_;
  uint64_t write_failures_ = 0;
};

/// The first difference between the cluster a state file was written for and this one's,
/// as a sentence ("the file has 4 machines, this config 3"), or "" if they are the same.
std::string cluster_mismatch(const std::vector<std::string>& saved, const std::vector<std::string>& now);

} // namespace aryl::live
