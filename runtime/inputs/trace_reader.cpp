#include "runtime/inputs/trace_reader.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <variant>
#include <unordered_map>

#include <sys/stat.h>

#include "solvers/control_chars.hpp"
#include "solvers/input_error.hpp"
#include "runtime/inputs/duration_text.hpp"
#include "runtime/inputs/input_limits.hpp"
#include "runtime/inputs/job_checks.hpp"

namespace aryl {

// ---------------------------------------------------------------------------------------------
// Calendar time
// ---------------------------------------------------------------------------------------------

namespace {

bool is_leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

unsigned days_in_month(int64_t y, unsigned m) {
  static constexpr unsigned days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && is_leap(y) ? 29 : days[m - 1];
}

/// Reads exactly `width` decimal digits at text[pos].
bool digits(std::string_view text, size_t pos, size_t width, unsigned& value) {
  if (pos + width > text.size()) return false;
  value = 0;
  for (size_t i = pos; i < pos + width; ++i) {
    const char c = text[i];
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  return true;
}

} // namespace

bool parse_calendar_time(std::string_view text, int64_t& seconds) {
  unsigned y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  if (text.size() != 10 && text.size() != 19) return false;
  if (!digits(text, 0, 4, y) || text[4] != '-' || !digits(text, 5, 2, mo) || text[7] != '-' ||
      !digits(text, 8, 2, d))
    return false;
  if (text.size() == 19) {
    if ((text[10] != ' ' && text[10] != 'T') || !digits(text, 11, 2, h) || text[13] != ':' ||
        !digits(text, 14, 2, mi) || text[16] != ':' || !digits(text, 17, 2, s))
      return false;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || s > 59)
    return false;
  seconds = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s;
  return true;
}

std::string format_calendar_time(int64_t seconds) {
  int64_t days = seconds >= 0 ? seconds / 86400 : -((-seconds + 86399) / 86400);
  const int64_t sod = seconds - days * 86400;
  // civil_from_days (inverse of days_from_civil).
  days += 719468;
  const int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const auto doe = static_cast<unsigned>(days - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  const int64_t y = static_cast<int64_t>(yoe) + era * 400 + (m <= 2 ? 1 : 0);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04lld-%02u-%02u %02lld:%02lld:%02lld", static_cast<long long>(y), m, d,
                static_cast<long long>(sod / 3600), static_cast<long long>(sod / 60 % 60),
                static_cast<long long>(sod % 60));
  return buf;
}

// ---------------------------------------------------------------------------------------------
// CSV toolkit
// ---------------------------------------------------------------------------------------------

namespace csv {

std::string read_file(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) throw input_error(path + ": cannot open: " + std::strerror(errno));
  std::string data;
  struct stat info {};
  if (::fstat(::fileno(file.get()), &info) == 0) {
    if (S_ISDIR(info.st_mode)) throw input_error(path + ": cannot open: " + std::strerror(EISDIR));
    // A device (/dev/zero, /dev/urandom) never ends; a pipe is read as it comes, within the
    // limits below.
    if (!S_ISREG(info.st_mode) && !S_ISFIFO(info.st_mode))
      throw input_error(path + ": not a regular file (nor a pipe): refused, it may never end");
    if (S_ISREG(info.st_mode) && static_cast<uint64_t>(info.st_size) > max_input_file_bytes)
      throw input_error(path + ": " + std::to_string(info.st_size) + " bytes, more than the limit of " +
                        std::to_string(max_input_file_bytes) + " for an input file");
    // One allocation of the right size for regular files (pipes just grow).
    if (S_ISREG(info.st_mode) && info.st_size > 0) data.reserve(static_cast<size_t>(info.st_size));
  }
  // Text has no NUL byte and no line of a megabyte: such input is refused as it arrives, so a
  // stream of either fails at once instead of filling the memory.
  size_t line = 1, line_start = 0;
  char buf[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, file.get())) > 0) {
    const size_t from = data.size();
    data.append(buf, n);
    for (size_t i = from; i < data.size(); ++i) {
      if (data[i] == '\n') {
        ++line;
        line_start = i + 1;
        continue;
      }
      if (data[i] == '\0') throw input_error(path + ":" + std::to_string(line) + ": a NUL byte: not a text file");
      if (i - line_start >= max_input_line_bytes)
        throw input_error(path + ":" + std::to_string(line) + ": a line longer than the limit of " +
                          std::to_string(max_input_line_bytes) + " bytes");
    }
    if (data.size() > max_input_file_bytes)
      throw input_error(path + ": more than the limit of " + std::to_string(max_input_file_bytes) +
                        " bytes for an input file");
  }
  if (std::ferror(file.get())) throw input_error(path + ": cannot read: " + std::strerror(errno));
  return data;
}

