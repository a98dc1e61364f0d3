#include "runtime/live/status_view.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <optional>
#include <sstream>

#include "solvers/control_chars.hpp"
#include "solvers/input_error.hpp"

namespace aryl::live {

namespace {

constexpr status_column columns[] = {
    {"jobid", "JOBID", "job_id", true},
    {"name", "NAME", "name", false},
    {"user", "USER", "user", false},
    {"tenant", "TENANT", "tenant", false},
    {"state", "STATE", "state outcome", true},
    {"workers", "WORKERS", "workers", true},
    {"gpus", "GPUS", "gpus", true},
    {"min_workers", "MIN", "min_workers", true},
    {"max_workers", "MAX", "max_workers", true},
    {"gpu_type", "TYPE", "gpu_type", false},
    {"time", "TIME", "run_s", true},
    {"servers", "SERVERS", "servers", false},
    {"reason", "REASON", "reason exits", false},
};

const status_column* column_named(const std::string& name) {
  for (auto& c : columns)
    if (c.name == name) return &c;
  return nullptr;
}

/// The names of the servers in "t0:4 t1:2".
std::set<std::string> server_names(const std::optional<std::string>& servers) {
  std::set<std::string> out;
  std::istringstream in(servers.value_or(""));
  for (std::string place; in >> place;) out.insert(place.substr(0, place.rfind(':')));
  return out;
}

/// A numeric column's value; nothing where the job has none.
std::optional<double> number(const wire::job_info& j, const status_column& c) {
  auto opt = [](const std::optional<uint32_t>& v) { return v ? std::optional<double>(*v) : std::nullopt; };
  if (c.name == "jobid") return static_cast<double>(j.job_id);
  if (c.name == "state") return static_cast<double>(j.state);
  if (c.name == "workers") return j.workers;
  if (c.name == "gpus") return opt(j.gpus);
  if (c.name == "min_workers") return opt(j.min_workers);
  if (c.name == "max_workers") return opt(j.max_workers);
  if (c.name == "time") return j.run_s;
  return std::nullopt;
}

} // namespace

std::vector<std::string> split_list(const std::string& list) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(list);
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::span<const status_column> status_columns() { return columns; }

std::string column_names() {
  std::string out;
  for (auto& c : columns) out += (out.empty() ? "" : ", ") + std::string(c.name);
  return out;
}

std::string_view state_name(wire::job_state s) {
  switch (s) {
    case wire::job_state::queued: return "queued";
    case wire::job_state::running: return "running";
    case wire::job_state::done: return "done";
    case wire::job_state::failed: return "failed";
    case wire::job_state::cancelled: return "cancelled";
  }
  return "?";
}

std::string clock_text(double seconds) {
  auto s = static_cast<int64_t>(seconds);
  auto days = s / 86400;
  s %= 86400;
  auto hms = fmt::format("{}:{:02}:{:02}", s / 3600, s % 3600 / 60, s % 60);
  return days > 0 ? fmt::format("{}-{}", days, hms) : hms;
}

std::set<wire::job_state> parse_states(const std::string& flag, const std::string& list) {
  // Slurm's compact codes, for users who type squeue's -t.
  static const std::pair<std::string_view, wire::job_state> names[] = {
      {"queued", wire::job_state::queued}, {"running", wire::job_state::running}, {"done", wire::job_state::done},
      {"failed", wire::job_state::failed}, {"cancelled", wire::job_state::cancelled}, {"pd", wire::job_state::queued},
      {"r", wire::job_state::running},     {"cd", wire::job_state::done},         {"f", wire::job_state::failed},
      {"ca", wire::job_state::cancelled}};
  std::set<wire::job_state> out;
  for (auto& item : split_list(list)) {
    auto it = std::find_if(std::begin(names), std::end(names), [&](auto& n) { return n.first == lower(item); });
    if (it == std::end(names))
      throw input_error(fmt::format("{}: '{}' is not a job state (queued, running, done, failed, cancelled, or "
                                    "Slurm's PD, R, CD, F, CA)",
                                    flag, escape_control(item)));
    out.insert(it->second);
  }
  if (out.empty()) throw input_error(flag + ": give at least one state");
  return out;
}

std::vector<const status_column*> parse_columns(const std::string& flag, const std::string& list) {
  std::vector<const status_column*> out;
  for (auto& item : split_list(list)) {
    auto* c = column_named(lower(item));
    if (!c)
      throw input_error(fmt::format("{}: '{}' is not a column (valid: {})", flag, escape_control(item), column_names()));
    out.push_back(c);
  }
  if (out.empty()) throw input_error(fmt::format("{}: give at least one column (valid: {})", flag, column_names()));
  return out;
}

status_sort parse_sort(const std::string& flag, const std::string& text) {
  status_sort out;
  out.descending = !text.empty() && text[0] == '-';
  auto name = lower(text.substr(out.descending ? 1 : 0));
  out.column = column_named(name);
  if (!out.column)
    throw input_error(fmt::format("{}: '{}' is not a column (valid: {}; a leading '-' sorts descending)", flag,
                                  escape_control(text), column_names()));
  return out;
}

wire::status_reply narrowed(wire::status_reply s, const status_filter& f, const status_sort& sort) {
  auto keep = [&](const wire::job_info& j) {
    if (!f.users.empty() && !(j.user && f.users.count(*j.user))) return false;
    if (!f.tenants.empty() && !(j.tenant && f.tenants.count(*j.tenant))) return false;
    if (!f.states.empty() && !f.states.count(j.state)) return false;
    if (f.servers.empty()) return true;
    auto on = server_names(j.servers);
    return std::any_of(on.begin(), on.end(), [&](auto& name) { return f.servers.count(name) > 0; });
  };
  std::erase_if(s.jobs, [&](auto& j) { return !keep(j); });
  if (sort.column) {
    auto& c = *sort.column;
    auto less = [&](const wire::job_info& a, const wire::job_info& b) {
      if (!c.numeric) return cell(a, c) < cell(b, c);
      auto x = number(a, c), y = number(b, c);
      return y && (!x || *x < *y);
    };
    std::stable_sort(s.jobs.begin(), s.jobs.end(), [&](auto& a, auto& b) { return sort.descending ? less(b, a) : less(a, b); });
  }
  if (!f.servers.empty()) {
    std::erase_if(s.servers, [&](auto& v) { return !f.servers.count(v.name); });
    std::erase_if(s.loans, [&](auto& l) { return !f.servers.count(l.server); });
  }
  if (!f.tenants.empty() && s.tenants) std::erase_if(*s.tenants, [&](auto& t) { return !f.tenants.count(t.name); });
  return s;
}

std::string cell(const wire::job_info& j, const status_column& c) {
  auto text = [](const std::optional<std::string>& v) { return v ? escape_control(*v) : std::string("-"); };
  auto count = [](const std::optional<uint32_t>& v) { return v ? std::to_string(*v) : std::string("-"); };
  if (c.name == "jobid") return j.array_job && j.array_task ? fmt::format("{}_{}", *j.array_job, *j.array_task)
                                                          : std::to_string(j.job_id);
  if (c.name == "name") return escape_control(j.name);
  if (c.name == "user") return text(j.user);
  if (c.name == "tenant") return text(j.tenant);
  // An ended job: its outcome, finer than its state (timeout and node_lost are failed).
  if (c.name == "state")
    return j.outcome ? escape_control(*j.outcome) : j.held && *j.held ? "held" : std::string(state_name(j.state));
  if (c.name == "workers") return std::to_string(j.workers);
  if (c.name == "gpus") return count(j.gpus);
  if (c.name == "min_workers") return count(j.min_workers);
  if (c.name == "max_workers") return count(j.max_workers);
  if (c.name == "gpu_type") return j.gpu_type ? escape_control(*j.gpu_type) : std::string("any");
  if (c.name == "time") return j.run_s ? clock_text(*j.run_s) : std::string("-");
  if (c.name == "servers") return j.servers && !j.servers->empty() ? escape_control(*j.servers) : std::string("-");
  if (c.name == "reason") return j.exits ? "exits " + escape_control(*j.exits) : text(j.reason);
  return "?";
}

std::string job_table(const std::vector<wire::job_info>& jobs, const std::vector<const status_column*>& columns,
                      const std::vector<std::string>& ids) {
  std::vector<bool> right;
  // A state sorts by its order but reads as a word.
  for (auto* c : columns) right.push_back(c->numeric && c->name != "state");
  return aligned_table(jobs.size() + 1, right, [&](size_t row, size_t col) {
    if (row == 0) return std::string(columns[col]->header);
    auto& c = *columns[col];
    return c.name == "jobid" && row - 1 < ids.size() ? ids[row - 1] : cell(jobs[row - 1], c);
  });
}

std::string aligned_table(size_t rows, const std::vector<bool>& right,
                          const std::function<std::string(size_t row, size_t col)>& cell_at) {
  // Two passes over the cells rather than a table of them: a million rows of history would
  // hold a gigabyte of cells.
  std::vector<size_t> width(right.size(), 0);
  for (size_t r = 0; r < rows; ++r)
    for (size_t i = 0; i < right.size(); ++i) width[i] = std::max(width[i], cell_at(r, i).size());
  std::string out;
  for (size_t r = 0; r < rows; ++r) {
    for (size_t i = 0; i < right.size(); ++i) {
      // Numbers right-aligned, as squeue does; the last column unpadded.
      if (i > 0) out += "  ";
      auto v = cell_at(r, i);
      if (right[i]) out += fmt::format("{:>{}}", v, width[i]);
      else out += i + 1 == right.size() ? v : fmt::format("{:<{}}", v, width[i]);
    }
    out += '\n';
  }
  return out;
}

std::set<std::string> json_keys(const std::vector<const status_column*>& columns) {
  std::set<std::string> out;
  for (auto* c : columns) {
    std::istringstream in{std::string(c->json)};
    for (std::string key; in >> key;) out.insert(key);
  }
  return out;
}

std::string rank_ranges(std::vector<uint32_t> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t k = i;
    while (k + 1 < ranks.size() && ranks[k + 1] == ranks[k] + 1) ++k;
    out += (out.empty() ? "" : ",") + (k == i ? std::to_string(ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[k]));
    i = k + 1;
  }
  return out;
}

} // namespace aryl::live
