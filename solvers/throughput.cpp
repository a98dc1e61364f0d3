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
  // pow dominates a scheduling round otherwise; a table per exponent gives the same values.
  constexpr int cached = 1024;
  thread_local double table_exponent = std::nan("");
  thread_local std::vector<double> table;
  if (workers > cached) return std::pow(static_cast<double>(workers), m.eff_exponent);
  if (!(table_exponent == m.eff_exponent)) {
    table.resize(cached + 1);
    for (int w = 1; w <= cached; ++w) table[static_cast<size_t>(w)] = std::pow(static_cast<double>(w), m.eff_exponent);
    table_exponent = m.eff_exponent;
  }
  return table[static_cast<size_t>(workers)];
}

double work_rate(const throughput_model& m, int requested, int workers, double type_speed) {
  if (workers <= 0 || requested <= 0) return 0;
  double base = requested * efficiency(m, requested);
  return type_speed * workers * efficiency(m, workers) / base;
}

} // namespace aryl
