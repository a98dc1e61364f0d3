#pragma once
/// `aryl serve --state`: the servers an operator cordoned or drained, as the journal keeps them
/// in its servers table beside the loans ("cordon:REASON", "drain:REASON").
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "actors/node_orders.hpp"
#include "runtime/inputs/config.hpp"
#include "runtime/live/state_journal.hpp"

namespace aryl::live {

/// Takes the holds out of the journal's server rows (`rows` keeps the loans). A hold is an
/// input like any other: one on a machine that is not a training server of this cluster is
/// dropped, its row deleted, with a line naming the file (`path`) and the server.
std::vector<node_hold> take_holds(std::vector<std::pair<std::string, std::string>>& rows, const config& c,
                                  state_journal& journal, const std::string& path, std::ostream& log);

} // namespace aryl::live
