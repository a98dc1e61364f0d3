#pragma once
/// Training-job traces -> job_spec: the canonical CSV and the Philly adapter (docs/workload.md),
/// plus the small CSV toolkit shared by the workload readers (namespace aryl::csv).
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "solvers/job_spec.hpp"

namespace aryl {

/// How to read a trace file.
struct trace_options {
  /// "canonical" (`job_id,submit_s,gpus,duration_s[,gpu_type,elastic,min_workers,max_workers,user,
  /// estimate_s,tenant,priority,time_limit,max_retries]`, found by name; an empty `estimate_s`: no
  /// estimate; `time_limit` a Slurm-style duration (runtime/inputs/duration_text.hpp)), "philly"
  /// (`timestamp,duration,num_gpus,gpu_time,cluster`; the VC `cluster` is the tenant) or "auto" (chosen from the header).
  std::string format = "canonical";
  /// Philly only: keep the jobs of this virtual cluster (column `cluster`); empty = all.
  std::string vc;
  /// Philly only: keep jobs submitted at or after this naive calendar time (`YYYY-MM-DD` or
  /// `YYYY-MM-DD HH:MM:SS`, same clock as the trace). When set it is also time 0 of the run;
  /// when empty, time 0 is the first submit time left after filtering.
  std::string from;
  /// Philly only: keep jobs submitted strictly before this time (same syntax as `from`).
  std::string to;
  /// Count malformed rows in trace_load::bad_rows and leave them out instead of failing on the
  /// first one. Header errors and bad options always fail.
  bool skip_bad_rows = false;
};

/// The result of read_trace.
struct trace_load {
  /// Sorted stably by submit time (file order breaks ties); index = position; the earliest
  /// submit is >= 0. Inelastic jobs have min_workers = max_workers = gpus.
  std::vector<job_spec> jobs;
  /// Malformed rows left out (only with trace_options::skip_bad_rows; else always 0).
  size_t bad_rows = 0;
  /// Well-formed data rows read from the file, before the vc/from/to filters.
  size_t rows_read = 0;
  /// One line describing the source: path, format, filters and time 0, for logs and summaries.
  std::string origin;
  /// Per job (same order as `jobs`): true when the trace itself said whether the job is elastic
  /// (canonical column `elastic` non-empty). Such jobs' elastic/min_workers/max_workers are
  /// authoritative: assign_job_attributes leaves them alone.
  std::vector<bool> explicit_elastic;
};

/// Reads a whole trace. Throws input_error with a one-line message: "path: cannot open: reason"
/// for an unreadable file, "path:LINE: column 'c': 'v' ..." for a malformed row (unless
/// skip_bad_rows), "trace option 'from': ..." for a bad option. An empty result (nothing left
/// after the filters) is not an error. Reads the file in one go; parses the 82k-row Philly trace
/// in a few tens of milliseconds.
trace_load read_trace(const std::string& path, const trace_options& options);

/// Days since 1970-01-01 of a proleptic Gregorian date (no time zone, no leap seconds).
constexpr int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

/// Parses `YYYY-MM-DD` (midnight) or `YYYY-MM-DD HH:MM:SS` (a 'T' may replace the space) into
/// naive seconds since 1970-01-01 00:00:00. Returns false for anything else, including
/// out-of-range fields (month 13, February 30, hour 24).
bool parse_calendar_time(std::string_view text, int64_t& seconds);

/// Formats naive seconds since 1970-01-01 as `YYYY-MM-DD HH:MM:SS`.
std::string format_calendar_time(int64_t seconds);

/// Minimal CSV support shared by the workload readers: whole-file reads, line iteration with
/// 1-based line numbers, comma splitting with optional "double-quoted" fields, strict numbers.
namespace csv {

/// The whole file: a regular file or a pipe. Throws input_error "path: cannot open: reason"
/// (or "cannot read"), and for what is not text or would not end: a device, a NUL byte, a line
/// or a file over the limits of input_limits.hpp (naming the line).
std::string read_file(const std::string& path);

/// Iterates over the lines of a buffer (which must outlive it). Strips a UTF-8 byte-order mark
/// and a trailing '\r'.
class line_reader {
public:
  explicit line_reader(std::string_view text);
  /// Stores the next line, without its end of line, in `line`; false at the end of the text.
  bool next(std::string_view& line);
  /// 1-based number of the line last returned by next().
  size_t line_number() const { return line_; }

private:
  std::string_view text_;
  size_t pos_ = 0;
  size_t line_ = 0;
};

/// True when the line holds only spaces and tabs (blank lines are not rows).
bool is_blank(std::string_view line);

/// Splits lines into fields at commas. Unquoted fields are trimmed of spaces and tabs; a field
/// may be enclosed in double quotes, with "" standing for one quote (no line breaks inside).
class field_splitter {
public:
  /// Splits `line`; false when a quoted field is unterminated or followed by junk.
  /// The fields stay valid until the next call and while `line`'s buffer lives.
  bool split(std::string_view line);
  const std::vector<std::string_view>& fields() const { return fields_; }

private:
  std::vector<std::string_view> fields_;
  std::deque<std::string> unquoted_;
};

/// A finite decimal number filling the whole field (std::from_chars; a leading '+' allowed).
bool parse_double(std::string_view text, double& value);
/// A whole number filling the whole field; "3.0" is accepted as 3, "3.5" is not.
bool parse_int(std::string_view text, int64_t& value);
/// `text` made safe for a one-line message: cut to 40 characters, control characters escaped.
std::string printable(std::string_view text);

} // namespace csv

} // namespace aryl
