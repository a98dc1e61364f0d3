#pragma once
/// The table's entries that are not of one plain kind (config_key_kinds.hpp): keys checked
/// their own way, and the families of keys named by a GPU type or a tenant.
#include <optional>
#include <string>
#include <vector>

#include "runtime/inputs/config_keys.hpp"

namespace aryl {

config_key policy_key();
config_key seed_key();
config_key backfill_key();
config_key las_threshold_key();
config_key worker_command_key();
config_key rdzv_endpoint_key();
/// `gpu_speed.<TYPE>`: one key per GPU type.
config_key gpu_speed_key();
/// `tenants.<NAME>.<field>`, one entry per field.
std::vector<config_key> tenant_keys();
std::vector<config_key> random_fault_keys();

/// `key` as `tenants.<NAME>.<field>`: its name and field, or nothing for a key of another
/// shape (a plain tenants.* key).
struct tenant_key_parts {
  std::string name, field;
};
std::optional<tenant_key_parts> tenant_key_of(const std::string& key);

/// Throws std::invalid_argument unless `name` is one plain word (a tenant's name).
void check_tenant_name(const std::string& name);

/// The fields a tenant takes, for the error that names an unknown one.
std::string tenant_field_list();

} // namespace aryl
