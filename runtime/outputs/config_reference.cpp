#include "runtime/outputs/config_reference.hpp"

#include <utility>
#include <vector>

#include "runtime/inputs/config_keys.hpp"

namespace aryl {
namespace {

std::string value_text(const config_value& value) {
  struct shown {
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(uint64_t u) const { return std::to_string(u); }
    std::string operator()(double d) const { return config_number_text(d); }
    std::string operator()(const std::string& s) const { return s.empty() ? "empty" : "`" + s + "`"; }
    std::string operator()(const std::vector<std::string>& list) const {
      std::string out;
      for (auto& s : list) out += (out.empty() ? "" : ", ") + s;
      return out.empty() ? "empty" : out;
    }
  };
  return std::visit(shown{}, value);
}

/// The built-in default: the default config's entry, or a family's entries by member.
std::string default_text(const config_key& k) {
  if (!k.default_text.empty()) return k.default_text;
  // Named: a temporary config here trips GCC 12's -Wmaybe-uninitialized.
  static const config defaults;
  std::vector<std::pair<std::string, config_value>> entries;
  k.effective(defaults, [&](const std::string& key, config_value v) { entries.emplace_back(key, std::move(v)); });
  if (entries.size() == 1 && entries.front().first == k.name) return value_text(entries.front().second);
  std::string out;
  const auto family = k.name.substr(0, k.name.find('<'));
  for (auto& [key, v] : entries) out += (out.empty() ? "" : ", ") + key.substr(family.size()) + " " + value_text(v);
  return out.empty() ? "none" : out;
}

std::string code(const std::string& s) { return s.empty() ? "" : "`" + s + "`"; }

} // namespace

std::string config_keys_markdown() {
  std::string out = "| key | flag | type | default | range | unit | description |\n|---|---|---|---|---|---|---|\n";
  for (auto& k : config_keys())
    out += "| " + code(k.name) + " | " + code(k.flag) + " | " + k.type + " | " + default_text(k) + " | " + k.range +
           " | " + k.unit + " | " + k.description + " |\n";
  return out;
}

} // namespace aryl
