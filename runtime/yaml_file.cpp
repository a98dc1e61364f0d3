#include "runtime/yaml_file.hpp"

#include <filesystem>

#include "runtime/input_error.hpp"

namespace aryl {

std::string yaml_where(const std::string& path, const YAML::Mark& m) {
  return m.is_null() ? path : path + ":" + std::to_string(m.line + 1);
}

YAML::Node load_yaml_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw input_error(path + ": is a directory, not a " + what);
  try {
    return YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw input_error(path + ": cannot open " + what);
  } catch (const YAML::Exception& e) {
    throw input_error(yaml_where(path, e.mark) + ": " + e.msg);
  }
}

} // namespace aryl
