#include "runtime/inputs/user_name.hpp"

namespace aryl {

std::string user_name_problem(std::string_view name) {
  if (name.empty()) return "a user name is empty";
  const std::string quoted = "'" + std::string(name) + "'";
  if (name.size() > 32) return quoted + " is longer than 32 characters";
  if (name.front() == '-' || name.front() == '.') return quoted + " starts with '" + name.front() + "'";
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
      return quoted + " holds a character outside a-z 0-9 . _ - (a name is also a Unix user name)";
  return {};
}

} // namespace aryl
