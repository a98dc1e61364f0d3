#include "solvers/heartbeats.hpp"

#include <algorithm>
#include <cmath>
#include <random>

namespace aryl {

double heartbeat_model::phase_s(int server) const { return std::fmod(server * 0.6180339887498949, 1.0) * period_s; }

double heartbeat_model::last_sent_s(int server, sim_time t) const {
  double phase = phase_s(server);
  return phase + std::floor((t.seconds() - phase) / period_s) * period_s;
}

sim_time heartbeat_model::loss_noticed(int server, sim_time t) const {
  return sim_time::from_seconds(last_sent_s(server, t) + missed * period_s);
}

std::vector<silence> link_silences(const heartbeat_model& h, int server, const link_window& w, uint64_t seed) {
  const double last = h.last_sent_s(server, w.from);  // arrived before the link went bad
  const double end = (w.from + w.length).seconds();
  const double p = h.period_s;
  // Heartbeats k = 1 .. n-1 after `last` are sent within the window, k = n is the first after.
  double n = std::max(1.0, std::ceil((end - last) / p));
  while (n > 1 && last + (n - 1) * p >= end) --n;
  while (last + n * p < end) ++n;
  std::vector<double> arrivals;
  if (w.loss <= 0) {
    // All arrive, delay_s late and a period apart: only the wait for the first can exceed
    // the grace (the first after the window, on time, comes at most a period after the last).
    arrivals.push_back(n > 1 ? last + p + w.delay_s : w.reconnects ? end : last + p);
  } else if (w.loss < 1) {
    std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ULL ^ (static_cast<uint64_t>(server) << 40) ^
                        static_cast<uint64_t>(w.from.us));
    std::uniform_real_distribution<double> u(0, 1);
    for (double k = 1; k < n; ++k)
      if (!(u(rng) < w.loss)) arrivals.push_back(last + k * p + w.delay_s);
  }
  // After the window: the agent's registration, or its next heartbeat on time.
  if (w.loss > 0) arrivals.push_back(w.reconnects ? end : last + n * p);
  std::sort(arrivals.begin(), arrivals.end());
  std::vector<silence> out;
  double prev = last;
  const auto grace = sim_time::from_seconds(h.grace_s());
  for (double a : arrivals) {
    // In whole microseconds, as the clock counts: heartbeats a grace apart are not a silence.
    if (sim_time::from_seconds(a) - sim_time::from_seconds(prev) > grace) {
      silence s{sim_time::from_seconds(prev + h.grace_s()), sim_time::from_seconds(a)};
      if (w.reconnects && a == end) s.heard = w.from + w.length;  // exactly when the plan says
      out.push_back(s);
    }
    prev = std::max(prev, a);
  }
  return out;
}

} // namespace aryl
