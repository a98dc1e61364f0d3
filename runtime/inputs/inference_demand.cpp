#include "runtime/inputs/inference_demand.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <numbers>
#include <optional>
#include <random>
#include <system_error>

#include "solvers/input_error.hpp"
#include "runtime/inputs/input_limits.hpp"
#include "runtime/inputs/trace_reader.hpp"

namespace aryl {
namespace {


std::string where(const std::string& path, size_t line) { return path + ":" + std::to_string(line) + ": "; }

[[noreturn]] void bad(const std::string& path, size_t line, std::string_view column, std::string_view value,
                      std::string_view what) {
  throw input_error(where(path, line) + "column '" + std::string(column) + "': '" + csv::printable(value) + "' " +
                    std::string(what));
}

sim_time time_field(const std::string& path, size_t line, std::string_view column, std::string_view v) {
  double s = 0;
  if (v.empty()) throw input_error(where(path, line) + "column '" + std::string(column) + "' is empty");
  if (!csv::parse_double(v, s)) bad(path, line, column, v, "is not a number");
  if (s < 0) bad(path, line, column, v, "is negative");
  if (s > max_input_seconds) bad(path, line, column, v, "is too large (limit 1e9 seconds)");
  return sim_time::from_seconds(s);
}

int column_of(const std::vector<std::string_view>& header, std::string_view name) {
  const auto it = std::find(header.begin(), header.end(), name);
  return it == header.end() ? -1 : static_cast<int>(it - header.begin());
}

/// Adds the rates of one ServeGen file (derived total-rate or raw per-client) into `rates`,
/// keyed by window start.
void add_rates(const std::string& path, std::map<sim_time, double>& rates) {
  const std::string text = csv::read_file(path);
  csv::line_reader reader(text);
  csv::field_splitter splitter;
  std::string_view line;
  int c_time = 0, c_rate = 1;
  std::string time_name = "window_start_s", rate_name = "rate";
  size_t columns = 0;  // 0 = raw file: at least two columns
  bool first = true;
  std::optional<sim_time> previous;
  while (reader.next(line)) {
    if (csv::is_blank(line)) continue;
    const size_t n = reader.line_number();
    if (!splitter.split(line)) throw input_error(where(path, n) + "malformed quoted field");
    const auto& f = splitter.fields();
    double probe = 0;
    if (first && !f.empty() && !csv::parse_double(f[0], probe)) {
      c_time = column_of(f, "window_start_s");
      c_rate = column_of(f, "total_rate_rps");
      if (c_time < 0 || c_rate < 0)
        throw input_error(where(path, n) + "expected the header window_start_s,total_rate_rps or no header");
      rate_name = "total_rate_rps";
      columns = f.size();
      first = false;
      continue;
    }
    first = false;
    if (columns ? f.size() != columns : f.size() < 2)
      throw input_error(where(path, n) + "expected " + (columns ? std::to_string(columns) : "at least 2") +
                        " fields, found " + std::to_string(f.size()));
    const std::string_view tv = f[static_cast<size_t>(c_time)], rv = f[static_cast<size_t>(c_rate)];
    const sim_time t = time_field(path, n, time_name, tv);
    double rate = 0;
    if (!csv::parse_double(rv, rate)) bad(path, n, rate_name, rv, "is not a number");
    if (rate < 0) bad(path, n, rate_name, rv, "is negative");
    if (previous && t <= *previous) bad(path, n, time_name, tv, "is not after the previous window");
    previous = t;
    rates[t] += rate;
  }
  if (!previous) throw input_error(path + ": no rate windows");
}

/// The chunk-<i>-trace.csv files of a ServeGen model directory, by increasing i.
std::vector<std::filesystem::path> chunk_files(const std::string& dir) {
  std::vector<std::pair<long, std::filesystem::path>> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    constexpr std::string_view prefix = "chunk-", suffix = "-trace.csv";
    if (name.size() <= prefix.size() + suffix.size() || !name.starts_with(prefix) || !name.ends_with(suffix))
      continue;
    const std::string_view number(name.data() + prefix.size(), name.size() - prefix.size() - suffix.size());
    int64_t i = 0;
    if (number.find_first_not_of("0123456789") != std::string_view::npos || !csv::parse_int(number, i)) continue;
    found.emplace_back(static_cast<long>(i), entry.path());
  }
  if (ec) throw input_error(dir + ": cannot open: " + ec.message());
  std::sort(found.begin(), found.end());
  std::vector<std::filesystem::path> files;
  for (auto& [i, p] : found) files.push_back(std::move(p));
  if (files.empty()) throw input_error(dir + ": no chunk-*-trace.csv files in this directory");
  return files;
}

/// Box-Muller standard normal from two uniforms (explicit, so sequences are library-independent).
double standard_normal(std::mt19937_64& rng) {
  const double u1 = (static_cast<double>(rng() >> 11) + 1) * 0x1.0p-53;  // (0, 1]
  const double u2 = static_cast<double>(rng() >> 11) * 0x1.0p-53;        // [0, 1)
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
}

} // namespace

