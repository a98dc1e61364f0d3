#pragma once
/// What `aryl status` makes of a status reply before printing it (issue 51, as squeue's
/// filters and -O columns): which jobs to keep, their order, and their cells in named columns.
/// Pure: no network, no clock; the reply stays whole on the wire and the client narrows it.
#include <functional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/wire/messages.hpp"

namespace aryl::live {

/// One column of `aryl status --format` and `--sort`.
struct status_column {
  std::string_view name;    ///< as --format and --sort take it
  std::string_view header;  ///< the table's heading
  /// The job_info keys `status --json --format` keeps for it, space separated.
  std::string_view json;
  /// Sorted by number (absent: below every value; a state by its order queued, running, done,
  /// failed, cancelled), else by its cell's text.
  bool numeric = false;
};

/// Every column, in the order the full table shows them.
std::span<const status_column> status_columns();

/// "jobid, name, ...": the valid column names, for error messages and --help.
std::string column_names();

/// `--state`: a comma list of queued, running, done, failed, cancelled or Slurm's PD, R, CD, F,
/// CA, in any case. Throws aryl::input_error naming `flag` and the accepted names.
std::set<wire::job_state> parse_states(const std::string& flag, const std::string& list);

/// `--format`: a comma list of column names. Throws aryl::input_error naming `flag` and every
/// valid column.
std::vector<const status_column*> parse_columns(const std::string& flag, const std::string& list);

/// `--sort`: a column name, a leading '-' for descending.
struct status_sort {
  const status_column* column = nullptr;  ///< null: the reply's order
  bool descending = false;
};
status_sort parse_sort(const std::string& flag, const std::string& text);

/// The jobs to keep: each set left empty keeps every job. A job without a user (no
/// identities) matches no --user; one without servers (queued, ended) matches no --server.
struct status_filter {
  std::set<std::string> users, tenants, servers;
  std::set<wire::job_state> states;
};

/// `s` with the jobs `f` keeps, in `sort`'s order (ties keep the reply's order); with
/// `f.servers` only those servers (and their loans), with `f.tenants` only those tenants.
wire::status_reply narrowed(wire::status_reply s, const status_filter& f, const status_sort& sort);

/// A job's cell in `c`, escaped for one line ("-" where it has no value).
std::string cell(const wire::job_info& j, const status_column& c);

/// The jobs in `columns`: a heading line, then a line per job, each column as wide as its
/// widest cell.
/// `ids`: the jobid column of each job (fold_arrays'); empty: their ids.
std::string job_table(const std::vector<wire::job_info>& jobs, const std::vector<const status_column*>& columns,
                      const std::vector<std::string>& ids = {});

/// `rows` rows of `right.size()` cells as a table, `cell_at(row, col)` each (called twice):
/// each column as wide as its widest cell, two spaces between, `right[i]`: column i
/// right-aligned (numbers), else left (the last one unpadded). Row 0 is the heading. Shared
/// by `status` and `history`.
std::string aligned_table(size_t rows, const std::vector<bool>& right,
                          const std::function<std::string(size_t row, size_t col)>& cell_at);

/// The non-empty items of a comma list ("a,,b" is a and b).
std::vector<std::string> split_list(const std::string& list);

/// ASCII lower case, for names matched in any case.
std::string lower(std::string s);

/// The job_info keys of `columns` (their `json`), for `status --json --format`.
std::set<std::string> json_keys(const std::vector<const status_column*>& columns);

/// A job state's wire name ("queued", ...).
std::string_view state_name(wire::job_state s);

/// Seconds as squeue shows a job's time: [D-]H:MM:SS.
std::string clock_text(double seconds);

/// Ranks as Slurm writes a node list: sorted runs, "0-3,6".
std::string rank_ranges(std::vector<uint32_t> ranks);

} // namespace aryl::live
