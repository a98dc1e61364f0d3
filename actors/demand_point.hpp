#pragma once
/// Inference demand as the inference load actor plays it: servers needed over time. The
/// readers and the synthetic generator are in runtime/inputs/inference_demand.hpp.
#include "solvers/sim_time.hpp"

namespace aryl {

/// One step of the demand function: `servers_needed` holds from `t` until the next point's t
/// (the last point holds for ever). Sequences are strictly increasing in t.
struct demand_point {
  sim_time t;
  int servers_needed = 0;
};

} // namespace aryl
