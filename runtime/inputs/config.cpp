#include "runtime/inputs/config.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <optional>
#include <set>
#include <sstream>

#include "solvers/input_error.hpp"
#include "runtime/inputs/input_limits.hpp"
#include "runtime/inputs/user_name.hpp"
#include "runtime/inputs/yaml_file.hpp"
#include "solvers/policy.hpp"
#include "solvers/reclaim.hpp"

namespace aryl {
namespace {

using setter = std::function<void(config&, const std::string&)>;

[[noreturn]] void bad_value(const std::string& what) { throw std::invalid_argument(what); }

double to_double(const std::string& v) {
  double out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec == std::errc::result_out_of_range) bad_value("'" + v + "' is out of range");
  if (ec != std::errc{} || p != v.data() + v.size()) bad_value("'" + v + "' is not a number");
  if (!std::isfinite(out)) bad_value("'" + v + "' is not a finite number");
  return out;
}

int64_t to_int(const std::string& v) {
  int64_t out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec == std::errc::result_out_of_range) bad_value("'" + v + "' is out of range");
  if (ec != std::errc{} || p != v.data() + v.size()) bad_value("'" + v + "' is not an integer");
  return out;
}

std::optional<bool> parse_bool(const std::string& v) {
  if (v == "true" || v == "1" || v == "on" || v == "yes") return true;
  if (v == "false" || v == "0" || v == "off" || v == "no") return false;
  return std::nullopt;
}

bool to_bool(const std::string& v) {
  if (auto b = parse_bool(v)) return *b;
  bad_value("'" + v + "' is not a boolean (true/false)");
}

template <class T>
T at_least(T v, T lo) {
  if (v < lo) bad_value("must be >= " + std::to_string(lo));
  return v;
}

std::string show(double v) { return fmt::format("{:g}", v); }
std::string show(int64_t v) { return std::to_string(v); }

/// Every number a run takes has a stated range (docs/config.md): within what the clock,
/// the solvers and the int types hold, checked before narrowing.
template <class T>
T within(T v, T lo, T hi) {
  if (v < lo || v > hi) bad_value(fmt::format("{} is outside [{}, {}]", show(v), show(lo), show(hi)));
  return v;
}

double seconds(const std::string& v, double lo = 0) { return within(to_double(v), lo, max_input_seconds); }

int count(const std::string& v, int64_t lo, int64_t hi) { return static_cast<int>(within(to_int(v), lo, hi)); }

/// HOST:PORT (a name or IPv4 address; an IPv6 one in brackets), or empty.
std::string endpoint_text(const std::string& v) {
  if (v.empty()) return v;
  auto colon = v.rfind(':');
  if (colon == std::string::npos || colon == 0 || v.find_first_of(" \t,=") != std::string::npos)
    bad_value("'" + v + "' is not HOST:PORT");
  count(v.substr(colon + 1), 1, 65535);
  return v;
}

double fraction(double v) {
  if (v < 0 || v > 1) bad_value("must be within [0, 1]");
  return v;
}

std::string one_of(const std::string& v, std::initializer_list<const char*> allowed) {
  std::string list;
  for (auto a : allowed) {
    if (v == a) return v;
    list += list.empty() ? a : std::string("|") + a;
  }
  bad_value("'" + v + "' is not one of " + list);
}

