#include "solvers/job_queue_rules.hpp"

#include <algorithm>
#include <charconv>
#include <set>

#include "solvers/input_error.hpp"

namespace aryl {
namespace {

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  size_t from = 0;
  for (;;) {
    auto at = text.find(sep, from);
    out.push_back(text.substr(from, at == std::string_view::npos ? std::string_view::npos : at - from));
    if (at == std::string_view::npos) return out;
    from = at + 1;
  }
}

std::optional<uint32_t> whole(std::string_view s) {
  uint32_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<after_kind> kind_named(std::string_view s) {
  if (s == "ok" || s == "afterok") return after_kind::ok;
  if (s == "any" || s == "afterany") return after_kind::any;
  if (s == "notok" || s == "afternotok") return after_kind::notok;
  return std::nullopt;
}

const char* kind_name(after_kind k) {
  switch (k) {
    case after_kind::ok: return "ok";
    case after_kind::any: return "any";
    case after_kind::notok: return "notok";
  }
  return "?";
}

} // namespace

std::vector<job_dependency> parse_after(std::string_view text, const std::string& what) {
  std::vector<job_dependency> out;
  if (text.empty()) throw input_error(what + ": give JOB[:ok|any|notok][,JOB...]");
  for (auto item : split(text, ',')) {
    auto parts = split(item, ':');
    // JOB[:KIND], or Slurm's KIND:JOB[:JOB...]
    std::optional<after_kind> kind = after_kind::ok;
    std::vector<std::string_view> jobs;
    if (parts.size() >= 2 && kind_named(parts[0]) && !whole(parts[0])) {
      kind = kind_named(parts[0]);
      jobs.assign(parts.begin() + 1, parts.end());
    } else if (parts.size() <= 2) {
      jobs.push_back(parts[0]);
      if (parts.size() == 2) kind = kind_named(parts[1]);
    } else {
      kind.reset();
    }
    if (!kind)
      throw input_error(what + ": '" + std::string(item) + "': give JOB, JOB:ok, JOB:any or JOB:notok");
    for (auto j : jobs) {
      auto id = whole(j);
      if (!id) throw input_error(what + ": '" + std::string(j) + "' is not a job id");
      job_dependency d{*id, *kind};
      if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
    }
  }
  return out;
}

std::string after_text(const std::vector<job_dependency>& deps) {
  std::string out;
  for (auto& d : deps) out += (out.empty() ? "" : ",") + std::string(kind_name(d.kind)) + ":" + std::to_string(d.job);
  return out;
}

std::vector<job_dependency> after_of(std::string_view canonical) {
  if (canonical.empty()) return {};
  return parse_after(canonical, "after");
}

dependency_state dependency_state_of(after_kind kind, std::optional<bool> ended_done) {
  if (!ended_done) return dependency_state::waiting;
  switch (kind) {
    case after_kind::ok: return *ended_done ? dependency_state::met : dependency_state::never;
    case after_kind::any: return dependency_state::met;
    case after_kind::notok: return *ended_done ? dependency_state::never : dependency_state::met;
  }
  return dependency_state::waiting;
}

bool closes_cycle(uint32_t job, const std::vector<job_dependency>& deps,
                  const std::function<std::vector<job_dependency>(uint32_t)>& after_of_job) {
  std::set<uint32_t> seen;
  std::vector<uint32_t> stack;
  for (auto& d : deps) stack.push_back(d.job);
  while (!stack.empty()) {
    auto at = stack.back();
    stack.pop_back();
    if (at == job) return true;
    if (!seen.insert(at).second) continue;
    for (auto& d : after_of_job(at)) stack.push_back(d.job);
  }
  return false;
}

array_tasks parse_array(std::string_view text, const std::string& what) {
  array_tasks out;
  auto bad = [&](const std::string& why) { return input_error(what + ": '" + std::string(text) + "': " + why); };
  auto percent = text.find('%');
  auto list = text.substr(0, percent);
  if (percent != std::string_view::npos) {
    auto limit = whole(text.substr(percent + 1));
    if (!limit || *limit == 0) throw bad("the limit after % must be a whole number of tasks, at least 1");
    out.limit = *limit;
  }
  if (list.empty()) throw bad("give task ids: 0-99, 1,3,5-7 or 0-15:4, and %K for at most K at once");
  std::set<uint32_t> ids;
  for (auto item : split(list, ',')) {
    auto colon = item.find(':');
    auto range = item.substr(0, colon);
    uint32_t step = 1;
    if (colon != std::string_view::npos) {
      auto s = whole(item.substr(colon + 1));
      if (!s || *s == 0) throw bad("'" + std::string(item) + "': the step after : must be at least 1");
      step = *s;
    }
    auto dash = range.find('-');
    auto first = whole(range.substr(0, dash));
    auto last = dash == std::string_view::npos ? first : whole(range.substr(dash + 1));
    if (!first || !last) throw bad("'" + std::string(item) + "' is not a task id or a range A-B");
    if (*last < *first) throw bad("'" + std::string(item) + "': the range ends before it starts");
    for (uint64_t id = *first; id <= *last; id += step) {
      if (!ids.insert(static_cast<uint32_t>(id)).second) throw bad("task " + std::to_string(id) + " is listed twice");
      if (ids.size() > max_array_tasks) throw bad("more than " + std::to_string(max_array_tasks) + " tasks");
    }
  }
  out.ids.assign(ids.begin(), ids.end());
  return out;
}

std::string array_ranges(const std::vector<uint32_t>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(ids[i]);
    if (j > i) out += "-" + std::to_string(ids[j]);
    i = j + 1;
  }
  return out;
}

} // namespace aryl
