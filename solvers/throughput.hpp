#pragma once
/// Throughput model of a data-parallel training job (docs/throughput_model.md,
/// docs/throughput_model.md). speed(w, s, type) = w * type_speed * eff(w) * loc(s) for w
/// workers spanning s servers; eff from a table or a power law, loc(1) = 1 and
/// loc(s >= 2) = cross_server_eff.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

namespace aryl {

/// The cross-server efficiency measured in Pollux's T4 profiles (4 GPUs per node, Ethernet):
/// median over six models of t(one node) / t(two nodes) at equal GPUs and per-GPU batch.
/// Derivation and the 8-GPU-server figures in docs/throughput_model.md, "Locality".
inline constexpr double profiled_cross_server_eff = 0.66;

struct throughput_model {
  /// eff(w) = w^eff_exponent when eff_table is empty (default: mildly sublinear).
  double eff_exponent = -0.05;
  /// eff_table[w-1] = efficiency at w workers; past its end the last entry holds.
  std::vector<double> eff_table;
  /// (*power_cache)[w] = w^eff_exponent for small w: the same values as std::pow, without its
  /// cost in every scheduling round. Shared, so copies of the model stay cheap.
  std::shared_ptr<const std::vector<double>> power_cache;
  /// Per-worker efficiency multiplier of a job whose workers span two or more servers, in
  /// (0, 1]. A step, not a curve: the profiles show the cost at the first server boundary
  /// and none added by a third or fourth server. 1 = no cross-server cost (the model before
  /// locality, exactly).
  double cross_server_eff = 1.0;
};

/// The power-law model eff(w) = w^exponent, with its cache filled up to `cached` workers.
throughput_model power_law_model(double exponent, int cached = 1024);

/// Per-worker efficiency at `workers` (>= 1) workers, all on one server.
/// (Inline, with the two below: rounds value every size of every elastic job with them.)
inline double efficiency(const throughput_model& m, int workers) {
  if (workers <= 0) return 0;
  if (!m.eff_table.empty()) {
    auto i = std::min<size_t>(static_cast<size_t>(workers) - 1, m.eff_table.size() - 1);
    return m.eff_table[i];
  }
  if (m.power_cache && static_cast<size_t>(workers) < m.power_cache->size())
    return (*m.power_cache)[static_cast<size_t>(workers)];
  return std::pow(static_cast<double>(workers), m.eff_exponent);
}

/// Per-worker efficiency multiplier for workers spread over `servers` servers: 1 for one
/// server (or none), cross_server_eff for more.
inline double locality_efficiency(const throughput_model& m, int servers) {
  return servers >= 2 ? m.cross_server_eff : 1.0;
}

/// Whether a worker's share of the work never rises with more workers or more servers: a power
/// law that does not rise, and a cross-server factor of at most one (a table is not checked).
inline bool falling_share(const throughput_model& m) {
  return m.eff_table.empty() && m.eff_exponent <= 0 && m.cross_server_eff <= 1;
}

/// Work units done per second by `workers` workers spanning `servers` servers. One work
/// unit is one second of the job running at its `requested` workers on speed-1.0 GPUs of
/// one server, so a trace duration is the work in units, and a job whose requested
/// workers must span servers runs slower than its duration says. Returns 0 when `workers`
/// is 0.
inline double work_rate(const throughput_model& m, int requested, int workers, int servers, double type_speed);

/// work_rate's denominator: a job's rate at its `requested` (>= 1) workers on one server, per
/// unit speed. Rounds that rate many sizes of one job take it once (work_rate_at).
inline double requested_base(const throughput_model& m, int requested) {
  return requested * efficiency(m, requested);
}

/// work_rate with its requested_base given: the same arithmetic, the same value.
inline double work_rate_at(const throughput_model& m, double requested_base, int workers, int servers,
                           double type_speed) {
  if (workers <= 0) return 0;
  return type_speed * workers * efficiency(m, workers) / requested_base * locality_efficiency(m, servers);
}

inline double work_rate(const throughput_model& m, int requested, int workers, int servers, double type_speed) {
  if (requested <= 0) return 0;
  return work_rate_at(m, requested_base(m, requested), workers, servers, type_speed);
}

} // namespace aryl