const std::map<std::string, setter>& setters() {
  static const std::map<std::string, setter> table{
      {"policy", [](config& c, const std::string& v) {
         if (!find_policy(v)) {
           std::string names;
           for (auto& p : all_policies()) names += (names.empty() ? "" : "|") + p.name;
           bad_value("unknown policy '" + v + "' (known: " + names + ")");
         }
         c.policy = v;
       }},
      {"placement", [](config& c, const std::string& v) {
         c.scheduler.placement = one_of(v, {"count", "consolidated"}) == "count" ? placement_mode::count
                                                                                 : placement_mode::consolidated;
       }},
      {"seed", [](config& c, const std::string& v) { c.seed = static_cast<uint64_t>(at_least<int64_t>(to_int(v), 0)); }},
      {"scheduler.backfill", [](config& c, const std::string& v) {
         if (v == "auto") c.scheduler.backfill.reset();
         else if (auto b = parse_bool(v)) c.scheduler.backfill = *b;
         else bad_value("'" + v + "' is not auto, true or false");
       }},
      {"scheduler.migrate", [](config& c, const std::string& v) { c.scheduler.migrate = to_bool(v); }},
      {"scheduler.migrate_min_gain_s", [](config& c, const std::string& v) { c.scheduler.migrate_min_gain_s = seconds(v); }},
      {"scheduler.free_gpus_first", [](config& c, const std::string& v) { c.scheduler.free_gpus_first = to_bool(v); }},
      {"scheduler.scale_period_s", [](config& c, const std::string& v) { c.scheduler.scale_period_s = seconds(v); }},
      {"scheduler.end_scale_period_s",
       [](config& c, const std::string& v) { c.scheduler.end_scale_period_s = seconds(v); }},
      {"scheduler.scale_rounds", [](config& c, const std::string& v) {
         auto r = one_of(v, {"every", "capacity", "arrivals"});
         c.scheduler.rounds = r == "every" ? scale_rounds::every : r == "capacity" ? scale_rounds::capacity : scale_rounds::arrivals;
       }},
      {"scheduler.scale_horizon", [](config& c, const std::string& v) {
         c.scheduler.horizon = one_of(v, {"hold", "end"}) == "end" ? scale_horizon::end : scale_horizon::hold;
       }},
      {"scheduler.elastic_floor", [](config& c, const std::string& v) {
         c.scheduler.floor = one_of(v, {"request", "min"}) == "min" ? elastic_floor::min : elastic_floor::request;
       }},
      {"scheduler.rescale_margin_s", [](config& c, const std::string& v) { c.scheduler.rescale_margin_s = seconds(v); }},
      {"scheduler.rescale_cooldown_s", [](config& c, const std::string& v) { c.scheduler.rescale_cooldown_s = seconds(v); }},
      {"scheduler.min_extra_efficiency", [](config& c, const std::string& v) { c.scheduler.min_extra_efficiency = fraction(to_double(v)); }},
      {"scheduler.move_with_size", [](config& c, const std::string& v) { c.scheduler.move_with_size = to_bool(v); }},
      {"scheduler.base_room_to_grow", [](config& c, const std::string& v) { c.scheduler.base_room_to_grow = to_bool(v); }},
      {"scheduler.consolidate", [](config& c, const std::string& v) { c.scheduler.consolidate = to_bool(v); }},
      {"scheduler.reserve_after_s", [](config& c, const std::string& v) { c.scheduler.reserve_after_s = seconds(v); }},
      {"scheduler.reserve_stretch", [](config& c, const std::string& v) { c.scheduler.reserve_stretch = within(to_double(v), 0.0, 1e6); }},
      {"scheduler.reserve_stretch_min_s",
       [](config& c, const std::string& v) { c.scheduler.reserve_stretch_min_s = seconds(v); }},
      {"scheduler.preempt_for_speed",
       [](config& c, const std::string& v) { c.scheduler.preempt_for_speed = to_bool(v); }},
      {"scheduler.shadow_backfill",
       [](config& c, const std::string& v) { c.scheduler.shadow_backfill = to_bool(v); }},
      {"scheduler.preempt_ratio", [](config& c, const std::string& v) { c.scheduler.preempt_ratio = within(to_double(v), 0.0, 1e6); }},
      {"scheduler.max_preemptions", [](config& c, const std::string& v) { c.scheduler.max_preemptions = static_cast<int>(count(v, 0, 1000000)); }},
      {"scheduler.hold_prior_s", [](config& c, const std::string& v) { c.scheduler.hold_prior_s = seconds(v, 1.0); }},
      {"scheduler.hold_halflife_s", [](config& c, const std::string& v) { c.scheduler.hold_halflife_s = seconds(v); }},
      {"scheduler.long_job_s", [](config& c, const std::string& v) { c.scheduler.long_job_s = seconds(v); }},
      {"scheduler.inelastic_on_loaned", [](config& c, const std::string& v) { c.scheduler.inelastic_on_loaned = to_bool(v); }},
      {"scheduler.reclaim", [](config& c, const std::string& v) { c.reclaim_method = one_of(v, {"greedy", "exact"}); }},
      {"scheduler.unestimated_prior_s", [](config& c, const std::string& v) { c.scheduler.unestimated_prior_s = seconds(v, 1.0); }},
      {"scheduler.las_threshold_gpu_s", [](config& c, const std::string& v) { c.scheduler.las_thresholds = {within(to_double(v), 0.0, max_gpu_seconds)}; }},
      {"cluster.training.servers", [](config& c, const std::string& v) { c.training.servers = count(v, 0, max_servers); }},
      {"cluster.training.gpus_per_server", [](config& c, const std::string& v) { c.training.gpus_per_server = count(v, 1, max_gpus_per_server); }},
      {"cluster.training.gpu_type", [](config& c, const std::string& v) { c.training.gpu_type = v; }},
      {"cluster.inference.servers", [](config& c, const std::string& v) { c.inference.servers = count(v, 0, max_servers); }},
      {"cluster.inference.gpus_per_server", [](config& c, const std::string& v) { c.inference.gpus_per_server = count(v, 1, max_gpus_per_server); }},
      {"cluster.inference.gpu_type", [](config& c, const std::string& v) { c.inference.gpu_type = v; }},
      {"model.eff_exponent", [](config& c, const std::string& v) { c.eff_exponent = within(to_double(v), -1.0, 0.0); }},
      {"model.cross_server_eff", [](config& c, const std::string& v) { c.cross_server_eff = within(to_double(v), 0.01, 1.0); }},
      {"trace.file", [](config& c, const std::string& v) { c.trace_file = v; }},
      {"trace.format", [](config& c, const std::string& v) { c.trace_format = one_of(v, {"canonical", "philly"}); }},
      {"trace.vc", [](config& c, const std::string& v) { c.trace_vc = v; }},
      {"trace.from", [](config& c, const std::string& v) { c.trace_from = v; }},
      {"trace.to", [](config& c, const std::string& v) { c.trace_to = v; }},
      {"trace.skip_bad_rows", [](config& c, const std::string& v) { c.skip_bad_rows = to_bool(v); }},
      {"synthetic.jobs", [](config& c, const std::string& v) { c.synthetic_jobs = count(v, 1, max_synthetic_jobs); }},
      {"synthetic.load", [](config& c, const std::string& v) { c.synthetic_load = within(to_double(v), 0.01, 100.0); }},
      {"jobs.restart_overhead_s", [](config& c, const std::string& v) { c.restart_overhead_s = within(to_double(v), 0.0, max_overhead_s); }},
      {"jobs.scale_overhead_s", [](config& c, const std::string& v) { c.scale_overhead_s = within(to_double(v), 0.0, max_overhead_s); }},
      {"jobs.checkpoint_interval_s", [](config& c, const std::string& v) { c.checkpoint_interval_s = seconds(v); }},
      {"jobs.checkpoint_s", [](config& c, const std::string& v) { c.checkpoint_s = within(to_double(v), 0.0, max_overhead_s); }},
      {"jobs.checkpoint_per_gpu_s", [](config& c, const std::string& v) { c.checkpoint_per_gpu_s = within(to_double(v), 0.0, max_overhead_s); }},
      {"jobs.checkpoint_jitter", [](config& c, const std::string& v) { c.checkpoint_jitter = fraction(to_double(v)); }},
      {"faults.file", [](config& c, const std::string& v) { c.faults_file = v; }},
      {"faults.heartbeat_s", [](config& c, const std::string& v) { c.heartbeat_s = within(to_double(v), 0.001, 86400.0); }},
      {"faults.missed_heartbeats", [](config& c, const std::string& v) { c.missed_heartbeats = count(v, 1, 1000); }},
      {"faults.max_retries", [](config& c, const std::string& v) { c.max_retries = count(v, 0, 1000); }},
      {"faults.random.server_crash_per_day", [](config& c, const std::string& v) { c.random_faults.server_crash_per_day = within(to_double(v), 0.0, 1e4); }},
      {"faults.random.mean_down_s", [](config& c, const std::string& v) { c.random_faults.mean_down_s = within(to_double(v), 1.0, max_input_seconds); }},
      {"faults.random.inference_servers", [](config& c, const std::string& v) { c.random_faults.inference_servers = to_bool(v); }},
      {"faults.random.permanent_fraction", [](config& c, const std::string& v) { c.random_faults.permanent_fraction = fraction(to_double(v)); }},
      {"faults.random.worker_crash_per_day", [](config& c, const std::string& v) { c.random_faults.worker_crash_per_day = within(to_double(v), 0.0, 1e6); }},
      {"faults.random.surge_per_day", [](config& c, const std::string& v) { c.random_faults.surge_per_day = within(to_double(v), 0.0, 1e4); }},
      {"faults.random.disconnect_per_day", [](config& c, const std::string& v) { c.random_faults.disconnect_per_day = within(to_double(v), 0.0, 1e4); }},
      {"faults.random.mean_disconnect_s", [](config& c, const std::string& v) { c.random_faults.mean_disconnect_s = seconds(v, 1.0); }},
      {"faults.random.link_per_day", [](config& c, const std::string& v) { c.random_faults.link_per_day = within(to_double(v), 0.0, 1e4); }},
      {"faults.random.mean_link_s", [](config& c, const std::string& v) { c.random_faults.mean_link_s = seconds(v, 1.0); }},
      {"faults.random.link_delay_s", [](config& c, const std::string& v) { c.random_faults.link_delay_s = seconds(v); }},
      {"faults.random.link_loss", [](config& c, const std::string& v) { c.random_faults.link_loss = fraction(to_double(v)); }},
      {"faults.random.checkpoint_fail_per_day", [](config& c, const std::string& v) { c.random_faults.checkpoint_fail_per_day = within(to_double(v), 0.0, 1e6); }},
      {"faults.random.checkpoint_slow_per_day", [](config& c, const std::string& v) { c.random_faults.checkpoint_slow_per_day = within(to_double(v), 0.0, 1e6); }},
      {"faults.random.mean_checkpoint_slow_s", [](config& c, const std::string& v) { c.random_faults.mean_checkpoint_slow_s = seconds(v, 1.0); }},
      {"faults.random.scheduler_crash_per_day", [](config& c, const std::string& v) { c.random_faults.scheduler_crash_per_day = within(to_double(v), 0.0, 1e4); }},
      {"faults.random.mean_scheduler_down_s", [](config& c, const std::string& v) { c.random_faults.mean_scheduler_down_s = seconds(v, 1.0); }},
      {"jobs.elastic_fraction", [](config& c, const std::string& v) { c.elastic_fraction = fraction(to_double(v)); }},
      {"jobs.min_workers_fraction", [](config& c, const std::string& v) { c.min_workers_fraction = fraction(to_double(v)); }},
      {"jobs.max_workers_factor", [](config& c, const std::string& v) { c.max_workers_factor = within(to_double(v), 1.0, 64.0); }},
      {"jobs.mispredict_fraction", [](config& c, const std::string& v) { c.mispredict_fraction = fraction(to_double(v)); }},
      {"jobs.mispredict_error", [](config& c, const std::string& v) { c.mispredict_error = fraction(to_double(v)); }},
      {"jobs.unestimated_fraction", [](config& c, const std::string& v) { c.unestimated_fraction = fraction(to_double(v)); }},
      {"tenants.from_demand", [](config& c, const std::string& v) { c.tenants_from_demand = to_bool(v); }},
      {"tenants.borrow", [](config& c, const std::string& v) { c.tenants_borrow = to_bool(v); }},
      {"tenants.lend", [](config& c, const std::string& v) { c.tenants_lend = to_bool(v); }},
      {"tenants.fair_share", [](config& c, const std::string& v) { c.tenants_fair_share = to_bool(v); }},
      {"tenants.halflife_s", [](config& c, const std::string& v) { c.tenants_halflife_s = seconds(v); }},
      {"tenants.reclaim_grace_s", [](config& c, const std::string& v) { c.tenants_reclaim_grace_s = seconds(v); }},
      {"priorities.aging_s", [](config& c, const std::string& v) { c.priorities_aging_s = seconds(v); }},
      {"priorities.max_preemptions", [](config& c, const std::string& v) { c.priorities_max_preemptions = count(v, 0, 1000000); }},
      {"inference.trace", [](config& c, const std::string& v) { c.inference_trace = v; }},
      {"inference.format", [](config& c, const std::string& v) { c.inference_format = one_of(v, {"canonical", "servegen"}); }},
      {"inference.peak_utilisation", [](config& c, const std::string& v) { c.inference_peak_utilisation = fraction(to_double(v)); }},
      {"inference.interval_s", [](config& c, const std::string& v) { c.inference_interval_s = within<int64_t>(to_int(v), 1, max_period_s); }},
      {"inference.headroom", [](config& c, const std::string& v) { c.inference_headroom = within(to_double(v), 0.0, 100.0); }},
      {"inference.grace_s", [](config& c, const std::string& v) { c.inference_grace_s = within<int64_t>(to_int(v), 0, max_period_s); }},
      {"run.mode", [](config& c, const std::string& v) { c.mode = one_of(v, {"simulated", "wallclock"}); }},
      {"run.speedup", [](config& c, const std::string& v) { c.speedup = within(to_double(v), 1e-3, max_speedup); }},
      {"run.check_invariants", [](config& c, const std::string& v) { c.check_invariants = to_bool(v); }},
      {"run.stall_limit_s", [](config& c, const std::string& v) { c.stall_limit_s = seconds(v, 1.0); }},
      {"run.max_lag_s", [](config& c, const std::string& v) { c.max_lag_s = seconds(v); }},
      {"run.progress", [](config& c, const std::string& v) { c.progress = to_bool(v); }},
      {"run.out", [](config& c, const std::string& v) { c.out_dir = v; }},
      {"live.worker_command", [](config& c, const std::string& v) {
         c.worker_command.clear();
         std::istringstream words(v);
         for (std::string w; words >> w;) c.worker_command.push_back(w);
       }},
      {"live.state_compact_every", [](config& c, const std::string& v) { c.state_compact_every = count(v, 0, 1000000); }},
      {"live.hello_timeout_s", [](config& c, const std::string& v) { c.hello_timeout_s = within(to_double(v), 0.1, 3600.0); }},
      {"live.max_connections", [](config& c, const std::string& v) { c.max_connections = count(v, 1, 1000000); }},
      {"live.max_before_hello", [](config& c, const std::string& v) { c.max_before_hello = count(v, 1, 1000000); }},
      {"live.max_before_hello_per_address", [](config& c, const std::string& v) { c.max_before_hello_per_address = count(v, 1, 1000000); }},
      {"live.pre_hello_closes_per_s", [](config& c, const std::string& v) { c.pre_hello_closes_per_s = within(to_double(v), 0.1, 1e6); }},
      {"live.default_estimate_s", [](config& c, const std::string& v) { c.default_estimate_s = seconds(v, 1.0); }},
      {"live.max_active_submits", [](config& c, const std::string& v) { c.max_active_submits = count(v, 1, 10000000); }},
      {"live.max_active_submits_per_address", [](config& c, const std::string& v) { c.max_active_submits_per_address = count(v, 1, 10000000); }},
      {"live.max_submit_bytes", [](config& c, const std::string& v) { c.max_submit_bytes = count(v, 64, 1000000); }},
      {"live.submits_per_s", [](config& c, const std::string& v) { c.submits_per_s = within(to_double(v), 0.01, 1e6); }},
      {"live.master_port_first", [](config& c, const std::string& v) { c.master_port_first = count(v, 1024, 65535); }},
      {"live.master_port_count", [](config& c, const std::string& v) { c.master_port_count = count(v, 1, 10000); }},
      {"live.allow_root_jobs", [](config& c, const std::string& v) { c.allow_root_jobs = to_bool(v); }},
      {"live.rdzv_endpoint", [](config& c, const std::string& v) { c.rdzv_endpoint = endpoint_text(v); }},
      {"live.rdzv_last_call_s", [](config& c, const std::string& v) { c.rdzv_last_call_s = count(v, 1, 3600); }},
  };
  return table;
}

