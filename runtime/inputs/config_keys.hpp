#pragma once
/// The one table of config keys (config_keys.cpp): each key's name, type, range, unit and
/// description beside how it is parsed and how the effective config shows it. Parsing
/// (set_config_key), the effective config (config.json) and docs/config.md's table
/// (`aryl config --markdown`) are all read from it; defaults are config's own initialisers.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "runtime/inputs/config.hpp"

namespace aryl {

/// A key's value as the effective config holds it: a JSON boolean, number, string or list.
using config_value = std::variant<bool, int64_t, uint64_t, double, std::string, std::vector<std::string>>;

/// Receives one effective entry: the key as `--set` takes it and its value.
using config_emit = std::function<void(const std::string& key, config_value value)>;

struct config_key {
  /// Dotted, as `--set` takes it; a family names its part in capitals: `gpu_speed.<TYPE>`,
  /// `tenants.<NAME>.quota`.
  std::string name;
  std::string type;         ///< boolean | number | integer | choice | text
  std::string range;        ///< the values it takes, as the docs state them
  std::string unit;         ///< s, GPUs, per day, ... (empty: none)
  std::string description;  ///< one line
  std::string flag;         ///< the simulate/serve flag that sets it too (empty: none)
  /// What the docs give as its default when it is not the default config's value as the
  /// effective config shows it (auto, a family's).
  std::string default_text;
  /// A numeric key's range ends, checked on parsing (the tests set both ends and beyond).
  std::optional<std::pair<double, double>> bounds;
  /// A family: whether `key` is one of its keys (empty: `name` alone is this key).
  std::function<bool(const std::string& key)> matches;
  /// Sets the key in `c` from text; throws std::invalid_argument saying what is wrong.
  std::function<void(config& c, const std::string& key, const std::string& value)> set;
  /// Its entries of `c`'s effective config: one, or a family's (none, or one per member).
  std::function<void(const config& c, const config_emit& emit)> effective;
};

/// Every key, in the effective config's order (which docs/config.md's table follows).
const std::vector<config_key>& config_keys();

/// The key that sets `key` (a family's for its members), or null.
const config_key* find_config_key(const std::string& key);

/// A number as the docs print a value or a bound: 1e9 rather than 1000000000, 31536000 and
/// 0.35 as they are.
std::string config_number_text(double v);

} // namespace aryl