line_reader::line_reader(std::string_view text) : text_(text) {
  if (text_.substr(0, 3) == "\xEF\xBB\xBF") text_.remove_prefix(3);
}

bool line_reader::next(std::string_view& line) {
  if (pos_ >= text_.size()) return false;
  size_t end = text_.find('\n', pos_);
  if (end == std::string_view::npos) end = text_.size();
  line = text_.substr(pos_, end - pos_);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  pos_ = end + 1;
  ++line_;
  return true;
}

bool is_blank(std::string_view line) {
  return line.find_first_not_of(" \t") == std::string_view::npos;
}

namespace {
bool is_space(char c) { return c == ' ' || c == '\t'; }
} // namespace

bool field_splitter::split(std::string_view line) {
  fields_.clear();
  unquoted_.clear();
  const size_t n = line.size();
  size_t i = 0;
  while (true) {
    size_t start = i;
    while (start < n && is_space(line[start])) ++start;
    if (start < n && line[start] == '"') {
      std::string& value = unquoted_.emplace_back();
      size_t j = start + 1;
      bool closed = false;
      while (j < n) {
        if (line[j] == '"') {
          if (j + 1 < n && line[j + 1] == '"') {
            value += '"';
            j += 2;
            continue;
          }
          closed = true;
          ++j;
          break;
        }
        value += line[j++];
      }
      if (!closed) return false;
      while (j < n && is_space(line[j])) ++j;
      fields_.emplace_back(value);
      if (j == n) return true;
      if (line[j] != ',') return false;
      i = j + 1;
      continue;
    }
    const size_t comma = line.find(',', start);
    const size_t end = comma == std::string_view::npos ? n : comma;
    size_t last = end;
    while (last > start && is_space(line[last - 1])) --last;
    fields_.push_back(line.substr(start, last - start));
    if (comma == std::string_view::npos) return true;
    i = comma + 1;
  }
}

bool parse_double(std::string_view text, double& value) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return ec == std::errc() && ptr == end && std::isfinite(value);
}

bool parse_int(std::string_view text, int64_t& value) {
  std::string_view digits_only = text;
  if (!digits_only.empty() && digits_only.front() == '+') digits_only.remove_prefix(1);
  const char* end = digits_only.data() + digits_only.size();
  const auto [ptr, ec] = std::from_chars(digits_only.data(), end, value);
  if (!digits_only.empty() && ec == std::errc() && ptr == end) return true;
  double d = 0;
  if (!parse_double(text, d) || d != std::floor(d) || std::fabs(d) > 9.0e15) return false;
  value = static_cast<int64_t>(d);
  return true;
}

std::string printable(std::string_view text) {
  std::string out = escape_control(text.substr(0, 40));
  if (text.size() > 40) out += "...";
  return out;
}

} // namespace csv

// ---------------------------------------------------------------------------------------------
// Trace reading
// ---------------------------------------------------------------------------------------------

namespace {


/// One malformed row; caught by the row loop, which fails or counts it.
struct row_error {
  std::string message;
};

struct row_context {
  const std::string& path;
  size_t line;

