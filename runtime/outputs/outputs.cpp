#include "runtime/outputs/outputs.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string_view>

#include "solvers/control_chars.hpp"
#include "runtime/inputs/csv_field.hpp"
#include "runtime/outputs/control_scan.hpp"
#include "runtime/outputs/number_text.hpp"
#include "runtime/outputs/percentile.hpp"
#include "solvers/input_error.hpp"

namespace aryl {
namespace {

constexpr const char* output_names[] = {"events.log", "timeline.csv", "jobs.csv", "summary.json"};
constexpr const char* partial = ".partial";

std::FILE* open_for_write(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) throw input_error(path + ": cannot write: " + std::strerror(errno));
  return f;
}

/// csv::append_field, without its search for a field that plainly needs no quotes (job names
/// and tenants are mostly letters, digits and dashes): any byte that is a space or below, a
/// comma, a quote or not ASCII leaves the field to append_field.
void append_csv_field(std::string& out, std::string_view field) {
  for (char ch : field) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= ' ' || c == ',' || c == '"' || c >= 0x80) {
      csv::append_field(out, field);
      return;
    }
  }
  out += field;
}

double mean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

bool same_state(const cluster_snapshot& a, const cluster_snapshot& b) {
  return a.training_busy_gpus == b.training_busy_gpus && a.training_gpus == b.training_gpus &&
         a.loaned_busy_gpus == b.loaned_busy_gpus && a.loaned_servers == b.loaned_servers &&
         a.serving_servers == b.serving_servers && a.reclaiming_servers == b.reclaiming_servers &&
         a.serving_gpus == b.serving_gpus && a.queued_jobs == b.queued_jobs &&
         a.running_jobs == b.running_jobs;
}

/// One jobs.csv row (the header's columns), with its line end. The numbers between the name
/// and the tenant go through one buffer with room for the longest text of each.
void append_job_row(std::string& row, const job_record& j) {
  char buf[32 + 4 * 28 + 9 * fixed_text_room + 4 * 20 + 16];
  char* p = put_uint(buf, j.index);
  *p++ = ',';
  row.append(buf, static_cast<size_t>(p - buf));
  append_csv_field(row, j.name);
  p = buf;
  *p++ = ',';
  p = put_int(p, j.gpus);
  *p++ = ',';
  *p++ = j.elastic ? '1' : '0';
  *p++ = ',';
  for (int64_t us : {j.submit_us, j.first_start_us, j.end_us, j.end_us - j.submit_us}) {
    p = put_seconds(p, us);
    *p++ = ',';
  }
  auto fixed = [&](double x, int decimals) {
    p = put_fixed(p, x, decimals);
    *p++ = ',';
  };
  fixed(j.queued_s, 6);
  fixed(j.duration_s, 6);
  fixed(j.gpu_seconds, 3);
  for (int n : {j.preemptions, j.scale_ins, j.scale_outs, j.last_workers}) {
    p = put_int(p, n);
    *p++ = ',';
  }
  fixed(j.on_loaned_s, 3);
  fixed(j.slowdown, 6);
  fixed(j.below_speed_s, 3);
  row.append(buf, static_cast<size_t>(p - buf));
  row += to_string(j.outcome);
  p = buf;
  *p++ = ',';
  fixed(j.needed_gpu_s, 3);
  fixed(j.needed_gpu_s > 0 ? j.gpu_seconds / j.needed_gpu_s : 0.0, 6);
  row.append(buf, static_cast<size_t>(p - buf));
  // The tenant, which may be empty, before a last field that never is: naive splitters keep
  // every field.
  append_csv_field(row, j.tenant);
  row += j.estimated ? ",1," : ",0,";
  // The last attempt's exits (empty in simulated time), then the attempts, never empty.
  if (!j.attempts.empty()) append_csv_field(row, j.attempts.back().exits);
  p = buf;
  *p++ = ',';
  p = put_uint(p, std::max<size_t>(j.attempts.size(), 1));
  *p++ = '\n';
  row.append(buf, static_cast<size_t>(p - buf));
}

} // namespace

