#pragma once
/// Error in user input (trace, config, command line). what() is one line naming the place,
/// e.g. "traces/a.csv:17: duration 'x' is not a number".
#include <stdexcept>
#include <string>

namespace aryl {

struct input_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

} // namespace aryl
