#include "runtime/inputs/config.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <stdexcept>

#include "runtime/inputs/config_key_special.hpp"
#include "runtime/inputs/config_keys.hpp"
#include "runtime/inputs/yaml_file.hpp"
#include "solvers/input_error.hpp"
#include "solvers/reclaim.hpp"

namespace aryl {
namespace {

constexpr const char* tenants_prefix = "tenants.";

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
    if (auto* k = find_config_key(key)) return k->set(c, key, value);
    // A tenant's key of a field no tenant has: its name is checked first, as a known field's.
    if (auto parts = tenant_key_of(key)) {
      check_tenant_name(parts->name);
      throw std::invalid_argument("unknown tenant setting '" + parts->field + "' (" + tenant_field_list() + ")");
    }
  } catch (const std::invalid_argument& e) {
    throw input_error(where + ": " + key + ": " + e.what());
  }
  throw input_error(where + ": unknown config key '" + key + "'");
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
  for (auto& k : config_keys()) out.push_back(k.name);
  return out;
}

} // namespace aryl