constexpr const char* timeline_header =
    "t_s,training_busy_gpus,training_gpus,loaned_busy_gpus,loaned_servers,serving_servers,"
    "reclaiming_servers,inference_gpus,queued_jobs,running_jobs,serving_busy_gpus";

run_writer::run_writer(const std::string& out_dir, bool flush_lines, bool carry_on)
    : dir_(out_dir), flush_lines_(flush_lines) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) throw input_error(dir_ + ": cannot create output folder: " + ec.message());
  for (auto* name : output_names) {
    bool kept = carry_on && (std::string_view(name) == "events.log" || std::string_view(name) == "timeline.csv");
    std::vector<std::string> gone{dir_ + "/" + name};
    if (!kept) gone.push_back(dir_ + "/" + name + partial);
    for (auto& path : gone) {
      std::filesystem::remove(path, ec);
      if (ec) throw input_error(path + ": cannot remove the previous run's output: " + ec.message());
    }
  }
  if (!carry_on) {
    events_file_ = open_for_write(dir_ + "/events.log" + partial);
    timeline_file_ = open_for_write(dir_ + "/timeline.csv" + partial);
    std::fputs(timeline_header, timeline_file_);
    std::fputc('\n', timeline_file_);
    return;
  }
  events_ = this->carry_on("events.log").size();
  auto rows = this->carry_on("timeline.csv");
  const auto path = dir_ + "/timeline.csv" + partial;
  if (rows.empty()) {
    std::fputs(timeline_header, timeline_file_);
    std::fputc('\n', timeline_file_);
    return;
  }
  if (rows.front() != timeline_header) throw input_error(path + ": line 1: not the header of a timeline");
  int64_t last_t = std::numeric_limits<int64_t>::min();
  for (size_t i = 1; i < rows.size(); ++i) {
    auto bad = [&](const char* why) {
      return input_error(fmt::format("{}: line {}: {}: {}", path, i + 1, why, rows[i].substr(0, 80)));
    };
    // Times as append_seconds wrote them: whole seconds and six digits of microseconds.
    auto dot = rows[i].find('.');
    auto comma = rows[i].find(',');
    if (dot == std::string::npos || comma != dot + 7) throw bad("not a timeline row");
    std::vector<int64_t> v;
    try {
      size_t used = 0;
      int64_t whole = std::stoll(rows[i].substr(0, dot), &used);
      if (used != dot || whole < 0 || whole > 1'000'000'000'000) throw bad("time out of range");
      int64_t frac = std::stoll(rows[i].substr(dot + 1, 6), &used);
      if (used != 6 || frac < 0) throw bad("not a timeline row");
      v.push_back(whole * 1000000 + frac);
      for (size_t at = comma; at != std::string::npos;) {
        size_t next = rows[i].find(',', at + 1);
        auto field = rows[i].substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1);
        long long n = std::stoll(field, &used);
        if (used != field.size() || n < 0 || n > std::numeric_limits<int>::max()) throw bad("not a count");
        v.push_back(n);
        at = next;
      }
    } catch (const std::logic_error&) {
      throw bad("not a timeline row");
    }
    if (v.size() != 11) throw bad("not 11 columns");
    if (v[0] < last_t) throw bad("time goes back");
    last_t = v[0];
    cluster_snapshot c;
    c.t_us = v[0];
    c.training_busy_gpus = static_cast<int>(v[1]);
    c.training_gpus = static_cast<int>(v[2]);
    c.loaned_busy_gpus = static_cast<int>(v[3]);
    c.loaned_servers = static_cast<int>(v[4]);
    c.serving_servers = static_cast<int>(v[5]);
    c.reclaiming_servers = static_cast<int>(v[6]);
    c.inference_gpus = static_cast<int>(v[7]);
    c.queued_jobs = static_cast<int>(v[8]);
    c.running_jobs = static_cast<int>(v[9]);
    // Serving changes between rows are not in the file: the row's value holds from it on.
    serving(c.t_us, static_cast<int>(v[10]));
    take(c);
  }
}

