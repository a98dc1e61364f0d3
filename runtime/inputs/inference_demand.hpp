#pragma once
/// Inference-cluster demand over time (servers needed): CSV and ServeGen readers and a synthetic
/// diurnal generator (docs/workload.md).
#include <cstdint>
#include <string>
#include <vector>

#include "actors/demand_point.hpp"

namespace aryl {

/// Reads `t_s,servers_needed` (or `t_s,demand`; header required, other columns ignored).
/// t_s: seconds >= 0, strictly increasing; servers_needed: whole number >= 0.
/// Throws input_error "path:LINE: column 'c': 'v' ..." on the first bad row, or for a file
/// without data rows.
std::vector<demand_point> read_demand_csv(const std::string& path);

/// Reads ServeGen request rates and maps them to servers. `path` is either a derived total-rate
/// file (header `window_start_s,total_rate_rps`), one raw per-client file (no header:
/// `window_start_s,rate,cv,dist,p1,p2`), or a directory whose `chunk-*-trace.csv` files are
/// summed per window. With peak = the largest rate, per_server_rps = peak /
/// (peak_utilisation * inference_servers) and servers_needed = ceil(rate / per_server_rps), so
/// the peak needs peak_utilisation * inference_servers servers (rounded up). One point per
/// window, t = window start. All-zero rates give zero demand.
/// Requires inference_servers >= 1 and 0 < peak_utilisation <= 1 (input_error otherwise).
std::vector<demand_point> read_servegen_demand(const std::string& path, int inference_servers,
                                               double peak_utilisation);

/// A seeded diurnal demand for when no trace is given: points every `interval_s` seconds over
/// `days` days from t = 0 (00:00), level = servers * (0.65 + 0.25 cos(2 pi (h - 20) / 24))
/// (peak 0.9 of the servers at 20:00, trough 0.4 at 08:00, h = hour of day) plus AR(1) noise
/// of standard deviation 0.03 * servers, rounded and clamped to [0, servers].
/// Deterministic for a seed. Throws input_error unless servers >= 1, days > 0, interval_s >= 1.
std::vector<demand_point> synthetic_demand(uint64_t seed, int inference_servers, double days,
                                           int64_t interval_s);

} // namespace aryl
