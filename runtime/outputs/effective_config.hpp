#pragma once
/// A run's effective settings as data, written beside its outputs (config.json) so that what
/// reads the outputs (scripts/results_table.py) takes the parameters from the run itself.
#include <string>

#include "runtime/inputs/config.hpp"

namespace aryl {

/// Every setting of `c` as one flat JSON object keyed by config key (the names `--set` takes,
/// `gpu_speed.<TYPE>` per type); booleans, numbers and strings as JSON values,
/// `live.worker_command` as one space-separated string; in the order of the table of config
/// keys (config_keys.hpp), whose entries give them. Setting each key to its value on a
/// default config gives back `c` (tests/e2e/test_fidelity_metrics.cpp).
std::string effective_config_json(const config& c);

/// Writes effective_config_json(c) to `path`; throws input_error naming the path on failure.
void write_effective_config(const config& c, const std::string& path);

} // namespace aryl