std::vector<std::string> run_writer::carry_on(const char* name) {
  const auto path = dir_ + "/" + name + partial;
  std::vector<std::string> lines;
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    std::ifstream in(path, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) throw input_error(path + ": cannot read: " + std::strerror(errno));
    auto complete = text.rfind('\n');
    complete = complete == std::string::npos ? 0 : complete + 1;
    // The line the kill cut short is dropped: it is not known to be whole.
    if (complete < text.size()) {
      std::filesystem::resize_file(path, complete, ec);
      if (ec) throw input_error(path + ": cannot drop its cut-short last line: " + ec.message());
    }
    for (size_t at = 0; at < complete;) {
      auto end = text.find('\n', at);
      lines.push_back(text.substr(at, end - at));
      at = end + 1;
    }
  }
  std::FILE* f = std::fopen(path.c_str(), "a");
  if (!f) throw input_error(path + ": cannot write: " + std::strerror(errno));
  (std::string_view(name) == "events.log" ? events_file_ : timeline_file_) = f;
  return lines;
}

run_writer::~run_writer() {
  write_pending();
  if (events_file_) std::fclose(events_file_);
  if (timeline_file_) std::fclose(timeline_file_);
}

void run_writer::write_pending() {
  if (events_file_) std::fwrite(events_out_.data(), 1, events_out_.size(), events_file_);
  if (timeline_file_) std::fwrite(timeline_out_.data(), 1, timeline_out_.size(), timeline_file_);
  events_out_.clear();
  timeline_out_.clear();
}

void run_writer::emit(std::FILE* f, std::string& pending) {
  if (!flush_lines_ && pending.size() < (size_t{1} << 16)) return;
  std::fwrite(pending.data(), 1, pending.size(), f);
  pending.clear();
  if (flush_lines_) std::fflush(f);
}

void run_writer::close_line_files() {
  write_pending();
  close(events_file_, "events.log");
  close(timeline_file_, "timeline.csv");
}

void run_writer::check(std::FILE* f, const char* name) {
  if (write_error_.empty() && std::ferror(f))
    write_error_ = dir_ + "/" + name + partial + ": write failed: " + std::strerror(errno);
}

void run_writer::close(std::FILE*& f, const char* name) {
  if (!f) return;
  check(f, name);
  if (std::fclose(f) != 0 && write_error_.empty())
    write_error_ = dir_ + "/" + name + partial + ": write failed: " + std::strerror(errno);
  f = nullptr;
}

void run_writer::commit(const run_summary& s) {
  std::FILE* f = open_for_write(dir_ + "/summary.json" + partial);
  std::fputs((summary_json(s) + '\n').c_str(), f);
  close(f, "summary.json");
  if (!write_error_.empty()) throw input_error(write_error_);
  for (auto* name : output_names) {
    std::error_code ec;
    std::filesystem::rename(dir_ + "/" + name + partial, dir_ + "/" + name, ec);
    if (ec) throw input_error(dir_ + "/" + name + ": cannot rename from " + name + partial + ": " + ec.message());
  }
}

std::string run_writer::abandon() {
  close_line_files();
  return "partial outputs of this run are in " + dir_ + "/*.partial" +
         (write_error_.empty() ? "" : " (" + write_error_ + ")");
}

void run_writer::event(const event_record& e) {
  if (!events_file_) return;  // closed: the run is over
  ++events_;
  // One line per event, the busiest output of a run: built at the end of the lines not yet
  // written, the time as whole seconds and microseconds (what "{:.6f}" of the seconds prints).
  auto& out = events_out_;
  const size_t start = out.size();
  char time[32];
  char* p = put_seconds(time, e.t_us);
  *p++ = ' ';
  out.append(time, static_cast<size_t>(p - time));
  out += e.actor;
  out += ' ';
  out += e.event;
  out += ' ';
  out += e.detail;
  if (!e.why.empty()) {
    out += " | ";
    out += e.why;
  }
  // One event per line, whatever a name restored from a journal holds.
  if (const std::string_view line(out.data() + start, out.size() - start);
      may_hold_control(line) && find_control(line) != std::string::npos) {
    std::string escaped = escape_control(line);
    out.resize(start);
    out += escaped;
  }
  out += '\n';
  emit(events_file_, out);
  if (on_event_) on_event_(e);
}