constexpr const char* gpu_speed_prefix = "gpu_speed.";
constexpr const char* tenants_prefix = "tenants.";

/// `tenants.<name>.users`: names separated by commas (a YAML list is joined so), each a user
/// name (user_name_problem).
std::vector<std::string> user_list(const std::string& v) {
  std::vector<std::string> out;
  std::string name;
  std::istringstream in(v);
  while (std::getline(in, name, ',')) {
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t") + 1);
    if (name.empty()) bad_value("an empty user name in '" + v + "'");
    if (auto why = user_name_problem(name); !why.empty()) bad_value("user " + why);
    if (std::find(out.begin(), out.end(), name) != out.end()) bad_value("user '" + name + "' is listed twice");
    out.push_back(name);
  }
  return out;
}

/// `tenants.<name>.<field>`: false if `key` is not of that shape (a plain tenants.* key).
bool set_tenant_key(config& c, const std::string& key, const std::string& v) {
  const std::string rest = key.substr(std::string(tenants_prefix).size());
  auto dot = rest.rfind('.');
  if (dot == std::string::npos) return false;
  const std::string name = rest.substr(0, dot), field = rest.substr(dot + 1);
  if (name.empty() || name.find('.') != std::string::npos) bad_value("a tenant's name is one plain word");
  tenant_config t = c.tenants.count(name) ? c.tenants.at(name) : tenant_config{};
  if (field == "quota") t.quota = static_cast<long>(within<int64_t>(to_int(v), 0, 100'000'000));
  else if (field == "weight") t.weight = within(to_double(v), 1e-6, 1e6);
  else if (field == "borrow") t.borrow = to_bool(v) ? 1 : 0;
  else if (field == "lend") t.lend = to_bool(v) ? 1 : 0;
  else if (field == "users") t.users = user_list(v);
  else if (field == "max_priority") t.max_priority = static_cast<int>(within<int64_t>(to_int(v), -1'000'000, 1'000'000));
  else bad_value("unknown tenant setting '" + field + "' (quota, weight, borrow, lend, users, max_priority)");
  c.tenants[name] = t;
  return true;
}

