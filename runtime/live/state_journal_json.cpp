// The state journal's JSON forms of specs and final records (state_journal_parts.hpp).
#include <type_traits>
#include <variant>
#include <vector>

#include "runtime/live/job_record_fields.hpp"
#include "runtime/live/state_journal_parts.hpp"

namespace aryl::live::journal_detail {
namespace {

/// A record's field as the journal writes it: an outcome by its name, an attempt as an object.
template <class T>
json field_json(const T& v) {
  return v;
}

json field_json(job_outcome o) { return std::string(to_string(o)); }

json field_json(const std::vector<attempt_record>& attempts) {
  json a = json::array();
  for (auto& x : attempts)
    a.push_back({{"start_us", x.start_us}, {"end_us", x.end_us}, {"outcome", to_string(x.outcome)},
                 {"exits", x.exits}, {"why", x.why}});
  return a;
}

job_outcome outcome_from(const json& v, const std::string& what) {
  auto o = outcome_named(v.get<std::string>());
  if (!o) throw std::range_error(fmt::format("'{}' {} is not an outcome (done, failed, timeout, cancelled, node_lost)",
                                             what, v.dump()));
  return *o;
}

/// Field `f` of `r` read from `v`: whole numbers through whole<T>, naming `what`.
void read_field(job_record& r, const record_field& f, const json& v, const std::string& what) {
  std::visit(
      [&](auto member) {
        using T = std::remove_reference_t<decltype(r.*member)>;
        if constexpr (std::is_same_v<T, job_outcome>) {
          r.*member = outcome_from(v, what);
        } else if constexpr (std::is_same_v<T, std::vector<attempt_record>>) {
          if (!v.is_array()) throw std::range_error(fmt::format("'{}' is not a list", what));
          for (auto& x : v)
            (r.*member).push_back({whole_at<int64_t>(x, "start_us"), whole_at<int64_t>(x, "end_us"),
                                   outcome_from(x.at("outcome"), what + ".outcome"), x.at("exits").get<std::string>(),
                                   x.at("why").get<std::string>()});
        } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          r.*member = whole<T>(v, what);
        } else {
          r.*member = v.get<T>();
        }
      },
      f.member);
}

} // namespace

json to_json(const job_spec& s) {
  return {{"index", s.index},         {"name", s.name},
          {"submit_us", s.submit.us}, {"gpus", s.gpus},
          {"duration_s", s.duration_s}, {"gpu_type", s.gpu_type},
          {"elastic", s.elastic},     {"min_workers", s.min_workers},
          {"max_workers", s.max_workers}, {"predict_factor", s.predict_factor},
          {"user", s.user},           {"command", s.command},
          {"tenant", s.tenant},       {"estimated", s.estimated},
          {"estimate_s", s.estimate_s}, {"predicted", s.predicted},
          {"priority", s.priority},   {"time_limit_s", s.time_limit_s},
          {"max_retries", s.max_retries}, {"held", s.held},
          {"after", s.after},         {"array_job", s.array_job},
          {"array_task", s.array_task}, {"array_count", s.array_count},
          {"array_limit", s.array_limit}, {"key", s.key}};
}

job_spec spec_from(const json& j) {
  job_spec s;
  s.index = whole_at<uint32_t>(j, "index");
  s.name = j.at("name").get<std::string>();
  s.submit = sim_time::from_us(whole_at<int64_t>(j, "submit_us"));
  s.gpus = whole_at<int>(j, "gpus");
  s.duration_s = j.at("duration_s").get<double>();
  s.gpu_type = j.at("gpu_type").get<std::string>();
  s.elastic = j.at("elastic").get<bool>();
  s.min_workers = whole_at<int>(j, "min_workers");
  s.max_workers = whole_at<int>(j, "max_workers");
  s.predict_factor = j.at("predict_factor").get<double>();
  s.user = j.at("user").get<std::string>();
  s.command = j.at("command").get<std::vector<std::string>>();
  // Journals written before tenants and estimates have neither: no tenant, an estimate.
  if (j.contains("tenant")) s.tenant = j.at("tenant").get<std::string>();
  if (j.contains("estimated")) s.estimated = j.at("estimated").get<bool>();
  if (j.contains("estimate_s")) s.estimate_s = j.at("estimate_s").get<double>();
  s.predicted = j.value("predicted", true);  // absent in files from before the flag
  if (j.contains("priority")) s.priority = whole_at<int>(j, "priority");  // absent before classes
  // Absent before time limits: none, and the config's retries.
  if (j.contains("time_limit_s")) s.time_limit_s = j.at("time_limit_s").get<double>();
  if (j.contains("max_retries")) s.max_retries = whole_at<int>(j, "max_retries");
  // Absent before holds, dependencies and arrays: none.
  s.held = j.value("held", false);
  if (j.contains("after")) s.after = j.at("after").get<std::string>();
  // -1: not a task; else an array is named by a job id.
  if (j.contains("array_job") && !(j.at("array_job").is_number_integer() && j.at("array_job").get<int64_t>() == -1))
    s.array_job = whole_at<uint32_t>(j, "array_job");
  if (j.contains("array_task")) s.array_task = whole_at<uint32_t>(j, "array_task");
  if (j.contains("array_count")) s.array_count = whole_at<uint32_t>(j, "array_count");
  if (j.contains("array_limit")) s.array_limit = whole_at<uint32_t>(j, "array_limit");
  if (j.contains("key")) s.key = j.at("key").get<std::string>();  // absent before submit keys
  return s;
}