void run_writer::job(const job_record& j) {
  jobs_.push_back(j);
  if (on_job_) on_job_(j);
}

void run_writer::integrate_to(int64_t t_us) {
  if (!have_snapshot_ || t_us <= last_.t_us) return;
  double dt = static_cast<double>(t_us - last_.t_us);
  double in_window = static_cast<double>(std::max<int64_t>(0, std::min(t_us, window_end_us_) - last_.t_us));
  window_busy_ += in_window * (last_.training_busy_gpus + last_.loaned_busy_gpus);
  window_total_ += in_window * (last_.training_gpus + last_.inference_gpus);
  busy_training_ += dt * last_.training_busy_gpus;
  training_total_ += dt * last_.training_gpus;
  busy_inference_ += dt * last_.loaned_busy_gpus;
  inference_total_ += dt * last_.inference_gpus;
  loaned_servers_us_ += dt * last_.loaned_servers;
}

void run_writer::integrate_serving_to(int64_t t_us) {
  if (t_us > serving_since_) {
    serving_busy_us_ += static_cast<double>(t_us - serving_since_) * serving_busy_;
    window_busy_ += static_cast<double>(std::max<int64_t>(0, std::min(t_us, window_end_us_) - serving_since_)) * serving_busy_;
  }
  serving_since_ = t_us;
}

void run_writer::serving(int64_t t_us, int gpus) {
  integrate_serving_to(t_us);
  serving_busy_ = gpus;
}

bool run_writer::take(const cluster_snapshot& s) {
  if (!have_snapshot_) {
    first_t_us_ = s.t_us;
    serving_since_ = std::max(serving_since_, s.t_us);
    serving_busy_us_ = 0;
    window_busy_ = 0;
  }
  integrate_to(s.t_us);
  bool changed = !have_snapshot_ || !same_state(s, last_);
  last_ = s;
  have_snapshot_ = true;
  return changed;
}

void run_writer::snapshot(const cluster_snapshot& s) {
  if (!take(s) || !timeline_file_) return;
  // Room for the time and ten counts, each with its separator.
  char row[32 + 10 * 24];
  char* p = put_seconds(row, s.t_us);
  for (int n : {s.training_busy_gpus, s.training_gpus, s.loaned_busy_gpus, s.loaned_servers, s.serving_servers,
                s.reclaiming_servers, s.inference_gpus, s.queued_jobs, s.running_jobs, serving_busy_}) {
    *p++ = ',';
    p = put_int(p, n);
  }
  *p++ = '\n';
  timeline_out_.append(row, static_cast<size_t>(p - row));
  emit(timeline_file_, timeline_out_);
}

