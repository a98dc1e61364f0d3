#include "runtime/inputs/fault_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "solvers/input_error.hpp"
#include "runtime/inputs/yaml_file.hpp"
#include "runtime/inputs/input_limits.hpp"

namespace aryl {
namespace {

double number(const YAML::Node& v, const std::string& at, const std::string& key, double lo, double hi) {
  double d = 0;
  if (!v.IsScalar() || !YAML::convert<double>::decode(v, d) || !std::isfinite(d) || d < lo || d > hi)
    throw input_error(fmt::format("{}: {} must be a number in [{:g}, {:g}]", at, key, lo, hi));
  return d;
}

/// A job index or a server count: a fraction would silently round to another job or level.
double whole(const YAML::Node& v, const std::string& at, const std::string& key, double lo, double hi) {
  double d = 0;
  if (!v.IsScalar() || !YAML::convert<double>::decode(v, d) || !std::isfinite(d) || d < lo || d > hi ||
      d != std::floor(d))
    throw input_error(fmt::format("{}: {} must be a whole number in [{:.0f}, {:.0f}]", at, key, lo, hi));
  return d;
}

/// "t0..t15, i0..i7": the names a plan may use, as configured.
std::string server_range(const std::vector<std::string>& servers) {
  std::string out;
  for (size_t i = 0; i < servers.size(); ++i) {
    char prefix = servers[i].empty() ? '?' : servers[i][0];
    size_t j = i;
    while (j + 1 < servers.size() && !servers[j + 1].empty() && servers[j + 1][0] == prefix) ++j;
    out += (out.empty() ? "" : ", ") + (i == j ? servers[i] : servers[i] + ".." + servers[j]);
    i = j;
  }
  return out.empty() ? "none" : out;
}

} // namespace

std::vector<fault_event> read_fault_plan(const std::string& path, const std::vector<std::string>& servers) {
  using kind = fault_event::kind;
  static const std::map<std::string, kind> kinds = {
      {"server_crash", kind::server_crash}, {"worker_crash", kind::worker_crash}, {"surge", kind::surge},
      {"disconnect", kind::disconnect},     {"link", kind::link},                 {"checkpoint", kind::checkpoint},
      {"scheduler_crash", kind::scheduler_crash}};
  // The keys that qualify a fault, and the kinds they go with.
  static const std::map<std::string, std::vector<kind>> qualifiers = {
      {"down_for", {kind::server_crash, kind::scheduler_crash}}, {"for", {kind::disconnect, kind::link}}, {"delay_s", {kind::link}},
      {"loss", {kind::link}},             {"slow_s", {kind::checkpoint}},           {"fail", {kind::checkpoint}}};
  const char* kind_list = "server_crash, worker_crash, surge, disconnect, link, checkpoint, scheduler_crash";
  auto root = load_yaml_file(path, "fault plan");
  if (!root.IsMap() || !root["faults"] || !root["faults"].IsSequence())
    throw input_error(path + ": expected a map with a `faults:` list");
  for (const auto& kv : root)
    if (!kv.first.IsScalar() || kv.first.Scalar() != "faults")
      throw input_error(fmt::format("{}: unknown top-level key '{}' (a plan holds only `faults:`)",
                                    yaml_where(path, kv.first.Mark()), kv.first.IsScalar() ? kv.first.Scalar() : "?"));
  std::vector<fault_event> out;
  for (const auto& item : root["faults"]) {
    auto at = yaml_where(path, item.Mark());
    if (!item.IsMap()) throw input_error(fmt::format("{}: each fault is a map (at, and one of {})", at, kind_list));
    fault_event e;
    e.source = at;
    bool have_time = false;
    std::string kind_key;
    int kind_count = 0;
    std::map<std::string, std::string> qualified;  // qualifier -> where it was given
    for (const auto& kv : item) {
      auto key_at = yaml_where(path, kv.first.Mark());
      auto key = kv.first.IsScalar() ? kv.first.Scalar() : std::string("?");
      const auto& v = kv.second;
      if (key == "at") {
        e.at = sim_time::from_seconds(number(v, key_at, key, 0, max_input_seconds));
        have_time = true;
        continue;
      }
      if (auto k = kinds.find(key); k != kinds.end()) {
        ++kind_count;
        kind_key = key;
        e.what = k->second;
        if (e.what == kind::server_crash || e.what == kind::disconnect || e.what == kind::link) {
          e.server = v.IsScalar() ? v.Scalar() : "";
          if (std::find(servers.begin(), servers.end(), e.server) == servers.end())
            throw input_error(fmt::format("{}: {}: '{}' is not a server of the config ({})", key_at, key, e.server,
                                          server_range(servers)));
        } else if (e.what == kind::scheduler_crash) {
          bool yes = false;
          if (!v.IsScalar() || !YAML::convert<bool>::decode(v, yes) || !yes)
            throw input_error(key_at + ": scheduler_crash: must be true (there is one scheduler)");
        } else if (e.what == kind::surge) {
          e.servers = static_cast<int>(whole(v, key_at, key, 0, max_servers));
        } else {
          e.job = static_cast<uint32_t>(whole(v, key_at, key, 0, 4e9));
        }
        continue;
      }
      if (!qualifiers.count(key))
        throw input_error(fmt::format("{}: unknown key '{}' (at, {}; down_for, for, delay_s, loss, slow_s, fail)",
                                      key_at, key, kind_list));
      qualified[key] = key_at;
      if (key == "down_for") e.down_s = number(v, key_at, key, 0, max_input_seconds);
      else if (key == "for") e.for_s = number(v, key_at, key, 0, max_input_seconds);
      else if (key == "delay_s") e.delay_s = number(v, key_at, key, 0, max_input_seconds);
      else if (key == "loss") e.loss = number(v, key_at, key, 0, 1);
      else if (key == "slow_s") e.slow_s = number(v, key_at, key, 0, max_input_seconds);
      else if (!v.IsScalar() || !YAML::convert<bool>::decode(v, e.fail) || !e.fail)
        throw input_error(key_at + ": fail: must be true (leave it out for a checkpoint that is only slow)");
    }
    if (!have_time) throw input_error(at + ": a fault needs `at` (seconds)");
    if (kind_count != 1) throw input_error(fmt::format("{}: a fault has exactly one of {}", at, kind_list));
    for (auto& [key, key_at] : qualified) {
      auto& with = qualifiers.at(key);
      if (std::find(with.begin(), with.end(), e.what) == with.end())
        throw input_error(fmt::format("{}: '{}' does not go with {}", key_at, key, kind_key));
    }
    if ((e.what == kind::disconnect || e.what == kind::link) && !qualified.count("for"))
      throw input_error(fmt::format("{}: {} needs `for` (seconds)", at, kind_key));
    if (e.what == kind::scheduler_crash && !qualified.count("down_for"))
      throw input_error(at + ": scheduler_crash needs `down_for` (seconds): a scheduler that never comes back "
                             "ends the run");
    if (e.what == kind::link && !(e.delay_s > 0 || e.loss > 0))
      throw input_error(at + ": link needs `delay_s` or `loss` above 0");
    if (e.what == kind::checkpoint && qualified.count("slow_s") + qualified.count("fail") != 1)
      throw input_error(at + ": checkpoint needs one of `slow_s` (seconds) or `fail: true`");
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<fault_event> random_fault_plan(const random_fault_rates& r, uint64_t seed, double span_s,
                                           const std::vector<std::string>& servers, uint32_t jobs,
                                           int inference_servers) {
  std::vector<fault_event> out;
  if (span_s <= 0) return out;
  // One stream per kind (and per server), so that a rate changed for one kind leaves the
  // other kinds' faults where they were.
  auto arrivals = [&](uint64_t stream, double per_day, auto&& make) {
    if (per_day <= 0) return;
    std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ULL + stream);
    std::exponential_distribution<double> gap(per_day / 86400.0);
    for (double t = gap(rng); t < span_s; t += gap(rng)) {
      fault_event e;
      e.at = sim_time::from_seconds(t);
      e.source = "random";
      make(e, rng);
      out.push_back(std::move(e));
    }
  };
  for (size_t s = 0; s < servers.size(); ++s)
    arrivals(1000 + s, r.server_crash_per_day, [&](fault_event& e, std::mt19937_64& rng) {
      e.what = fault_event::kind::server_crash;
      e.server = servers[s];
      bool permanent = std::uniform_real_distribution<double>(0, 1)(rng) < r.permanent_fraction;
      e.down_s = permanent ? -1 : std::exponential_distribution<double>(1.0 / std::max(r.mean_down_s, 1.0))(rng);
    });
  if (jobs > 0)
    arrivals(1, r.worker_crash_per_day, [&](fault_event& e, std::mt19937_64& rng) {
      e.what = fault_event::kind::worker_crash;
      e.job = std::uniform_int_distribution<uint32_t>(0, jobs - 1)(rng);
    });
  if (inference_servers > 0)
    arrivals(2, r.surge_per_day, [&](fault_event& e, std::mt19937_64& rng) {
      e.what = fault_event::kind::surge;
      e.servers = std::uniform_int_distribution<int>(0, inference_servers)(rng);
    });
  auto lasting = [](double mean_s, std::mt19937_64& rng) {
    return std::exponential_distribution<double>(1.0 / std::max(mean_s, 1.0))(rng);
  };
  for (size_t s = 0; s < servers.size(); ++s) {
    arrivals((uint64_t{1} << 32) + s, r.disconnect_per_day, [&](fault_event& e, std::mt19937_64& rng) {
      e.what = fault_event::kind::disconnect;
      e.server = servers[s];
      e.for_s = lasting(r.mean_disconnect_s, rng);
    });
    arrivals((uint64_t{2} << 32) + s, r.link_per_day, [&](fault_event& e, std::mt19937_64& rng) {
      e.what = fault_event::kind::link;
      e.server = servers[s];
      e.for_s = lasting(r.mean_link_s, rng);
      e.delay_s = r.link_delay_s;
      e.loss = r.link_loss;
    });
  }
  if (jobs > 0) {
    arrivals(3, r.checkpoint_fail_per_day, [&](fault_event& e, std::mt19937_64& rng) {
      e.what = fault_event::kind::checkpoint;
      e.job = std::uniform_int_distribution<uint32_t>(0, jobs - 1)(rng);
      e.fail = true;
    });
    arrivals(4, r.checkpoint_slow_per_day, [&](fault_event& e, std::mt19937_64& rng) {
      e.what = fault_event::kind::checkpoint;
      e.job = std::uniform_int_distribution<uint32_t>(0, jobs - 1)(rng);
      e.slow_s = lasting(r.mean_checkpoint_slow_s, rng);
    });
  }
  arrivals(5, r.scheduler_crash_per_day, [&](fault_event& e, std::mt19937_64& rng) {
    e.what = fault_event::kind::scheduler_crash;
    e.down_s = lasting(r.mean_scheduler_down_s, rng);
  });
  std::stable_sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.at < b.at; });
  return out;
}

void check_fault_jobs(const std::vector<fault_event>& plan, size_t jobs) {
  for (auto& e : plan) {
    if (e.what != fault_event::kind::worker_crash && e.what != fault_event::kind::checkpoint) continue;
    if (e.job < jobs) continue;
    throw input_error(fmt::format("{}: {}: job {} does not exist ({})", e.source,
                                  e.what == fault_event::kind::worker_crash ? "worker_crash" : "checkpoint", e.job,
                                  jobs == 0 ? std::string("the workload has no jobs")
                                            : fmt::format("the workload has jobs 0..{}", jobs - 1)));
  }
}

} // namespace aryl