/// Config keys nest two levels (cluster.training.servers); deeper input is refused, which
/// also ends the walk on an alias that refers to its own mapping.
constexpr int max_depth = 4;

void flatten(const YAML::Node& node, const std::string& prefix, config& c, const std::string& path, int depth) {
  for (const auto& kv : node) {
    auto where = yaml_where(path, kv.first.Mark());
    if (!kv.first.IsScalar())
      throw input_error(where + ": a key " + (prefix.empty() ? "" : "under '" + prefix + "' ") +
                        "is not a plain name (complex keys are not config keys)");
    auto full = prefix.empty() ? kv.first.Scalar() : prefix + "." + kv.first.Scalar();
    if (kv.second.IsMap()) {
      if (depth + 1 >= max_depth)
        throw input_error(where + ": key '" + full + "' nests deeper than any config key (or refers to itself)");
      flatten(kv.second, full, c, path, depth + 1);
    } else if (kv.second.IsScalar()) {
      set_config_key(c, full, kv.second.Scalar(), where);
    } else if (kv.second.IsSequence() && full.rfind(tenants_prefix, 0) == 0 && full.ends_with(".users")) {
      std::string joined;
      for (const auto& item : kv.second) {
        if (!item.IsScalar())
          throw input_error(yaml_where(path, item.Mark()) + ": key '" + full + "': each user is a plain name");
        if (item.Scalar().find(',') != std::string::npos)
          throw input_error(yaml_where(path, item.Mark()) + ": key '" + full + "': user '" + item.Scalar() +
                            "' holds a comma");
        joined += (joined.empty() ? "" : ",") + item.Scalar();
      }
      set_config_key(c, full, joined, where);
    } else {
      throw input_error(where + ": key '" + full + "' must be a scalar or a mapping");
    }
  }
}

} // namespace