run_summary run_writer::finish(run_summary s) {
  {
    // By job index: sorting positions and moving each record once, as a record is large
    // enough that sorting the records themselves was a tenth of a short run.
    std::vector<std::pair<uint32_t, size_t>> order;
    order.reserve(jobs_.size());
    for (size_t i = 0; i < jobs_.size(); ++i) order.emplace_back(jobs_[i].index, i);
    std::sort(order.begin(), order.end());
    std::vector<job_record> sorted;
    sorted.reserve(jobs_.size());
    for (auto& [index, i] : order) sorted.push_back(std::move(jobs_[i]));
    jobs_.swap(sorted);
  }
  int64_t last_end = first_t_us_;
  // From the run's start: a serve restarted on its journal sees its first snapshot only then,
  // after the restored jobs were submitted.
  int64_t first = first_t_us_;
  std::vector<double> jct, queue, first_wait, slowdown;
  // Work efficiency's sums: GPU-seconds held (all, speed-weighted, training servers, loaned
  // ones) and needed (all, of the work progressed on training servers, on loaned ones).
  double used = 0, used_weighted = 0, used_training = 0, used_loaned = 0;
  double needed = 0, needed_training = 0, needed_loaned = 0;
  for (auto& j : jobs_) {
    last_end = std::max(last_end, j.end_us);
    first = std::min(first, j.submit_us);
    // Stops and size changes happened whatever the job's end: summed over every job, as
    // jobs.csv's columns are.
    s.preemptions += static_cast<uint64_t>(j.preemptions);
    s.scale_ins += static_cast<uint64_t>(j.scale_ins);
    s.scale_outs += static_cast<uint64_t>(j.scale_outs);
    // A cancelled job's times say when it was given up, not how well it was served.
    if (j.outcome != job_outcome::done) {
      ++(j.outcome == job_outcome::cancelled ? s.jobs_cancelled : s.jobs_failed);
      continue;
    }
    jct.push_back(static_cast<double>(j.end_us - j.submit_us) / 1e6);
    queue.push_back(j.queued_s);
    first_wait.push_back(static_cast<double>(j.first_start_us - j.submit_us) / 1e6);
    slowdown.push_back(j.slowdown);
    s.below_speed_gpu_hours += j.below_speed_gpu_s / 3600;
    used += j.gpu_seconds;
    used_weighted += j.training_speed_gpu_s + j.loaned_speed_gpu_s;
    used_training += j.training_gpu_s;
    used_loaned += j.loaned_gpu_s;
    needed += j.needed_gpu_s;
    needed_training += j.training_needed_gpu_s;
    needed_loaned += j.loaned_needed_gpu_s;
    if (!j.estimated) {
      ++s.jobs_without_estimate;
      s.mean_jct_without_estimate_s += jct.back();
    }
  }
  if (s.jobs_without_estimate) s.mean_jct_without_estimate_s /= static_cast<double>(s.jobs_without_estimate);
  integrate_to(last_end);
  integrate_serving_to(last_end);
  s.training_gpu_hours = busy_training_ / 3.6e9;
  s.loaned_gpu_hours = busy_inference_ / 3.6e9;
  s.serving_gpu_hours = serving_busy_us_ / 3.6e9;
  // Serving demand before the first job or after the last one is outside the run.
  busy_inference_ += serving_busy_us_;
  s.jobs_completed = jct.size();
  // Means first, in job order; then each sample sorted once for its percentiles.
  s.mean_jct_s = mean(jct);
  s.mean_queue_s = mean(queue);
  s.mean_first_wait_s = mean(first_wait);
  s.mean_slowdown = mean(slowdown);
  for (auto* v : {&jct, &queue, &slowdown}) std::sort(v->begin(), v->end());
  s.p50_jct_s = sorted_percentile(jct, 0.50);
  s.p95_jct_s = sorted_percentile(jct, 0.95);
  s.p99_jct_s = sorted_percentile(jct, 0.99);
  s.p50_queue_s = sorted_percentile(queue, 0.50);
  s.p95_queue_s = sorted_percentile(queue, 0.95);
  s.p95_slowdown = sorted_percentile(slowdown, 0.95);
  s.makespan_s = static_cast<double>(last_end - first) / 1e6;
  auto over = [](double a, double b) { return b > 0 ? a / b : 0.0; };
  s.work_efficiency = over(used, needed);
  s.work_efficiency_speed_weighted = over(used_weighted, needed);
  s.work_efficiency_training = over(used_training, needed_training);
  s.work_efficiency_loaned = over(used_loaned, needed_loaned);
  s.needed_gpu_hours = needed / 3600;
  double all_total = training_total_ + inference_total_;
  s.gpu_usage = all_total > 0 ? (busy_training_ + busy_inference_) / all_total : 0;
  s.window_gpu_usage = window_total_ > 0 ? window_busy_ / window_total_ : 0;
  s.training_gpu_usage = training_total_ > 0 ? busy_training_ / training_total_ : 0;
  s.inference_gpu_usage = inference_total_ > 0 ? busy_inference_ / inference_total_ : 0;
  s.loaned_server_hours = loaned_servers_us_ / 3.6e9;
  auto& m = measures_;
  s.reclaim_slo_misses = m.slo_misses;
  auto sorted = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  const auto reclaim_latency = sorted(m.reclaim_latency_s), quota_latency = sorted(m.quota_latency_s);
  s.reclaim_latency_p50_s = sorted_percentile(reclaim_latency, 0.50);
  s.reclaim_latency_p99_s = sorted_percentile(reclaim_latency, 0.99);
  s.reclaim_max_late_s = m.reclaim_max_late_s;
  s.quota_reclaims = m.quota_latency_s.size();
  s.quota_reclaims_late = m.quota_late;
  s.quota_reclaim_p50_s = sorted_percentile(quota_latency, 0.50);
  s.quota_reclaim_p99_s = sorted_percentile(quota_latency, 0.99);
  s.quota_reclaim_max_late_s = m.quota_max_late_s;
  s.lost_gpu_hours = m.lost_gpu_s / 3600;
  s.recoveries = m.recoveries_s.size();
  s.recovery_p50_s = percentile(m.recoveries_s, 0.50);
  s.recovery_max_s = m.recoveries_s.empty() ? 0 : *std::max_element(m.recoveries_s.begin(), m.recoveries_s.end());
  s.events = events_;

  std::FILE* jf = std::fopen((dir_ + "/jobs.csv" + partial).c_str(), "w");
  if (!jf) {
    if (write_error_.empty()) write_error_ = dir_ + "/jobs.csv" + partial + ": cannot write: " + std::strerror(errno);
    close_line_files();
    return s;
  }
  std::fputs("job,name,gpus,elastic,submit_s,first_start_s,end_s,jct_s,queued_s,duration_s,gpu_seconds,"
             "preemptions,scale_ins,scale_outs,last_workers,on_loaned_s,slowdown,below_speed_s,outcome,needed_gpu_s,"
             "work_efficiency,tenant,estimated,exits,attempts\n",
             jf);
  // Rows gathered into blocks of about 64 KiB: one write call per block, not per row.
  std::string rows;
  rows.reserve(size_t{1} << 17);
  for (auto& j : jobs_) {
    append_job_row(rows, j);
    if (rows.size() >= size_t{1} << 16) {
      std::fwrite(rows.data(), 1, rows.size(), jf);
      rows.clear();
    }
  }
  std::fwrite(rows.data(), 1, rows.size(), jf);
  close(jf, "jobs.csv");
  close_line_files();
  return s;
}

