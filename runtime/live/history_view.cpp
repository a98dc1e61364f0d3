#include "runtime/live/history_view.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <ctime>
#include <regex>

#include "runtime/inputs/csv_field.hpp"
#include "runtime/live/status_view.hpp"
#include "solvers/control_chars.hpp"
#include "solvers/input_error.hpp"

namespace aryl::live {
namespace {

constexpr history_column columns[] = {
    {"id", "JOBID", true},      {"name", "NAME", false},   {"user", "USER", false},
    {"tenant", "TENANT", false}, {"submit", "SUBMIT", false}, {"start", "START", false},
    {"end", "END", false},       {"wait", "WAIT", true},     {"run", "RUN", true},
    {"gpus", "GPUS", true},      {"outcome", "OUTCOME", false}, {"exits", "EXITCODE", false},
    {"attempts", "ATTEMPTS", true},
};

std::string column_list() {
  std::string out;
  for (auto& c : columns) out += (out.empty() ? "" : ", ") + std::string(c.name);
  return out;
}

std::vector<const history_column*> or_all(std::vector<const history_column*> picked) {
  if (picked.empty())
    for (auto& c : columns) picked.push_back(&c);
  return picked;
}

/// The outcome column: the outcome once ended, else the state.
const std::string& outcome_or_state(const history_row& r) { return r.outcome.empty() ? r.state : r.outcome; }

} // namespace

std::optional<double> history_row::run_s() const {
  if (!start_us || !end_us || *end_us < *start_us) return std::nullopt;
  return static_cast<double>(*end_us - *start_us) / 1e6;
}

int64_t parse_history_time(const std::string& flag, const std::string& text, int64_t now_us) {
  auto bad = [&] {
    return input_error(fmt::format("{}: '{}' is not a time (2026-11-01, 2026-11-01T12:00 or 2026-11-01T12:00:30 in "
                                   "UTC, or before now: -7d, -12h, -30m, -45s, now)",
                                   flag, escape_control(text)));
  };
  if (text == "now") return now_us;
  static const std::regex relative(R"(-([0-9]{1,6})([smhd]))");
  static const std::regex absolute(R"(([0-9]{4})-([0-9]{2})-([0-9]{2})(?:T([0-9]{2}):([0-9]{2})(?::([0-9]{2}))?)?Z?)");
  std::smatch m;
  if (std::regex_match(text, m, relative)) {
    int64_t n = std::stoll(m[1].str());
    int64_t unit = m[2] == "s" ? 1 : m[2] == "m" ? 60 : m[2] == "h" ? 3600 : 86400;
    return now_us - n * unit * 1'000'000;
  }
  if (!std::regex_match(text, m, absolute)) throw bad();
  auto num = [&](size_t i) { return m[i].matched ? std::stoi(m[i].str()) : 0; };
  std::tm t{};
  t.tm_year = num(1) - 1900;
  t.tm_mon = num(2) - 1;
  t.tm_mday = num(3);
  t.tm_hour = num(4);
  t.tm_min = num(5);
  t.tm_sec = num(6);
  std::tm given = t;
  time_t s = timegm(&t);
  // timegm normalises 2026-02-30 to March 2: a date it changed is not a date.
  if (t.tm_year != given.tm_year || t.tm_mon != given.tm_mon || t.tm_mday != given.tm_mday ||
      t.tm_hour != given.tm_hour || t.tm_min != given.tm_min || t.tm_sec != given.tm_sec)
    throw bad();
  return static_cast<int64_t>(s) * 1'000'000;
}

std::set<std::string> parse_outcomes(const std::string& flag, const std::string& list) {
  static const std::pair<std::string_view, std::string_view> names[] = {
      {"done", "done"},     {"failed", "failed"},       {"timeout", "timeout"}, {"node_lost", "node_lost"},
      {"cancelled", "cancelled"}, {"dependency_never_met", "dependency_never_met"}, {"queued", "queued"}, {"running", "running"}, {"cd", "done"},
      {"f", "failed"},      {"to", "timeout"},          {"nf", "node_lost"},    {"ca", "cancelled"},
      {"pd", "queued"},     {"r", "running"}};
  std::set<std::string> out;
  for (auto& item : split_list(list)) {
    auto it = std::find_if(std::begin(names), std::end(names), [&](auto& n) { return n.first == lower(item); });
    if (it == std::end(names))
      throw input_error(fmt::format("{}: '{}' is not an outcome (done, failed, timeout, node_lost, cancelled, "
                                    "dependency_never_met, or queued, running for jobs not ended; sacct's CD, F, TO, NF, CA, PD, R)",
                                    flag, escape_control(item)));
    out.emplace(it->second);
  }
  if (out.empty()) throw input_error(flag + ": give at least one outcome");
  return out;
}

std::string iso_time(int64_t unix_us) {
  // Floor to the second, also before 1970.
  time_t s = static_cast<time_t>(unix_us >= 0 ? unix_us / 1'000'000 : -((-unix_us + 999'999) / 1'000'000));
  std::tm t{};
  gmtime_r(&s, &t);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", t.tm_year + 1900, t.tm_mon + 1, t.tm_mday, t.tm_hour,
                     t.tm_min, t.tm_sec);
}

std::span<const history_column> history_columns() { return columns; }

std::vector<const history_column*> parse_history_columns(const std::string& flag, const std::string& list) {
  std::vector<const history_column*> out;
  for (auto& item : split_list(list)) {
    auto it = std::find_if(std::begin(columns), std::end(columns), [&](auto& c) { return c.name == lower(item); });
    if (it == std::end(columns))
      throw input_error(fmt::format("{}: '{}' is not a column (valid: {})", flag, escape_control(item), column_list()));
    out.push_back(&*it);
  }
  if (out.empty()) throw input_error(fmt::format("{}: give at least one column (valid: {})", flag, column_list()));
  return out;
}

std::string history_cell(const history_row& r, const history_column& c) {
  auto text = [](const std::string& v) { return v.empty() ? std::string("-") : escape_control(v); };
  auto when = [](const std::optional<int64_t>& us) { return us ? iso_time(*us) : std::string("-"); };
  if (c.name == "id") return std::to_string(r.id);
  if (c.name == "name") return text(r.name);
  if (c.name == "user") return text(r.user);
  if (c.name == "tenant") return text(r.tenant);
  if (c.name == "submit") return iso_time(r.submit_us);
  if (c.name == "start") return when(r.start_us);
  if (c.name == "end") return when(r.end_us);
  if (c.name == "wait") return clock_text(r.wait_s);
  if (c.name == "run") return r.run_s() ? clock_text(*r.run_s()) : std::string("-");
  if (c.name == "gpus") return std::to_string(r.gpus);
  if (c.name == "outcome") return text(outcome_or_state(r));
  if (c.name == "exits") return text(r.exits);
  if (c.name == "attempts") return std::to_string(r.attempts);
  return "?";
}

std::string history_table(const std::vector<history_row>& rows, std::vector<const history_column*> picked) {
  picked = or_all(std::move(picked));
  std::vector<bool> right;
  for (auto* c : picked) right.push_back(c->right);
  return aligned_table(rows.size() + 1, right, [&](size_t row, size_t col) {
    return row == 0 ? std::string(picked[col]->header) : history_cell(rows[row - 1], *picked[col]);
  });
}

std::string history_csv(const std::vector<history_row>& rows, std::vector<const history_column*> picked) {
  picked = or_all(std::move(picked));
  std::string out;
  auto line = [&](auto&& field_of) {
    for (size_t i = 0; i < picked.size(); ++i) {
      if (i > 0) out += ',';
      csv::append_field(out, field_of(*picked[i]));
    }
    out += '\n';
  };
  line([](const history_column& c) { return std::string(c.name); });
  for (auto& r : rows)
    line([&](const history_column& c) -> std::string {
      // Numbers as numbers, a missing value empty.
      if (c.name == "wait") return fmt::format("{}", r.wait_s);
      if (c.name == "run") return r.run_s() ? fmt::format("{}", *r.run_s()) : "";
      auto v = history_cell(r, c);
      return v == "-" && c.name != "name" ? "" : v;
    });
  return out;
}

std::string history_json(const std::vector<history_row>& rows, std::vector<const history_column*> picked) {
  using nlohmann::json;
  picked = or_all(std::move(picked));
  json jobs = json::array();
  for (auto& r : rows) {
    json j = json::object();
    auto opt_text = [](const std::string& v) { return v.empty() ? json(nullptr) : json(v); };
    auto opt_time = [](const std::optional<int64_t>& us) { return us ? json(iso_time(*us)) : json(nullptr); };
    for (auto* c : picked) {
      auto n = c->name;
      auto& v = j[std::string(n == "wait" ? "wait_s" : n == "run" ? "run_s" : n)];
      if (n == "id") v = r.id;
      else if (n == "name") v = r.name;
      else if (n == "user") v = opt_text(r.user);
      else if (n == "tenant") v = opt_text(r.tenant);
      else if (n == "submit") v = iso_time(r.submit_us);
      else if (n == "start") v = opt_time(r.start_us);
      else if (n == "end") v = opt_time(r.end_us);
      else if (n == "wait") v = r.wait_s;
      else if (n == "run") v = r.run_s() ? json(*r.run_s()) : json(nullptr);
      else if (n == "gpus") v = r.gpus;
      else if (n == "outcome") v = outcome_or_state(r);
      else if (n == "exits") v = opt_text(r.exits);
      else if (n == "attempts") v = r.attempts;
    }
    jobs.push_back(std::move(j));
  }
  return json{{"jobs", std::move(jobs)}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

} // namespace aryl::live
