#include "solvers/throughput.hpp"

#include <algorithm>
#include <cmath>

namespace aryl {

throughput_model power_law_model(double exponent, int cached) {
  throughput_model m;
  m.eff_exponent = exponent;
  auto table = std::make_shared<std::vector<double>>(static_cast<size_t>(std::max(cached, 0)) + 1, 0.0);
  for (size_t w = 1; w < table->size(); ++w) (*table)[w] = std::pow(static_cast<double>(w), exponent);
  m.power_cache = std::move(table);
  return m;
}

} // namespace aryl
