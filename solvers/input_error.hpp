#pragma once
/// Error in user input (trace, config, command line). what() is one line naming the place,
/// e.g. "traces/a.csv:17: duration 'x' is not a number": control characters in the message
/// (from a value, a key or a path) are escaped, so that no input can add a line to it.
#include <stdexcept>
#include <string>

#include "solvers/control_chars.hpp"

namespace aryl {

struct input_error : std::runtime_error {
  explicit input_error(const std::string& what) : std::runtime_error(escape_control(what)) {}
  explicit input_error(const char* what) : input_error(std::string(what)) {}
};

} // namespace aryl
