#include "runtime/live/job_book.hpp"

#include <algorithm>
#include <charconv>
#include <string_view>

#include "solvers/input_error.hpp"
#include "solvers/job_queue_rules.hpp"

namespace aryl::live {

namespace {

/// The job a scheduler event is about: its detail starts with "job-N".
std::optional<uint32_t> job_of(const std::string& detail) {
  std::string_view d = detail;
  if (!d.starts_with("job-")) return std::nullopt;
  uint32_t id = 0;
  auto [end, ec] = std::from_chars(d.data() + 4, d.data() + d.size(), id);
  if (ec != std::errc() || end == d.data() + 4 || (end != d.data() + d.size() && *end != ' ')) return std::nullopt;
  return id;
}

/// The detail without its leading "job-N ".
std::string rest_of(const std::string& detail) {
  auto space = detail.find(' ');
  return space == std::string::npos ? std::string() : detail.substr(space + 1);
}

} // namespace

wire::job_state outcome_state(job_outcome outcome) {
  switch (outcome) {
    case job_outcome::done: return wire::job_state::done;
    case job_outcome::cancelled:
    case job_outcome::dependency_never_met: return wire::job_state::cancelled;
    case job_outcome::failed:
    case job_outcome::timeout:
    case job_outcome::node_lost: return wire::job_state::failed;
  }
  return wire::job_state::failed;
}

void job_book::spec(const job_spec& s) {
  std::lock_guard lock(m_);
  if (!s.key.empty()) keys_.emplace(s.user, s.key);
  if (s.array.empty() || s.array_job >= 0) {
    jobs_[s.index].spec = s;
    if (s.array_job >= 0) arrays_[static_cast<uint32_t>(s.array_job)][s.array_task] = s.index;
    return;
  }
  array_tasks tasks;
  try {
    tasks = parse_array(s.array, "array");
  } catch (const input_error&) {
    return;  // the scheduler took it, so it parsed there: nothing to book otherwise
  }
  auto& booked = arrays_[s.index];
  for (size_t i = 0; i < tasks.ids.size(); ++i) {
    booked[tasks.ids[i]] = s.index + static_cast<uint32_t>(i);
    auto t = s;
    t.index = s.index + static_cast<uint32_t>(i);
    t.array.clear();
    t.array_job = s.index;
    t.array_task = tasks.ids[i];
    t.array_count = static_cast<uint32_t>(tasks.ids.size());
    t.array_limit = tasks.limit;
    jobs_[t.index].spec = std::move(t);
  }
}

std::optional<uint32_t> job_book::task_index(uint32_t job, uint32_t task) const {
  std::lock_guard lock(m_);
  auto it = arrays_.find(job);
  if (it == arrays_.end()) return std::nullopt;
  auto at = it->second.find(task);
  if (at == it->second.end()) return std::nullopt;
  return at->second;
}

void job_book::updated(uint32_t job, std::optional<uint32_t> task, const wire::job_request& q) {
  std::lock_guard lock(m_);
  std::vector<uint32_t> targets{job};
  if (auto it = arrays_.find(job); it != arrays_.end()) {
    targets.clear();
    for (auto [id, index] : it->second)
      if (!task || id == *task) targets.push_back(index);
  }
  for (auto t : targets) {
    auto e = jobs_.find(t);
    if (e == jobs_.end() || !e->second.spec || e->second.end) continue;
    auto& s = *e->second.spec;
    if (q.priority) s.priority = *q.priority;
    if (q.time_limit_s) s.time_limit_s = *q.time_limit_s;
    if (q.min_workers) s.min_workers = static_cast<int>(*q.min_workers);
    if (q.max_workers) s.max_workers = static_cast<int>(*q.max_workers);
    if (q.expected_duration_s) {
      s.duration_s = *q.expected_duration_s;
      s.predicted = true;
    }
    if (q.after) s.after = *q.after;
  }
}

void job_book::event(const event_record& e) {
  if (e.actor != "scheduler") return;
  auto job = job_of(e.detail);
  if (!job) return;
  std::lock_guard lock(m_);
  auto& h = jobs_[*job].history;
  // Bounded as a reply's list is: a job rescaled all day keeps its latest changes.
  if (h.size() == wire::max_list) h.erase(h.begin());
  h.push_back({static_cast<double>(e.t_us) / 1e6, e.event, rest_of(e.detail), e.why});
}

void job_book::replay(const std::string& events_log) {
  size_t at = 0;
  for (auto end = events_log.find('\n'); end != std::string::npos; at = end + 1, end = events_log.find('\n', at)) {
    // "SECONDS.MICROS ACTOR EVENT DETAIL[ | WHY]", as run_writer writes it.
    std::string_view line(events_log.data() + at, end - at);
    auto bar = line.find(" | ");
    std::string_view head = line.substr(0, bar), why = bar == std::string_view::npos ? "" : line.substr(bar + 3);
    auto s1 = head.find(' '), s2 = s1 == head.npos ? head.npos : head.find(' ', s1 + 1);
    auto s3 = s2 == head.npos ? head.npos : head.find(' ', s2 + 1);
    if (s3 == head.npos) continue;
    auto dot = head.find('.');
    int64_t secs = 0, micros = 0;
    auto digits = [](std::string_view d, int64_t& out) {
      auto [p, ec] = std::from_chars(d.data(), d.data() + d.size(), out);
      return ec == std::errc() && p == d.data() + d.size();
    };
    if (dot == head.npos || dot > s1 || !digits(head.substr(0, dot), secs) ||
        !digits(head.substr(dot + 1, s1 - dot - 1), micros))
      continue;
    event({secs * 1'000'000 + micros, std::string(head.substr(s1 + 1, s2 - s1 - 1)),
           std::string(head.substr(s2 + 1, s3 - s2 - 1)), std::string(head.substr(s3 + 1)), std::string(why)});
  }
}

void job_book::ended(const job_record& r) {
  std::lock_guard lock(m_);
  auto& j = jobs_[r.index];
  if (!j.end) ended_order_.push_back(r.index);
  j.end = r;
}

namespace {

/// An ended job as a status or show reply lists it.
wire::job_info ended_info(uint32_t id, const job_record& r, const std::optional<job_spec>& spec) {
  wire::job_info out;
  out.job_id = id;
  out.name = r.name;
  out.state = outcome_state(r.outcome);
  out.outcome = std::string(to_string(r.outcome));
  if (!r.attempts.empty() && !r.attempts.back().exits.empty()) out.exits = r.attempts.back().exits;
  out.workers = 0;
  out.gpus = static_cast<uint32_t>(r.gpus);
  if (spec) {
    out.min_workers = static_cast<uint32_t>(spec->min_workers);
    out.max_workers = static_cast<uint32_t>(spec->max_workers);
    if (!spec->gpu_type.empty()) out.gpu_type = spec->gpu_type;
    if (!spec->user.empty()) out.user = spec->user;
    if (spec->array_job >= 0) {
      out.array_job = static_cast<uint64_t>(spec->array_job);
      out.array_task = spec->array_task;
    }
  }
  if (!r.tenant.empty()) out.tenant = r.tenant;
  if (r.first_start_us >= 0 && r.end_us >= r.first_start_us)
    out.run_s = static_cast<double>(r.end_us - r.first_start_us) / 1e6;
  out.predicted = r.predicted;
  return out;
}

} // namespace

std::optional<wire::show_reply> job_book::show(uint32_t job) const {
  std::lock_guard lock(m_);
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return std::nullopt;
  auto& e = it->second;
  wire::show_reply out;
  out.job.job_id = job;
  if (e.spec) {
    auto& s = *e.spec;
    out.job.name = s.name;
    out.job.gpus = static_cast<uint32_t>(s.gpus);
    out.job.min_workers = static_cast<uint32_t>(s.min_workers);
    out.job.max_workers = static_cast<uint32_t>(s.max_workers);
    if (!s.gpu_type.empty()) out.job.gpu_type = s.gpu_type;
    out.job.predicted = s.predicted;
    if (!s.tenant.empty()) out.job.tenant = s.tenant;
    if (!s.user.empty()) out.job.user = s.user;
    if (s.array_job >= 0) {
      out.job.array_job = static_cast<uint64_t>(s.array_job);
      out.job.array_task = s.array_task;
    }
    out.command = s.command;
    out.expected_duration_s = s.duration_s;
    out.submit_s = s.submit.seconds();
    if (s.time_limit_s > 0) out.time_limit_s = s.time_limit_s;
    if (!s.after.empty()) out.after = s.after;
    if (s.max_retries >= 0) out.max_retries = static_cast<uint32_t>(s.max_retries);
  }
  if (e.end) {
    out.job = ended_info(job, *e.end, e.spec);
    out.expected_duration_s = e.end->duration_s;
    out.submit_s = static_cast<double>(e.end->submit_us) / 1e6;
    out.end_s = static_cast<double>(e.end->end_us) / 1e6;
    auto& attempts = out.attempts.emplace();
    // Bounded as a reply's list is: the latest kept.
    auto& all = e.end->attempts;
    for (size_t i = all.size() > wire::max_list ? all.size() - wire::max_list : 0; i < all.size(); ++i) {
      auto& a = all[i];
      wire::attempt_info x;
      if (a.start_us >= 0) x.start_s = static_cast<double>(a.start_us) / 1e6;
      x.end_s = static_cast<double>(a.end_us) / 1e6;
      x.outcome = std::string(to_string(a.outcome));
      if (!a.exits.empty()) x.exits = a.exits;
      x.why = a.why;
      attempts.push_back(std::move(x));
    }
  }
  // A job's submit time is the scheduler's (a client's job is stamped when taken).
  for (auto& h : e.history)
    if (h.event == "submit") out.submit_s = h.t_s;
  out.history = e.history;
  return out;
}

std::optional<std::string> job_book::owner(uint32_t job) const {
  std::lock_guard lock(m_);
  auto it = jobs_.find(job);
  if (it == jobs_.end() || !it->second.spec) return std::nullopt;
  return it->second.spec->user;
}

bool job_book::keyed(const std::string& user, const std::string& key) const {
  std::lock_guard lock(m_);
  return keys_.count({user, key}) > 0;
}

bool job_book::has_ended(uint32_t job) const {
  std::lock_guard lock(m_);
  auto it = jobs_.find(job);
  return it != jobs_.end() && it->second.end.has_value();
}

std::vector<wire::job_info> job_book::ended_jobs(size_t max) const {
  std::lock_guard lock(m_);
  std::vector<wire::job_info> out;
  for (auto it = ended_order_.rbegin(); it != ended_order_.rend() && out.size() < max; ++it) {
    auto& e = jobs_.at(*it);
    out.push_back(ended_info(*it, *e.end, e.spec));
  }
  return out;
}

} // namespace aryl::live
