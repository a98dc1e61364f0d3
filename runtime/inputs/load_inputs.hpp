#pragma once
/// Turns a config into run inputs: the training jobs (trace or synthetic, with elastic and
/// misprediction attributes drawn from the seed) and the inference demand.
#include "runtime/sim/driver.hpp"

namespace aryl {

/// Throws input_error naming the file and line of any bad input.
run_inputs load_inputs(const config& c, std::string* note = nullptr);

} // namespace aryl
