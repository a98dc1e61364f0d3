#include "solvers/throughput.hpp"

#include <algorithm>
#include <cmath>

namespace aryl {

double efficiency(const throughput_model& m, int workers) {
  if (workers <= 0) return 0;
  if (!m.eff_table.empty()) {
    auto i = std::min<size_t>(static_cast<size_t>(workers) - 1, m.eff_table.size() - 1);
    return m.eff_table[i];
  }
  return std::pow(static_cast<double>(workers), m.eff_exponent);
}

double work_rate(const throughput_model& m, int requested, int workers, double type_speed) {
  if (workers <= 0 || requested <= 0) return 0;
  double base = requested * efficiency(m, requested);
  return type_speed * workers * efficiency(m, workers) / base;
}

} // namespace aryl