void set_config_key(config& c, const std::string& key, const std::string& value,
                    const std::string& where) {
  try {
    if (key.rfind(gpu_speed_prefix, 0) == 0 && key.size() > std::string(gpu_speed_prefix).size()) {
      double s = within(to_double(value), min_gpu_speed, max_gpu_speed);
      c.gpu_speed[key.substr(std::string(gpu_speed_prefix).size())] = s;
      return;
    }
    auto it = setters().find(key);
    if (it == setters().end() && key.rfind(tenants_prefix, 0) == 0 && set_tenant_key(c, key, value)) return;
    if (it == setters().end())
      throw input_error(where + ": unknown config key '" + key + "'");
    it->second(c, value);
  } catch (const std::invalid_argument& e) {
    throw input_error(where + ": " + key + ": " + e.what());
  }
}

void apply_override(config& c, const std::string& assignment) {
  auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw input_error("--set " + assignment + ": expected key=value");
  set_config_key(c, assignment.substr(0, eq), assignment.substr(eq + 1), "--set");
}

void load_config_file(config& c, const std::string& path) {
  auto root = load_yaml_file(path, "config file");
  if (root.IsNull()) return;
  if (!root.IsMap()) throw input_error(path + ": top level must be a mapping of keys");
  try {
    flatten(root, "", c, path, 0);
  } catch (const YAML::Exception& e) {
    throw input_error(yaml_where(path, e.mark) + ": " + e.msg);
  }
}