  [[noreturn]] void fail(const std::string& message) const {
    throw row_error{path + ":" + std::to_string(line) + ": " + message};
  }
  [[noreturn]] void fail(std::string_view column, std::string_view value, std::string_view what) const {
    fail("column '" + std::string(column) + "': '" + csv::printable(value) + "' " + std::string(what));
  }
};

/// Column positions by header name; -1 = absent.
struct header {
  std::vector<std::string> names;
  /// Line number of the header (1 unless blank lines precede it).
  size_t line = 1;

  int find(std::string_view name) const {
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i] == name) return static_cast<int>(i);
    return -1;
  }
};

header read_header(const std::string& path, csv::line_reader& reader, csv::field_splitter& splitter) {
  std::string_view line;
  do {
    if (!reader.next(line)) throw input_error(path + ": empty file: expected a header line");
  } while (csv::is_blank(line));
  const std::string where = path + ":" + std::to_string(reader.line_number()) + ": ";
  if (!splitter.split(line)) throw input_error(where + "malformed quoted field in the header");
  // Column lookups are by name; a bounded header keeps them cheap.
  if (splitter.fields().size() > max_csv_columns)
    throw input_error(where + std::to_string(splitter.fields().size()) + " columns, more than the limit of " +
                      std::to_string(max_csv_columns));
  header h;
  h.line = reader.line_number();
  for (const auto field : splitter.fields()) {
    if (!field.empty() && h.find(field) >= 0)
      throw input_error(where + "column '" + csv::printable(field) + "' appears twice in the header");
    h.names.emplace_back(field);
  }
  return h;
}

int require_column(const std::string& path, const header& h, std::string_view name, std::string_view format) {
  const int col = h.find(name);
  if (col < 0)
    throw input_error(path + ":" + std::to_string(h.line) + ": missing column '" + std::string(name) + "' required by the " +
                      std::string(format) + " trace format");
  return col;
}

/// Runs `parse(ctx, fields)` on every non-blank data line; malformed rows fail or are counted.
template <class Parse>
void for_each_row(const std::string& path, csv::line_reader& reader, csv::field_splitter& splitter,
                  size_t columns, bool skip_bad_rows, trace_load& out, Parse&& parse) {
  std::string_view line;
  while (reader.next(line)) {
    if (csv::is_blank(line)) continue;
    const row_context ctx{path, reader.line_number()};
    try {
      if (!splitter.split(line)) ctx.fail("malformed quoted field");
      if (splitter.fields().size() != columns)
        ctx.fail("expected " + std::to_string(columns) + " fields as in the header, found " +
                 std::to_string(splitter.fields().size()));
      parse(ctx, splitter.fields());
      ++out.rows_read;
    } catch (const row_error& e) {
      if (!skip_bad_rows) throw input_error(e.message);
      ++out.bad_rows;
    }
  }
}

std::string_view field_or_empty(const std::vector<std::string_view>& fields, int col) {
  return col < 0 ? std::string_view{} : fields[static_cast<size_t>(col)];
}

double seconds_field(const row_context& ctx, const std::vector<std::string_view>& fields, int col,
                     std::string_view name, bool allow_zero) {
  const std::string_view v = fields[static_cast<size_t>(col)];
  double x = 0;
  if (v.empty()) ctx.fail("column '" + std::string(name) + "' is empty");
  if (!csv::parse_double(v, x)) ctx.fail(name, v, "is not a number");
  if (allow_zero ? x < 0 : x <= 0) ctx.fail(name, v, allow_zero ? "is negative" : "must be greater than 0");
  if (x > max_input_seconds) ctx.fail(name, v, "is too large (limit 1e9 seconds)");
  return x;
}

int count_field(const row_context& ctx, std::string_view v, std::string_view name) {
  int64_t x = 0;
  if (v.empty()) ctx.fail("column '" + std::string(name) + "' is empty");
  if (!csv::parse_int(v, x)) ctx.fail(name, v, "is not a whole number");
  if (x < 1) ctx.fail(name, v, "must be at least 1");
  if (x > max_job_gpus) ctx.fail(name, v, "is too large (limit 1000000)");
  return static_cast<int>(x);
}

