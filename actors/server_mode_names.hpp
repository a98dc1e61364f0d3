#pragma once
/// A server's mode by name, as `status`, /metrics, the journal and the scheduler's dump show it.
#include <array>
#include <cstddef>
#include <string_view>

#include "solvers/cluster_ledger.hpp"

namespace aryl {

inline constexpr std::array<std::string_view, 6> server_mode_names{"training", "serving", "loaned",
                                                                   "reclaiming", "down", "cordoned"};

constexpr std::string_view to_string(server_mode m) { return server_mode_names[static_cast<size_t>(m)]; }

} // namespace aryl
