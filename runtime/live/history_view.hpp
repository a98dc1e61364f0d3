#pragma once
/// What `aryl history` makes of a state file's history table (issue 51, as sacct's -S, -E,
/// -u, -s and --format): the time and outcome flags parsed, and the rows in named columns as
/// a table, JSON or CSV. Pure: no file, no clock (the caller gives "now").
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace aryl::live {

/// One job as history shows it; times on the wall clock (unix µs, UTC).
struct history_row {
  uint32_t id = 0;
  std::string name, user, tenant;
  std::string state;    ///< queued | running | ended
  std::string outcome;  ///< a job_outcome's name once ended, else ""
  int64_t submit_us = 0;
  std::optional<int64_t> start_us;  ///< none: it never had workers
  std::optional<int64_t> end_us;    ///< none: not ended
  double wait_s = 0;                ///< time queued, every wait after a preemption included
  int gpus = 0;
  std::string exits;                ///< how the last attempt's workers ended ("0:1 1:sig15")
  int attempts = 0;
  /// sacct's Elapsed: first start to end; none unless both are known.
  std::optional<double> run_s() const;
};

/// The jobs to keep: each set left empty keeps every job.
struct history_filter {
  std::optional<int64_t> since_us;  ///< ended at or after (a job not ended: kept)
  std::optional<int64_t> until_us;  ///< submitted at or before
  std::set<std::string> users, tenants;
  std::set<std::string> outcomes;   ///< job_outcome names, and queued, running for jobs not ended
};

/// `--since`/`--until`: 2026-11-01, 2026-11-01T12:00, 2026-11-01T12:00:30 (UTC; a trailing Z
/// allowed), or a time before `now_us`: -7d, -12h, -30m, -45s, and `now`. Unix µs. Throws
/// aryl::input_error naming `flag` and the accepted forms.
int64_t parse_history_time(const std::string& flag, const std::string& text, int64_t now_us);

/// `--outcome`: a comma list of done, failed, timeout, node_lost, cancelled,
/// dependency_never_met (and queued, running), or sacct's CD, F, TO, NF, CA (PD, R), in any case; their canonical names.
std::set<std::string> parse_outcomes(const std::string& flag, const std::string& list);

/// `unix_us` as 2026-11-01T12:00:30 (UTC, to the second).
std::string iso_time(int64_t unix_us);

/// One column of `aryl history --format`.
struct history_column {
  std::string_view name;    ///< as --format takes it, and the JSON and CSV key
  std::string_view header;  ///< the table's heading
  bool right = false;       ///< a number: right-aligned
};

/// Every column, in the order the full table shows them.
std::span<const history_column> history_columns();

/// `--format`: a comma list of column names, in any case. Throws aryl::input_error naming
/// `flag` and every valid column.
std::vector<const history_column*> parse_history_columns(const std::string& flag, const std::string& list);

/// A row's cell in `c`, escaped for one line ("-" where it has no value).
std::string history_cell(const history_row& r, const history_column& c);

/// The rows in `columns` (every column if empty): a heading line, then a line per job.
std::string history_table(const std::vector<history_row>& rows, std::vector<const history_column*> columns);
/// As CSV: a header of column names, then a line per job; times ISO, durations in seconds.
std::string history_csv(const std::vector<history_row>& rows, std::vector<const history_column*> columns);
/// As JSON: {"jobs": [{column: value, ...}, ...]}; a missing value is null, durations in seconds.
std::string history_json(const std::vector<history_row>& rows, std::vector<const history_column*> columns);

} // namespace aryl::live