std::vector<demand_point> read_demand_csv(const std::string& path) {
  const std::string text = csv::read_file(path);
  csv::line_reader reader(text);
  csv::field_splitter splitter;
  std::string_view line;
  do {
    if (!reader.next(line)) throw input_error(path + ": empty file: expected the header t_s,servers_needed");
  } while (csv::is_blank(line));
  if (!splitter.split(line)) throw input_error(where(path, reader.line_number()) + "malformed quoted field");
  const std::vector<std::string_view> header = splitter.fields();
  const size_t columns = header.size();
  const int c_t = column_of(header, "t_s");
  int c_n = column_of(header, "servers_needed");
  std::string n_name = "servers_needed";
  if (c_n < 0) {
    c_n = column_of(header, "demand");
    n_name = "demand";
  }
  if (c_t < 0) throw input_error(where(path, reader.line_number()) + "missing column 't_s'");
  if (c_n < 0) throw input_error(where(path, reader.line_number()) + "missing column 'servers_needed' (or 'demand')");

  std::vector<demand_point> points;
  while (reader.next(line)) {
    if (csv::is_blank(line)) continue;
    const size_t n = reader.line_number();
    if (!splitter.split(line)) throw input_error(where(path, n) + "malformed quoted field");
    const auto& f = splitter.fields();
    if (f.size() != columns)
      throw input_error(where(path, n) + "expected " + std::to_string(columns) + " fields as in the header, found " +
                        std::to_string(f.size()));
    const std::string_view tv = f[static_cast<size_t>(c_t)], nv = f[static_cast<size_t>(c_n)];
    const sim_time t = time_field(path, n, "t_s", tv);
    int64_t servers = 0;
    if (nv.empty()) throw input_error(where(path, n) + "column '" + n_name + "' is empty");
    if (!csv::parse_int(nv, servers)) bad(path, n, n_name, nv, "is not a whole number");
    if (servers < 0) bad(path, n, n_name, nv, "is negative");
    if (servers > max_servers) bad(path, n, n_name, nv, "is too large (limit 100000)");
    if (!points.empty() && t <= points.back().t)
      bad(path, n, "t_s", tv, "is not after the previous row's t_s (rows must be sorted by time)");
    points.push_back(demand_point{t, static_cast<int>(servers)});
  }
  if (points.empty()) throw input_error(path + ": no data rows after the header");
  return points;
}

std::vector<demand_point> read_servegen_demand(const std::string& path, int inference_servers,
                                               double peak_utilisation) {
  if (inference_servers < 1)
    throw input_error("servegen demand: inference_servers " + std::to_string(inference_servers) +
                      " must be at least 1");
  if (!(peak_utilisation > 0 && peak_utilisation <= 1))
    throw input_error("servegen demand: peak_utilisation " + std::to_string(peak_utilisation) +
                      " is not in (0, 1]");
  std::map<sim_time, double> rates;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    for (const auto& file : chunk_files(path)) add_rates(file.string(), rates);
  } else {
    add_rates(path, rates);
  }
  double peak = 0;
  for (const auto& [t, r] : rates) peak = std::max(peak, r);
  std::vector<demand_point> points;
  points.reserve(rates.size());
  for (const auto& [t, r] : rates) {
    // 1e-9 keeps the exact peak at peak_utilisation * servers despite rounding in the division.
    const double need = peak > 0 ? std::ceil(r / peak * peak_utilisation * inference_servers - 1e-9) : 0;
    points.push_back(demand_point{t, static_cast<int>(std::clamp(need, 0.0, double(inference_servers)))});
  }
  return points;
}

std::vector<demand_point> synthetic_demand(uint64_t seed, int inference_servers, double days, int64_t interval_s) {
  if (inference_servers < 1)
    throw input_error("synthetic demand: inference_servers " + std::to_string(inference_servers) +
                      " must be at least 1");
  if (!(std::isfinite(days) && days > 0 && days < 1e5))
    throw input_error("synthetic demand: days " + std::to_string(days) + " is not in (0, 100000)");
  if (interval_s < 1)
    throw input_error("synthetic demand: interval_s " + std::to_string(interval_s) + " must be at least 1");

  constexpr double mean = 0.65, amplitude = 0.25, peak_hour = 20, noise_sd = 0.03, correlation = 0.7;
  std::mt19937_64 rng(seed);
  const auto span = static_cast<int64_t>(std::llround(days * 86400));
  const double servers = inference_servers;
  std::vector<demand_point> points;
  double noise = noise_sd * standard_normal(rng);
  for (int64_t t = 0; t < span; t += interval_s) {
    if (t > 0) noise = correlation * noise + std::sqrt(1 - correlation * correlation) * noise_sd * standard_normal(rng);
    const double hour = static_cast<double>(t % 86400) / 3600;
    const double level = mean + amplitude * std::cos(2 * std::numbers::pi * (hour - peak_hour) / 24) + noise;
    const double need = std::clamp(std::round(level * servers), 0.0, servers);
    points.push_back(demand_point{sim_time::from_us(t * 1'000'000), static_cast<int>(need)});
  }
  return points;
}

} // namespace aryl
