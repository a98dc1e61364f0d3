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
  if (m.power_cache && static_cast<size_t>(workers) < m.power_cache->size())
    return (*m.power_cache)[static_cast<size_t>(workers)];
  return std::pow(static_cast<double>(workers), m.eff_exponent);
}

double locality_efficiency(const throughput_model& m, int servers) {
  return servers >= 2 ? m.cross_server_eff : 1.0;
}

throughput_model power_law_model(double exponent, int cached) {
  throughput_model m;
  m.eff_exponent = exponent;
  auto table = std::make_shared<std::vector<double>>(static_cast<size_t>(std::max(cached, 0)) + 1, 0.0);
  for (size_t w = 1; w < table->size(); ++w) (*table)[w] = std::pow(static_cast<double>(w), exponent);
  m.power_cache = std::move(table);
  return m;
}

double work_rate(const throughput_model& m, int requested, int workers, int servers, double type_speed) {
  if (workers <= 0 || requested <= 0) return 0;
  double base = requested * efficiency(m, requested);
  return type_speed * workers * efficiency(m, workers) / base * locality_efficiency(m, servers);
}

} // namespace aryl
