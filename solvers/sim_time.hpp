#pragma once
/// Simulation time: an integer count of microseconds since time 0 of the run. Vocabulary of the
/// solvers and of everything above them (solvers include nothing from runtime/).
/// Integer so that ordering is exact; ties are broken by the actor runtime's insertion order.
#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>

namespace aryl {

struct sim_time {
  int64_t us = 0;

  static constexpr sim_time from_us(int64_t v) { return sim_time{v}; }
  /// The latest instant a run may reach, about 127 years. Far below int64's range so that
  /// converting it to the clock's nanoseconds, or adding two spans, cannot overflow.
  static constexpr sim_time horizon() { return sim_time{4'000'000'000'000'000}; }
  /// Rounds to the nearest microsecond; saturates at +-horizon (NaN gives the horizon).
  static sim_time from_seconds(double s) {
    constexpr double limit = 4e9;
    if (!(s < limit)) return horizon();
    if (s < -limit) return sim_time{-horizon().us};
    return sim_time{static_cast<int64_t>(std::llround(s * 1e6))};
  }
  static constexpr sim_time max() { return sim_time{std::numeric_limits<int64_t>::max()}; }
  double seconds() const { return static_cast<double>(us) / 1e6; }

  friend constexpr auto operator<=>(sim_time, sim_time) = default;
  friend constexpr sim_time operator+(sim_time a, sim_time b) { return sim_time{a.us + b.us}; }
  friend constexpr sim_time operator-(sim_time a, sim_time b) { return sim_time{a.us - b.us}; }
};

} // namespace aryl
