#include "runtime/inputs/config_key_special.hpp"

#include <algorithm>
#include <sstream>

#include "runtime/inputs/config_key_kinds.hpp"
#include "runtime/inputs/user_name.hpp"
#include "solvers/policy.hpp"

namespace aryl {

using namespace config_kinds;
#define F ARYL_CONFIG_FIELD

config_key policy_key() {
  std::string names;
  for (auto& p : all_policies()) names += (names.empty() ? "" : ", ") + p.name;
  auto k = key_of("policy", "choice", names,
                  {"", "rigid fifo, sjf, srtf, las; baseline (SJF, no loaning, no elasticity); loan-only, "
                       "elastic-only, aryl (both) (docs/baselines.md)"});
  k.flag = "--policy";
  k.set = [](config& c, const std::string&, const std::string& v) {
    if (!find_policy(v)) {
      std::string known;
      for (auto& p : all_policies()) known += (known.empty() ? "" : "|") + p.name;
      bad_value("unknown policy '" + v + "' (known: " + known + ")");
    }
    c.policy = v;
  };
  shown_as(k, F(policy), [](const std::string& v) { return config_value{v}; });
  return k;
}

config_key seed_key() {
  auto k = key_of("seed", "integer", ">= 0 (int64)",
                  {"", "seeds every random draw: the synthetic workload, job attributes, checkpoint times, faults"});
  k.flag = "--seed";
  k.set = [](config& c, const std::string&, const std::string& v) {
    auto s = to_int(v);
    if (s < 0) bad_value("must be >= 0");
    c.seed = static_cast<uint64_t>(s);
  };
  shown_as(k, F(seed), [](uint64_t v) { return config_value{v}; });
  return k;
}

config_key backfill_key() {
  auto k = key_of("scheduler.backfill", "boolean", "auto, true, false",
                  {"", "a queued job that finds no room does not stop the queue: later jobs may start; auto: on for "
                       "aryl, loan-only and elastic-only (docs/preemption.md, \"Backfill\")"});
  k.default_text = "auto";
  k.set = [](config& c, const std::string&, const std::string& v) {
    if (v == "auto") c.scheduler.backfill.reset();
    else if (auto b = parse_bool(v)) c.scheduler.backfill = *b;
    else bad_value("'" + v + "' is not auto, true or false");
  };
  // What the run does: auto resolved by the policy.
  k.effective = [](const config& c, const config_emit& emit) {
    const policy_spec* policy = find_policy(c.policy);
    emit("scheduler.backfill", policy ? backfills(*policy, c.scheduler) : c.scheduler.backfill.value_or(false));
  };
  return k;
}

config_key las_threshold_key() {
  auto k = key_of("scheduler.las_threshold_gpu_s", "number", range_text(0, max_gpu_seconds),
                  {"GPU-s", "las: attained GPU-seconds that move a job to the lower queue"});
  k.bounds = std::pair{0.0, max_gpu_seconds};
  k.set = [](config& c, const std::string&, const std::string& v) {
    c.scheduler.las_thresholds = {within(to_double(v), 0.0, max_gpu_seconds)};
  };
  // The key sets one threshold; a config holding more came from code, not from keys.
  k.effective = [](const config& c, const config_emit& emit) {
    if (!c.scheduler.las_thresholds.empty()) emit("scheduler.las_threshold_gpu_s", c.scheduler.las_thresholds.front());
  };
  return k;
}

config_key worker_command_key() {
  auto k = key_of("live.worker_command", "text", "words",
                  {"", "serve: argv of every job's workers, split on spaces; empty: the agents' emulated worker"});
  k.set = [](config& c, const std::string&, const std::string& v) {
    c.worker_command.clear();
    std::istringstream words(v);
    for (std::string w; words >> w;) c.worker_command.push_back(w);
  };
  shown_as(k, F(worker_command), [](const std::vector<std::string>& words) {
    std::string argv;
    for (auto& w : words) argv += (argv.empty() ? "" : " ") + w;
    return config_value{argv};
  });
  return k;
}

config_key rdzv_endpoint_key() {
  auto k = key_of("live.rdzv_endpoint", "text", "`HOST:PORT`",
                  {"", "serve: the c10d store torchrun jobs' nodes meet at (scripts/rdzv_store.py); empty: each job's "
                       "first server hosts it (docs/live.md, \"Elastic jobs through torchrun\")"});
  // A name or IPv4 address (an IPv6 one in brackets), a colon and a port.
  k.set = [](config& c, const std::string&, const std::string& v) {
    if (!v.empty()) {
      auto colon = v.rfind(':');
      if (colon == std::string::npos || colon == 0 || v.find_first_of(" \t,=") != std::string::npos)
        bad_value("'" + v + "' is not HOST:PORT");
      within<int64_t>(to_int(v.substr(colon + 1)), 1, 65535);
    }
    c.rdzv_endpoint = v;
  };
  shown_as(k, F(rdzv_endpoint), [](const std::string& v) { return config_value{v}; });
  return k;
}

config_key gpu_speed_key() {
  static const std::string prefix = "gpu_speed.";
  auto k = key_of("gpu_speed.<TYPE>", "number", range_text(min_gpu_speed, max_gpu_speed),
                  {"", "one GPU's throughput relative to the others' (docs/throughput_model.md); a key per type"});
  k.bounds = std::pair{min_gpu_speed, max_gpu_speed};
  k.matches = [](const std::string& key) { return key.rfind(prefix, 0) == 0 && key.size() > prefix.size(); };
  k.set = [](config& c, const std::string& key, const std::string& v) {
    c.gpu_speed[key.substr(prefix.size())] = within(to_double(v), min_gpu_speed, max_gpu_speed);
  };
  k.effective = [](const config& c, const config_emit& emit) {
    for (auto& [type, speed] : c.gpu_speed) emit(prefix + type, speed);
  };
  return k;
}

std::optional<tenant_key_parts> tenant_key_of(const std::string& key) {
  static const std::string prefix = "tenants.";
  if (key.rfind(prefix, 0) != 0) return std::nullopt;
  const std::string rest = key.substr(prefix.size());
  auto dot = rest.rfind('.');
  if (dot == std::string::npos) return std::nullopt;
  return tenant_key_parts{rest.substr(0, dot), rest.substr(dot + 1)};
}

void check_tenant_name(const std::string& name) {
  if (name.empty() || name.find('.') != std::string::npos) bad_value("a tenant's name is one plain word");
}

namespace {

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

using tenant_setter = std::function<void(tenant_config&, const std::string&)>;
using tenant_getter = std::function<std::optional<config_value>(const tenant_config&)>;

/// How the effective config shows one field of a tenant: nothing while it is unset.
struct tenant_field {
  std::string field;
  tenant_getter get;
};

const std::vector<tenant_field>& tenant_fields() {
  using value = std::optional<config_value>;
  static const std::vector<tenant_field> fields{
      {"quota", [](const tenant_config& t) { return t.quota >= 0 ? value{int64_t{t.quota}} : value{}; }},
      {"weight", [](const tenant_config& t) { return t.weight > 0 ? value{t.weight} : value{}; }},
      {"borrow", [](const tenant_config& t) { return t.borrow >= 0 ? value{t.borrow == 1} : value{}; }},
      {"lend", [](const tenant_config& t) { return t.lend >= 0 ? value{t.lend == 1} : value{}; }},
      {"users", [](const tenant_config& t) { return !t.users.empty() ? value{t.users} : value{}; }},
      {"max_priority",
       [](const tenant_config& t) { return t.max_priority ? value{int64_t{*t.max_priority}} : value{}; }},
  };
  return fields;
}

config_key tenant_key(const std::string& field, std::string type, std::string range, about a, std::string default_text,
                      tenant_setter set) {
  auto k = key_of("tenants.<NAME>." + field, std::move(type), std::move(range), std::move(a));
  k.default_text = std::move(default_text);
  k.matches = [field](const std::string& key) {
    auto parts = tenant_key_of(key);
    return parts && parts->field == field;
  };
  k.set = [set](config& c, const std::string& key, const std::string& v) {
    auto parts = tenant_key_of(key);
    if (!parts) bad_value("not a tenant's key");
    check_tenant_name(parts->name);
    tenant_config t = c.tenants.count(parts->name) ? c.tenants.at(parts->name) : tenant_config{};
    set(t, v);
    c.tenants[parts->name] = t;
  };
  // A tenant's keys stay together in the effective config: the first field's entry shows
  // every field of every tenant, the others none.
  if (field == tenant_fields().front().field)
    k.effective = [](const config& c, const config_emit& emit) {
      for (auto& [name, t] : c.tenants)
        for (auto& f : tenant_fields())
          if (auto v = f.get(t)) emit("tenants." + name + "." + f.field, std::move(*v));
    };
  else
    k.effective = [](const config&, const config_emit&) {};
  return k;
}

} // namespace

std::string tenant_field_list() {
  std::string list;
  for (auto& f : tenant_fields()) list += (list.empty() ? "" : ", ") + f.field;
  return list;
}

std::vector<config_key> tenant_keys() {
  auto k = std::vector<config_key>{
      tenant_key("quota", "integer", "[0, 1e8]",
                 {"GPUs", "training GPUs guaranteed to the tenant's base demand; all quotas together at most the "
                          "training GPUs (docs/tenants.md, \"Tenants and quotas\")"},
                 "none", [](tenant_config& t, const std::string& v) {
                   t.quota = static_cast<long>(within<int64_t>(to_int(v), 0, 100'000'000));
                 }),
      tenant_key("weight", "number", "[1e-6, 1e6]",
                 {"", "fair share; a tenant with a weight and no quota gets that share of the GPUs no quota claims"},
                 "the quota's share, else 1",
                 [](tenant_config& t, const std::string& v) { t.weight = within(to_double(v), 1e-6, 1e6); }),
      tenant_key("borrow", "boolean", "true, false", {"", "tenants.borrow for this tenant"}, "`tenants.borrow`",
                 [](tenant_config& t, const std::string& v) { t.borrow = to_bool(v) ? 1 : 0; }),
      tenant_key("lend", "boolean", "true, false", {"", "tenants.lend for this tenant"}, "`tenants.lend`",
                 [](tenant_config& t, const std::string& v) { t.lend = to_bool(v) ? 1 : 0; }),
      tenant_key("users", "text", "user names",
                 {"", "serve --identities: who may submit for it; a YAML list or names separated by commas "
                      "(docs/security.md, \"Tenants bound to users\")"},
                 "none", [](tenant_config& t, const std::string& v) { t.users = user_list(v); }),
      tenant_key("max_priority", "integer", "[-1e6, 1e6]",
                 {"", "the highest --priority the tenant's jobs may ask for, once users are bound"}, "any",
                 [](tenant_config& t, const std::string& v) {
                   t.max_priority = static_cast<int>(within<int64_t>(to_int(v), -1'000'000, 1'000'000));
                 }),
  };
  k[0].bounds = std::pair{0.0, 1e8};
  k[1].bounds = std::pair{1e-6, 1e6};
  k[5].bounds = std::pair{-1e6, 1e6};
  return k;
}

std::vector<config_key> random_fault_keys() {
  auto per_day = [](std::string name, auto field, double hi, std::string description) {
    return number("faults.random." + name, field, 0, hi, {"per day", std::move(description)});
  };
  auto lasting = [](std::string name, auto field, std::string description) {
    return seconds("faults.random." + name, field, 1, std::move(description));
  };
  return {
      per_day("server_crash_per_day", F(random_faults.server_crash_per_day), 1e4,
              "crashes per training server (seeded, as every faults.random key; simulated time only)"),
      number("faults.random.mean_down_s", F(random_faults.mean_down_s), 1, max_input_seconds,
             {"s", "a crashed server is back after an exponential time of this mean ..."}),
      share("faults.random.permanent_fraction", F(random_faults.permanent_fraction), "... or never, with this probability"),
      boolean("faults.random.inference_servers", F(random_faults.inference_servers),
              "server crashes, disconnects and bad links strike inference servers (i0..) too, at the per-server rates"),
      per_day("worker_crash_per_day", F(random_faults.worker_crash_per_day), 1e6,
              "over the cluster: one worker of a random job dies"),
      per_day("surge_per_day", F(random_faults.surge_per_day), 1e4, "inference demand steps to a random level"),
      per_day("disconnect_per_day", F(random_faults.disconnect_per_day), 1e4,
              "per training server: its agent unreachable, its workers running ..."),
      lasting("mean_disconnect_s", F(random_faults.mean_disconnect_s), "... for an exponential time of this mean"),
      per_day("link_per_day", F(random_faults.link_per_day), 1e4,
              "per training server: its heartbeats delayed and lost ..."),
      lasting("mean_link_s", F(random_faults.mean_link_s),
              "... for an exponential time of this mean (at most 1e7 heartbeats when link_loss is in (0, 1)) ..."),
      seconds("faults.random.link_delay_s", F(random_faults.link_delay_s), 0, "... each this late ..."),
      share("faults.random.link_loss", F(random_faults.link_loss), "... or lost with this probability"),
      per_day("checkpoint_fail_per_day", F(random_faults.checkpoint_fail_per_day), 1e6,
              "over the cluster: a random job's next checkpoint fails"),
      per_day("checkpoint_slow_per_day", F(random_faults.checkpoint_slow_per_day), 1e6,
              "over the cluster: a random job's next checkpoint is slower ..."),
      lasting("mean_checkpoint_slow_s", F(random_faults.mean_checkpoint_slow_s), "... by an exponential time of this mean"),
      per_day("scheduler_crash_per_day", F(random_faults.scheduler_crash_per_day), 1e4,
              "the scheduler crashes: it decides nothing and messages to it wait ..."),
      lasting("mean_scheduler_down_s", F(random_faults.mean_scheduler_down_s), "... for an exponential time of this mean"),
  };
}

#undef F

} // namespace aryl
