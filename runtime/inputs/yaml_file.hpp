#pragma once
/// Reading a YAML (or JSON) input file with errors that name the file and line: the config,
/// fault plans, `aryl submit --file`.
#include <yaml-cpp/yaml.h>

#include <string>

namespace aryl {

/// "FILE:LINE" of a mark, or FILE when the mark has no line.
std::string yaml_where(const std::string& path, const YAML::Mark& m);

/// The parsed file. Throws input_error naming the file (and the line) for a directory, a file
/// that cannot be opened ("cannot open WHAT"), one that does not parse or holds a second
/// document, a key given twice in a map (naming the key), nesting deeper than the limits of
/// input_limits.hpp.
YAML::Node load_yaml_file(const std::string& path, const std::string& what);

/// The YAML `text`, read from `path` (which names it in errors), checked as load_yaml_file
/// checks a file's: for callers that read the file themselves (read_small_file).
YAML::Node parse_yaml(const std::string& path, const std::string& text, const std::string& what);

} // namespace aryl
