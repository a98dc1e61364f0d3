#pragma once
/// Converts between the actor runtime's clock and simulation time. The same actors run on
/// CAF's deterministic test clock (speedup 1: one virtual second per clock second, exact
/// integers) and on the wall clock (speedup X: X virtual seconds per real second).
#include <caf/actor_clock.hpp>

#include <algorithm>

#include "solvers/sim_time.hpp"

namespace aryl {

struct timebase {
  caf::actor_clock::time_point origin;
  double speedup = 1.0;

  sim_time at(caf::actor_clock::time_point t) const {
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t - origin).count();
    if (speedup == 1.0) return sim_time::from_us(ns / 1000);
    return sim_time::from_us(static_cast<int64_t>(static_cast<double>(ns) * speedup / 1000.0));
  }

  /// The clock span that lasts `d` of simulation time (never negative).
  caf::timespan span(sim_time d) const {
    int64_t us = std::clamp<int64_t>(d.us, 0, sim_time::horizon().us);
    if (speedup == 1.0) return caf::timespan{us * 1000};
    // Saturates below int64's range: a clock time point plus the span must not overflow.
    return caf::timespan{static_cast<int64_t>(std::min(static_cast<double>(us) * 1000.0 / speedup, 4e18))};
  }

  /// Now, for an actor: `tb.now(self)`.
  template <class Self>
  sim_time now(Self* self) const {
    return at(self->clock().now());
  }
};

} // namespace aryl
