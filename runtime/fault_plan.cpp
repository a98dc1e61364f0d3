#include "runtime/fault_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "runtime/input_error.hpp"
#include "runtime/yaml_file.hpp"
#include "runtime/input_limits.hpp"

namespace aryl {
namespace {

double number(const YAML::Node& v, const std::string& at, const std::string& key, double lo, double hi) {
  double d = 0;
  if (!v.IsScalar() || !YAML::convert<double>::decode(v, d) || !std::isfinite(d) || d < lo || d > hi)
    throw input_error(fmt::format("{}: {} must be a number in [{:g}, {:g}]", at, key, lo, hi));
  return d;
}

} // namespace

std::vector<fault_event> read_fault_plan(const std::string& path, const std::vector<std::string>& servers) {
  auto root = load_yaml_file(path, "fault plan");
  if (!root.IsMap() || !root["faults"] || !root["faults"].IsSequence())
    throw input_error(path + ": expected a map with a `faults:` list");
  std::vector<fault_event> out;
  for (const auto& item : root["faults"]) {
    auto at = yaml_where(path, item.Mark());
    if (!item.IsMap()) throw input_error(at + ": each fault is a map (at, and one of server_crash, worker_crash, surge)");
    fault_event e;
    e.source = at;
    bool have_time = false;
    int kinds = 0;
    for (const auto& kv : item) {
      auto key_at = yaml_where(path, kv.first.Mark());
      auto key = kv.first.IsScalar() ? kv.first.Scalar() : std::string("?");
      const auto& v = kv.second;
      if (key == "at") {
        e.at = sim_time::from_seconds(number(v, key_at, key, 0, max_input_seconds));
        have_time = true;
      } else if (key == "server_crash") {
        ++kinds;
        e.what = fault_event::kind::server_crash;
        e.server = v.IsScalar() ? v.Scalar() : "";
        if (std::find(servers.begin(), servers.end(), e.server) == servers.end())
          throw input_error(fmt::format("{}: server_crash: '{}' is not a training server of the config (t0..t{})",
                                        key_at, e.server, servers.size() - 1));
      } else if (key == "down_for") {
        e.down_s = number(v, key_at, key, 0, max_input_seconds);
      } else if (key == "worker_crash") {
        ++kinds;
        e.what = fault_event::kind::worker_crash;
        e.job = static_cast<uint32_t>(number(v, key_at, key, 0, 4e9));
      } else if (key == "surge") {
        ++kinds;
        e.what = fault_event::kind::surge;
        e.servers = static_cast<int>(number(v, key_at, key, 0, max_servers));
      } else {
        throw input_error(fmt::format("{}: unknown key '{}' (at, server_crash, down_for, worker_crash, surge)",
                                      key_at, key));
      }
    }
    if (!have_time) throw input_error(at + ": a fault needs `at` (seconds)");
    if (kinds != 1) throw input_error(at + ": a fault has exactly one of server_crash, worker_crash, surge");
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
  std::stable_sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.at < b.at; });
  return out;
}

} // namespace aryl
