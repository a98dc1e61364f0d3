#pragma once
/// A run's effective settings as data, written beside its outputs (config.json) so that what
/// reads the outputs (scripts/results_table.py) takes the parameters from the run itself.
#include <string>

#include "runtime/inputs/config.hpp"

namespace aryl {

/// Every setting of `c` as one flat JSON object keyed by config key (the names `--set` takes,
/// `gpu_speed.<TYPE>` per type); booleans, numbers and strings as JSON values,
/// `live.worker_command` as one space-separated string. Setting each key to its value on a
/// default config gives back `c`. A new config key must be added here too
/// (tests/e2e/test_fidelity_metrics.cpp checks that every key is).
std::string effective_config_json(const config& c);

/// Writes effective_config_json(c) to `path`; throws input_error naming the path on failure.
void write_effective_config(const config& c, const std::string& path);

} // namespace aryl
