#pragma once
/// The one percentile of every output (summary.json, the tables made from it): linear
/// interpolation between the closest ranks, numpy's default (`numpy.percentile(v, 100 * q)`,
/// method "linear"). A percentile between two samples lies between them, so one long wait in
/// eleven moves the p95: nearest-rank rounding down hid it.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace aryl {

/// The q-quantile (q in [0, 1]) of `v`, already sorted ascending: at position h = q x (n - 1),
/// the sample at floor(h) plus (h - floor(h)) of the step to the next one. 0 for no samples.
inline double sorted_percentile(const std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const double h = std::clamp(q, 0.0, 1.0) * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(h));
  if (lo + 1 >= v.size()) return v.back();
  return v[lo] + (h - static_cast<double>(lo)) * (v[lo + 1] - v[lo]);
}

/// The same of samples in any order (sorts a copy; several quantiles of the same samples sort
/// them once and ask sorted_percentile).
inline double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return sorted_percentile(v, q);
}

} // namespace aryl
