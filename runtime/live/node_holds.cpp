#include "runtime/live/node_holds.hpp"

#include <fmt/format.h>

#include <set>

#include "solvers/control_chars.hpp"
#include "runtime/sim/driver.hpp"

namespace aryl::live {

std::vector<node_hold> take_holds(std::vector<std::pair<std::string, std::string>>& rows, const config& c,
                                  state_journal& journal, const std::string& path, std::ostream& log) {
  std::set<std::string> training;
  for (auto& m : cluster_machines(c))
    if (!m.inference) training.insert(m.name);
  std::vector<node_hold> holds;
  std::vector<std::pair<std::string, std::string>> loans;
  for (auto& [name, mode] : rows) {
    auto colon = mode.find(':');
    auto kind = mode.substr(0, colon);
    if (colon == std::string::npos || (kind != "cordon" && kind != "drain")) {
      loans.emplace_back(name, mode);
      continue;
    }
    auto reason = mode.substr(colon + 1);
    if (!training.count(name) || find_control(reason) != std::string::npos) {
      log << fmt::format("[serve] state {}: server '{}' held ({}) is {}: the hold is dropped\n", path,
                         escape_control(name), kind,
                         training.count(name) ? "given a reason that " + describe_control(reason)
                                              : std::string("not a training server of this cluster"));
      journal.put_server_mode(name, "up");
      continue;
    }
    log << fmt::format("[serve] state {}: server {} stays {}{}\n", path, name, kind == "cordon" ? "cordoned" : "drained",
                       reason.empty() ? "" : " (" + reason + ")");
    holds.push_back({name, kind, reason});
  }
  rows = std::move(loans);
  return holds;
}

} // namespace aryl::live
