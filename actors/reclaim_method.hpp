#pragma once
/// How the scheduler chooses the loaned servers a reclaim returns (scheduler.reclaim).
#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "actors/enum_names.hpp"
#include "solvers/input_error.hpp"

namespace aryl {

/// greedy: least preemption cost first, server by server (solvers/reclaim.hpp). exact: the
/// set of servers of least total cost, searched whole (small loaned pools only).
enum class reclaim_method { greedy, exact };

inline constexpr std::array<std::string_view, 2> reclaim_method_names{"greedy", "exact"};

constexpr std::string_view to_string(reclaim_method m) { return reclaim_method_names[static_cast<size_t>(m)]; }

/// The method named `name` (scheduler.reclaim's value); an input_error for any other name.
inline reclaim_method reclaim_method_named(std::string_view name) {
  if (auto m = enum_named<reclaim_method>(reclaim_method_names, name)) return *m;
  throw input_error("scheduler.reclaim: '" + std::string(name) + "' is not greedy or exact");
}

} // namespace aryl
