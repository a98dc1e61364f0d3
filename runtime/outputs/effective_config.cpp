#include "runtime/outputs/effective_config.hpp"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "runtime/inputs/config_keys.hpp"
#include "solvers/input_error.hpp"

namespace aryl {

std::string effective_config_json(const config& c) {
  nlohmann::ordered_json j;
  const config_emit emit = [&j](const std::string& key, config_value value) {
    std::visit([&](auto& v) { j[key] = std::move(v); }, value);
  };
  for (auto& k : config_keys()) k.effective(c, emit);
  return j.dump(2);
}

void write_effective_config(const config& c, const std::string& path) {
  std::ofstream out(path);
  out << effective_config_json(c) << '\n';
  out.close();
  if (!out) throw input_error(path + ": cannot write: " + std::strerror(errno));
}

} // namespace aryl