bool bool_field(const row_context& ctx, std::string_view v, std::string_view name) {
  std::string lower(v);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; });
  if (lower == "1" || lower == "true") return true;
  if (lower == "0" || lower == "false") return false;
  ctx.fail(name, v, "is not 0, 1, true or false");
}

/// Orders `jobs` (and the parallel flags) stably by submit time and numbers them.
void sort_and_index(trace_load& out) {
  const auto earlier = [](const job_spec& a, const job_spec& b) { return a.submit < b.submit; };
  if (!std::is_sorted(out.jobs.begin(), out.jobs.end(), earlier)) {
    std::vector<size_t> order(out.jobs.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return earlier(out.jobs[a], out.jobs[b]); });
    std::vector<job_spec> jobs;
    std::vector<bool> flags;
    jobs.reserve(order.size());
    flags.reserve(order.size());
    for (const size_t i : order) {
      jobs.push_back(std::move(out.jobs[i]));
      flags.push_back(out.explicit_elastic[i]);
    }
    out.jobs = std::move(jobs);
    out.explicit_elastic = std::move(flags);
  }
  for (size_t i = 0; i < out.jobs.size(); ++i) out.jobs[i].index = static_cast<uint32_t>(i);
}

void read_canonical(const std::string& path, csv::line_reader& reader, csv::field_splitter& splitter,
                    const header& h, const trace_options& options, trace_load& out) {
  const int c_id = require_column(path, h, "job_id", "canonical");
  const int c_submit = require_column(path, h, "submit_s", "canonical");
  const int c_gpus = require_column(path, h, "gpus", "canonical");
  const int c_duration = require_column(path, h, "duration_s", "canonical");
  const int c_type = h.find("gpu_type");
  const int c_elastic = h.find("elastic");
  const int c_min = h.find("min_workers");
  const int c_max = h.find("max_workers");
  const int c_user = h.find("user");
  const int c_estimate = h.find("estimate_s");
  const int c_tenant = h.find("tenant");
  const int c_priority = h.find("priority");
  const int c_limit = h.find("time_limit");
  const int c_retries = h.find("max_retries");
  std::unordered_map<std::string, size_t> first_line;

  for_each_row(path, reader, splitter, h.names.size(), options.skip_bad_rows, out,
               [&](const row_context& ctx, const std::vector<std::string_view>& f) {
    job_spec job;
    const std::string_view id = f[static_cast<size_t>(c_id)];
    if (id.empty()) ctx.fail("column 'job_id' is empty");
    // A job's name is written to logs, tables and jobs.csv, one line per job.
    if (find_control(id) != std::string_view::npos) ctx.fail("job_id", id, "holds " + describe_control(id));
    job.name = std::string(id);
    job.submit = sim_time::from_seconds(seconds_field(ctx, f, c_submit, "submit_s", true));
    job.gpus = count_field(ctx, f[static_cast<size_t>(c_gpus)], "gpus");
    job.duration_s = seconds_field(ctx, f, c_duration, "duration_s", false);
    job.gpu_type = std::string(field_or_empty(f, c_type));
    job.user = std::string(field_or_empty(f, c_user));
    const std::string_view tenant = field_or_empty(f, c_tenant);
    if (find_control(tenant) != std::string_view::npos) ctx.fail("tenant", tenant, "holds " + describe_control(tenant));
    job.tenant = std::string(tenant);
    // A job's class, optional (empty: 0).
    if (const std::string_view pr = field_or_empty(f, c_priority); !pr.empty()) {
      int64_t x = 0;
      if (!csv::parse_int(pr, x)) ctx.fail("priority", pr, "is not a whole number");
      if (x < -max_priority || x > max_priority) ctx.fail("priority", pr, "is out of range (limit +-1000000)");
      job.priority = static_cast<int>(x);
    }
    // A time limit and retries, optional (empty: none, and the config's).
    if (const std::string_view tl = field_or_empty(f, c_limit); !tl.empty()) {
      auto seconds = parse_duration(tl);
      if (auto* why = std::get_if<std::string>(&seconds)) ctx.fail("time_limit", tl, *why);
      job.time_limit_s = std::get<double>(seconds);
    }
    if (const std::string_view mr = field_or_empty(f, c_retries); !mr.empty()) {
      int64_t x = 0;
      if (!csv::parse_int(mr, x) || x < 0 || x > max_job_retries)
        ctx.fail("max_retries", mr, "is not a whole number in 0.." + std::to_string(max_job_retries));
      job.max_retries = static_cast<int>(x);
    }
    // A column `estimate_s` left empty: the job comes without an estimate.
    if (c_estimate >= 0) {
      if (field_or_empty(f, c_estimate).empty()) job.estimated = false;
      else job.estimate_s = seconds_field(ctx, f, c_estimate, "estimate_s", false);
    }

    const std::string_view elastic = field_or_empty(f, c_elastic);
    const std::string_view min_w = field_or_empty(f, c_min);
    const std::string_view max_w = field_or_empty(f, c_max);
    const bool is_explicit = !elastic.empty();
    job.elastic = is_explicit && bool_field(ctx, elastic, "elastic");
    job.min_workers = job.max_workers = job.gpus;
    if (!is_explicit && (!min_w.empty() || !max_w.empty()))
      ctx.fail(std::string("column '") + (min_w.empty() ? "max_workers" : "min_workers") +
               "' is given but column 'elastic' is empty");
    if (job.elastic) {
      job.min_workers = min_w.empty() ? std::max(1, job.gpus / 2) : count_field(ctx, min_w, "min_workers");
      job.max_workers = max_w.empty() ? 2 * job.gpus : count_field(ctx, max_w, "max_workers");
      if (job.min_workers > job.max_workers)
        ctx.fail("column 'min_workers': " + std::to_string(job.min_workers) + " is greater than max_workers " +
                 std::to_string(job.max_workers));
      if (job.gpus < job.min_workers || job.gpus > job.max_workers)
        ctx.fail("column 'gpus': " + std::to_string(job.gpus) + " is outside [min_workers, max_workers] = [" +
                 std::to_string(job.min_workers) + ", " + std::to_string(job.max_workers) + "]");
    } else {
      for (const auto& [v, name] : {std::pair{min_w, "min_workers"}, std::pair{max_w, "max_workers"}}) {
        if (!v.empty() && count_field(ctx, v, name) != job.gpus)
          ctx.fail(name, v, "differs from gpus " + std::to_string(job.gpus) + " for an inelastic job");
      }
    }
    const auto [it, inserted] = first_line.try_emplace(job.name, ctx.line);
    if (!inserted) ctx.fail("job_id", id, "repeats the job of line " + std::to_string(it->second));
    out.jobs.push_back(std::move(job));
    out.explicit_elastic.push_back(is_explicit);
  });
  out.origin = path + " (canonical)";
}