std::string summary_json(const run_summary& s) {
  nlohmann::ordered_json j;
  j["policy"] = s.policy;
  j["placement"] = s.placement;
  j["seed"] = s.seed;
  j["jobs_submitted"] = s.jobs_submitted;
  j["jobs_completed"] = s.jobs_completed;
  j["jobs_cancelled"] = s.jobs_cancelled;
  j["mean_jct_s"] = s.mean_jct_s;
  j["p50_jct_s"] = s.p50_jct_s;
  j["p95_jct_s"] = s.p95_jct_s;
  j["p99_jct_s"] = s.p99_jct_s;
  j["mean_queue_s"] = s.mean_queue_s;
  j["p50_queue_s"] = s.p50_queue_s;
  j["p95_queue_s"] = s.p95_queue_s;
  j["mean_first_wait_s"] = s.mean_first_wait_s;
  j["makespan_s"] = s.makespan_s;
  j["gpu_usage"] = s.gpu_usage;
  j["window_gpu_usage"] = s.window_gpu_usage;
  j["training_gpu_usage"] = s.training_gpu_usage;
  j["inference_gpu_usage"] = s.inference_gpu_usage;
  j["preemptions"] = s.preemptions;
  j["scale_ins"] = s.scale_ins;
  j["scale_outs"] = s.scale_outs;
  j["loaned_server_hours"] = s.loaned_server_hours;
  j["mean_slowdown"] = s.mean_slowdown;
  j["p95_slowdown"] = s.p95_slowdown;
  j["below_speed_gpu_hours"] = s.below_speed_gpu_hours;
  j["work_efficiency"] = s.work_efficiency;
  j["work_efficiency_speed_weighted"] = s.work_efficiency_speed_weighted;
  j["work_efficiency_training"] = s.work_efficiency_training;
  j["work_efficiency_loaned"] = s.work_efficiency_loaned;
  j["needed_gpu_hours"] = s.needed_gpu_hours;
  j["training_gpu_hours"] = s.training_gpu_hours;
  j["loaned_gpu_hours"] = s.loaned_gpu_hours;
  j["serving_gpu_hours"] = s.serving_gpu_hours;
  j["reclaim_slo_misses"] = s.reclaim_slo_misses;
  j["reclaim_latency_p50_s"] = s.reclaim_latency_p50_s;
  j["reclaim_latency_p99_s"] = s.reclaim_latency_p99_s;
  j["reclaim_max_late_s"] = s.reclaim_max_late_s;
  j["jobs_failed"] = s.jobs_failed;
  j["jobs_without_estimate"] = s.jobs_without_estimate;
  j["mean_jct_without_estimate_s"] = s.mean_jct_without_estimate_s;
  j["quota_reclaims"] = s.quota_reclaims;
  j["quota_reclaim_latency_p50_s"] = s.quota_reclaim_p50_s;
  j["quota_reclaim_latency_p99_s"] = s.quota_reclaim_p99_s;
  j["quota_reclaims_late"] = s.quota_reclaims_late;
  j["quota_reclaim_max_late_s"] = s.quota_reclaim_max_late_s;
  j["lost_gpu_hours"] = s.lost_gpu_hours;
  j["recoveries"] = s.recoveries;
  j["recovery_p50_s"] = s.recovery_p50_s;
  j["recovery_max_s"] = s.recovery_max_s;
  j["events"] = s.events;
  j["full_rounds"] = s.full_rounds;
  j["full_rounds_deciding_nothing"] = s.full_rounds_deciding_nothing;
  for (size_t k = 0; k < round_cause_names.size(); ++k)
    j["full_rounds_by_cause"][round_cause_names[k]] = s.full_rounds_by_cause[k];
  j["starts_rounds"] = s.starts_rounds;
  j["local_rounds"] = s.local_rounds;
  j["actor_activations"] = s.actor_activations;
  j["sim_wall_s"] = s.sim_wall_s;
  j["max_timer_lag_s"] = s.max_timer_lag_s;
  if (s.scheduler_restarts > 0) {
    j["scheduler_restarts"] = s.scheduler_restarts;
    j["restarts_after_scheduler_restart"] = s.restarts_after_scheduler_restart;
    j["adopted_after_scheduler_restart"] = s.adopted_after_scheduler_restart;
  }
  return j.dump(2);
}