json to_json(const job_record& r) {
  json j = json::object();
  for (auto& f : record_fields) std::visit([&](auto member) { j[f.key] = field_json(r.*member); }, f.member);
  return j;
}

job_record record_from(const json& j) {
  job_record r;
  for (size_t i = 0; i < std::size(record_fields); ++i) {
    auto& f = record_fields[i];
    // The later fields: absent in journals written before them (job_record's defaults).
    if (i >= record_fields_always && !j.contains(f.key)) continue;
    read_field(r, f, j.at(f.key), f.key);
  }
  return r;
}

json compact_json(const job_record& r, const job_spec& s) {
  json a = json::array();
  for (auto& f : record_fields) std::visit([&](auto member) { a.push_back(field_json(r.*member)); }, f.member);
  json extra = json::object();
  if (s.array_job >= 0) {
    extra["array_job"] = s.array_job;
    extra["array_task"] = s.array_task;
    extra["array_count"] = s.array_count;
    extra["array_limit"] = s.array_limit;
  }
  if (!s.key.empty()) {  // a repeat of its submit is matched by user and key
    extra["key"] = s.key;
    extra["user"] = s.user;
  }
  if (!extra.empty()) a.push_back(std::move(extra));
  return a;
}

saved_job ended_from_compact(const json& a) {
  // 19 fields before the work-efficiency ones (read as 0), 26 since, 27 with `predicted`, 29
  // with `estimated` and `tenant`, 30 with `attempts`; then, for an array task or a keyed
  // submit, an object of those spec fields.
  constexpr size_t fields = std::size(record_fields);
  static_assert(fields == 30, "a new record field needs its compact size here");
  const bool extra = a.is_array() && a.size() == fields + 1;
  if (!a.is_array() ||
      (a.size() != 19 && a.size() != 26 && a.size() != 27 && a.size() != 29 && a.size() != fields && !extra))
    throw std::runtime_error("an ended job's record is not an array of 19, 26, 27, 29, 30 or 31 fields");
  job_record r;
  for (size_t i = 0; i < std::min(a.size(), fields); ++i)
    read_field(r, record_fields[i], a[i], fmt::format("field {}", i));
  saved_job j;
  j.spec.index = r.index;
  j.spec.name = r.name;
  j.spec.gpus = r.gpus;
  j.spec.elastic = r.elastic;
  j.spec.submit = sim_time::from_us(r.submit_us);
  j.spec.duration_s = r.duration_s;
  j.spec.tenant = r.tenant;
  j.spec.estimated = r.estimated;
  if (extra) {
    auto& x = a[fields];
    if (!x.is_object()) throw std::runtime_error("field 30 is not an object of spec fields");
    if (x.contains("array_job")) {
      j.spec.array_job = whole_at<uint32_t>(x, "array_job");  // an array is named by a job id
      j.spec.array_task = whole_at<uint32_t>(x, "array_task");
      j.spec.array_count = whole_at<uint32_t>(x, "array_count");
      j.spec.array_limit = whole_at<uint32_t>(x, "array_limit");
    }
    if (x.contains("key")) {
      j.spec.key = x.at("key").get<std::string>();
      j.spec.user = x.at("user").get<std::string>();
    }
  }
  j.status = saved_status::ended;
  j.workers = r.last_workers;
  j.record = std::move(r);
  return j;
}

} // namespace aryl::live::journal_detail