std::optional<int64_t> date_option(std::string_view name, const std::string& value) {
  if (value.empty()) return std::nullopt;
  int64_t seconds = 0;
  if (!parse_calendar_time(value, seconds))
    throw input_error("trace option '" + std::string(name) + "': '" + csv::printable(value) +
                      "' is not a date (expected YYYY-MM-DD or YYYY-MM-DD HH:MM:SS)");
  return seconds;
}

void read_philly(const std::string& path, csv::line_reader& reader, csv::field_splitter& splitter,
                 const header& h, const trace_options& options, trace_load& out) {
  const std::optional<int64_t> from = date_option("from", options.from);
  const std::optional<int64_t> to = date_option("to", options.to);
  if (from && to && *from >= *to)
    throw input_error("trace option 'to': '" + options.to + "' is not after 'from' '" + options.from + "'");
  const int c_time = require_column(path, h, "timestamp", "philly");
  const int c_duration = require_column(path, h, "duration", "philly");
  const int c_gpus = require_column(path, h, "num_gpus", "philly");
  const int c_vc = h.find("cluster");
  if (!options.vc.empty() && c_vc < 0) throw input_error(path + ":" + std::to_string(h.line) + ": trace option 'vc' needs a column 'cluster'");

  struct row {
    int64_t at;
    double duration;
    int gpus;
    size_t line;
    std::string vc;
  };
  std::vector<row> rows;
  rows.reserve(100'000);
  for_each_row(path, reader, splitter, h.names.size(), options.skip_bad_rows, out,
               [&](const row_context& ctx, const std::vector<std::string_view>& f) {
    const std::string_view ts = f[static_cast<size_t>(c_time)];
    int64_t at = 0;
    if (!parse_calendar_time(ts, at)) ctx.fail("timestamp", ts, "is not a date-time (YYYY-MM-DD HH:MM:SS)");
    const double duration = seconds_field(ctx, f, c_duration, "duration", false);
    const int gpus = count_field(ctx, f[static_cast<size_t>(c_gpus)], "num_gpus");
    if (!options.vc.empty() && f[static_cast<size_t>(c_vc)] != options.vc) return;
    if ((from && at < *from) || (to && at >= *to)) return;
    rows.push_back(row{at, duration, gpus, ctx.line, c_vc >= 0 ? std::string(f[static_cast<size_t>(c_vc)]) : std::string()});
  });

  int64_t time0 = 0;
  if (from) {
    time0 = *from;
  } else if (!rows.empty()) {
    time0 = std::min_element(rows.begin(), rows.end(), [](const row& a, const row& b) { return a.at < b.at; })->at;
  }
  // Sorting the small rows here leaves sort_and_index nothing to move.
  std::stable_sort(rows.begin(), rows.end(), [](const row& a, const row& b) { return a.at < b.at; });
  out.jobs.reserve(rows.size());
  for (const row& r : rows) {
    job_spec job;
    job.name = "philly-" + std::to_string(r.line);
    job.submit = sim_time::from_us((r.at - time0) * 1'000'000);
    job.gpus = r.gpus;
    job.duration_s = r.duration;
    job.min_workers = job.max_workers = r.gpus;
    job.tenant = r.vc;
    out.jobs.push_back(std::move(job));
  }
  out.explicit_elastic.assign(out.jobs.size(), false);

  out.origin = path + " (philly";
  if (!options.vc.empty()) out.origin += "; vc " + options.vc;
  if (from) out.origin += "; from " + format_calendar_time(*from);
  if (to) out.origin += "; before " + format_calendar_time(*to);
  out.origin += rows.empty() ? "; no jobs)" : "; time 0 = " + format_calendar_time(time0) + ")";
}

} // namespace

