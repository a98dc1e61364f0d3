#pragma once
/// Throughput model of a data-parallel training job (DESIGN.md section 1).
/// speed(w, type) = w * type_speed * eff(w); eff from a table or a power law.
#include <memory>
#include <vector>

namespace aryl {

struct throughput_model {
  /// eff(w) = w^eff_exponent when eff_table is empty (default: mildly sublinear).
  double eff_exponent = -0.05;
  /// eff_table[w-1] = efficiency at w workers; past its end the last entry holds.
  std::vector<double> eff_table;
  /// (*power_cache)[w] = w^eff_exponent for small w: the same values as std::pow, without its
  /// cost in every scheduling round. Shared, so copies of the model stay cheap.
  std::shared_ptr<const std::vector<double>> power_cache;
};

/// The power-law model eff(w) = w^exponent, with its cache filled up to `cached` workers.
throughput_model power_law_model(double exponent, int cached = 1024);

/// Per-worker efficiency at `workers` (>= 1) workers.
double efficiency(const throughput_model& m, int workers);

/// Work units done per second. One work unit is one second of the job running at its
/// `requested` workers on speed-1.0 GPUs, so a trace duration is the work in units.
/// Returns 0 when `workers` is 0.
double work_rate(const throughput_model& m, int requested, int workers, double type_speed);

} // namespace aryl
