#include "runtime/live/job_file.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "solvers/control_chars.hpp"
#include "solvers/input_error.hpp"
#include "runtime/inputs/duration_text.hpp"
#include "runtime/inputs/job_checks.hpp"
#include "runtime/inputs/input_limits.hpp"
#include "runtime/inputs/small_file.hpp"
#include "runtime/inputs/yaml_file.hpp"

namespace aryl::live {

double time_limit_of(const std::string& what, const std::string& text) {
  auto seconds = parse_duration(text);
  if (auto* why = std::get_if<std::string>(&seconds))
    throw input_error(fmt::format("{}: '{}' {}", what, escape_control(text), *why));
  return std::get<double>(seconds);
}

void read_job_file(const std::string& path, wire::submit& job) {
  auto root = parse_yaml(path, read_small_file(path, "job file", max_job_file_bytes), "job file");
  if (!root.IsMap()) throw input_error(path + ": expected a map of job keys (name, gpus, ...)");
  for (const auto& kv : root) {
    auto at = yaml_where(path, kv.first.Mark());
    if (!kv.first.IsScalar()) throw input_error(at + ": a key must be a plain name");
    auto key = kv.first.Scalar();
    const auto& v = kv.second;
    auto count = [&] {
      uint64_t n = 0;
      if (!v.IsScalar() || !YAML::convert<uint64_t>::decode(v, n) || n > std::numeric_limits<uint32_t>::max())
        throw input_error(fmt::format("{}: {} must be a whole number up to {}", at, key,
                                      std::numeric_limits<uint32_t>::max()));
      return static_cast<uint32_t>(n);
    };
    auto text = [&] {
      if (!v.IsScalar()) throw input_error(fmt::format("{}: {} must be a string", at, key));
      return v.Scalar();
    };
    // Shown in logs and tables, one line per job.
    auto shown = [&] {
      auto t = text();
      if (find_control(t) != std::string::npos)
        throw input_error(fmt::format("{}: {} holds {}", at, key, describe_control(t)));
      return t;
    };
    if (key == "name") job.name = shown();
    else if (key == "gpus") job.gpus = count();
    else if (key == "min_workers") job.min_workers = count();
    else if (key == "max_workers") job.max_workers = count();
    else if (key == "gpu_type") job.gpu_type = shown();
    else if (key == "tenant") job.tenant = shown();
    else if (key == "priority") {
      int32_t n = 0;
      if (!v.IsScalar() || !YAML::convert<int32_t>::decode(v, n) || n < -1'000'000 || n > 1'000'000)
        throw input_error(fmt::format("{}: priority must be a whole number within +-1000000", at));
      job.priority = n;
    }
    else if (key == "time_limit") job.time_limit_s = time_limit_of(fmt::format("{}: time_limit", at), text());
    else if (key == "max_retries") {
      auto n = count();
      if (n > static_cast<uint32_t>(max_job_retries))
        throw input_error(fmt::format("{}: max_retries must be at most {}", at, max_job_retries));
      job.max_retries = n;
    }
    else if (key == "expected_duration_s") {
      double d = 0;
      if (!v.IsScalar() || !YAML::convert<double>::decode(v, d) || !std::isfinite(d))
        throw input_error(fmt::format("{}: {} must be a number", at, key));
      job.expected_duration_s = d;
    } else if (key == "command") {
      if (!v.IsSequence()) throw input_error(fmt::format("{}: command must be a list of strings (argv)", at));
      job.command.clear();
      for (const auto& a : v) {
        if (!a.IsScalar()) throw input_error(fmt::format("{}: command must be a list of strings (argv)", at));
        job.command.push_back(a.Scalar());
      }
    } else if (key == "after") {
      job.after = shown();
    } else if (key == "array") {
      job.array = shown();
    } else if (key == "hold") {
      bool b = false;
      if (!v.IsScalar() || !YAML::convert<bool>::decode(v, b))
        throw input_error(fmt::format("{}: hold must be true or false", at));
      job.hold = b;
    } else if (key == "key") {
      job.key = text();
      if (auto why = submit_key_problem(*job.key); !why.empty()) throw input_error(fmt::format("{}: key: {}", at, why));
    } else {
      throw input_error(fmt::format("{}: unknown key '{}' (name, gpus, min_workers, max_workers, command, "
                                    "expected_duration_s, gpu_type, tenant, priority, time_limit, max_retries, "
                                    "after, array, hold, key)",
                                    at, key));
    }
  }
}

} // namespace aryl::live