void validate_config(const config& c) {
  auto check_type = [&](const cluster_config& cl, const char* name) {
    if (!c.gpu_speed.count(cl.gpu_type))
      throw input_error(std::string("config: cluster.") + name + ".gpu_type '" + cl.gpu_type +
                        "' has no gpu_speed." + cl.gpu_type + " entry");
  };
  check_type(c.training, "training");
  check_type(c.inference, "inference");
  if (c.reclaim_method == "exact" && c.inference.servers > max_exact_reclaim_servers)
    throw input_error(fmt::format("config: scheduler.reclaim=exact takes at most {} inference servers "
                                  "(cluster.inference.servers={}); use greedy",
                                  max_exact_reclaim_servers, c.inference.servers));
  long quotas = 0;
  for (auto& [name, t] : c.tenants) quotas += std::max(0L, t.quota);
  const long training_gpus = static_cast<long>(c.training.servers) * c.training.gpus_per_server;
  if (quotas > training_gpus)
    throw input_error(fmt::format("config: tenants.*.quota: quotas sum to {} GPUs, more than the training servers' {}",
                                  quotas, training_gpus));
  if (c.training.servers == 0 && c.inference.servers == 0)
    throw input_error("config: the cluster has no servers");
}

std::vector<std::string> config_key_names() {
  std::vector<std::string> out;
  for (auto& kv : setters()) out.push_back(kv.first);
  out.push_back(std::string(gpu_speed_prefix) + "<TYPE>");
  for (auto field : {"quota", "weight", "borrow", "lend", "users", "max_priority"}) out.push_back(std::string(tenants_prefix) + "<NAME>." + field);
  return out;
}

} // namespace aryl