void print_summary_table(std::ostream& os, const run_summary& s) {
  os << fmt::format("policy {} | placement {} | seed {}\n", s.policy, s.placement, s.seed);
  os << fmt::format("  jobs completed     {:>12} / {}", s.jobs_completed, s.jobs_submitted);
  if (s.jobs_cancelled) os << fmt::format("   cancelled {}", s.jobs_cancelled);
  if (s.jobs_failed) os << fmt::format("   failed {}", s.jobs_failed);
  os << '\n';
  os << fmt::format("  JCT mean / p95     {:>12.1f} / {:.1f} s\n", s.mean_jct_s, s.p95_jct_s);
  os << fmt::format("  queue mean / p95   {:>12.1f} / {:.1f} s\n", s.mean_queue_s, s.p95_queue_s);
  os << fmt::format("  makespan           {:>12.1f} s\n", s.makespan_s);
  os << fmt::format("  GPU usage          {:>12.3f} (training {:.3f}, inference {:.3f}; while jobs arrive {:.3f})\n",
                    s.gpu_usage, s.training_gpu_usage, s.inference_gpu_usage, s.window_gpu_usage);
  os << fmt::format("  work efficiency    {:>12.3f} (speed-weighted {:.3f}; training {:.3f}, loaned {:.3f}; needed {:.1f} GPU-h)\n",
                    s.work_efficiency, s.work_efficiency_speed_weighted, s.work_efficiency_training,
                    s.work_efficiency_loaned, s.needed_gpu_hours);
  os << fmt::format("  preemptions        {:>12}   scale-ins {}   scale-outs {}\n", s.preemptions,
                    s.scale_ins, s.scale_outs);
  os << fmt::format("  loaned server-h    {:>12.1f}   reclaim SLO misses {}\n", s.loaned_server_hours,
                    s.reclaim_slo_misses);
  os << fmt::format("  events {}   wall {:.2f} s\n", s.events, s.sim_wall_s);
}

} // namespace aryl