trace_load read_trace(const std::string& path, const trace_options& options) {
  std::string format = options.format;
  if (format != "canonical" && format != "philly" && format != "auto")
    throw input_error("trace option 'format': '" + csv::printable(format) + "' is not one of canonical, philly, auto");
  // Options are checked before the file is read, so that a typo fails fast.
  date_option("from", options.from);
  date_option("to", options.to);

  const std::string text = csv::read_file(path);
  csv::line_reader reader(text);
  csv::field_splitter splitter;
  const header h = read_header(path, reader, splitter);
  if (format == "auto") {
    if (h.find("submit_s") >= 0) {
      format = "canonical";
    } else if (h.find("timestamp") >= 0 && h.find("num_gpus") >= 0) {
      format = "philly";
    } else {
      throw input_error(path + ":" + std::to_string(h.line) + ": cannot tell the trace format from the header; set it to canonical or philly");
    }
  }
  if (format == "canonical") {
    for (const auto& [name, value] : {std::pair{"vc", &options.vc}, std::pair{"from", &options.from},
                                      std::pair{"to", &options.to}}) {
      if (!value->empty())
        throw input_error(std::string("trace option '") + name + "' applies only to the philly format, not to " + path);
    }
  }

  trace_load out;
  if (format == "canonical") {
    read_canonical(path, reader, splitter, h, options, out);
  } else {
    read_philly(path, reader, splitter, h, options, out);
  }
  sort_and_index(out);
  return out;
}

} // namespace aryl
