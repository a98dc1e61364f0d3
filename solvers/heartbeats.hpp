#pragma once
/// Loss detection by heartbeats in simulated time, as arithmetic rather than messages: each
/// training server's agent heartbeats every `period_s` at its own phase, and the scheduler
/// reports a server lost once `missed` periods pass without one arriving (the grace). Free of
/// CAF; the scheduler actor schedules what these functions predict.
#include <cstdint>
#include <vector>

#include "solvers/sim_time.hpp"

namespace aryl {

struct heartbeat_model {
  double period_s = 10;
  int missed = 3;

  double grace_s() const { return missed * period_s; }
  /// The server's heartbeats are sent at phase + k period_s (k integer).
  double phase_s(int server) const;
  /// The last heartbeat the server sent at or before `t`.
  double last_sent_s(int server, sim_time t) const;
  /// When an agent that falls silent at `t` is noticed lost: its last heartbeat plus the grace.
  sim_time loss_noticed(int server, sim_time t) const;
};

/// A stretch in which nothing reaches the scheduler from an agent for longer than the grace:
/// it reports the server lost at `noticed` and hears from the agent again at `heard`.
struct silence {
  sim_time noticed;
  sim_time heard;
};

/// A bad link between one agent and the scheduler, from `from` for `length`: every heartbeat
/// sent meanwhile arrives `delay_s` late, or never with probability `loss`. With `reconnects`
/// (a disconnect) the agent registers again at the end, which the scheduler hears at once;
/// otherwise it is heard again from its first heartbeat that arrives.
struct link_window {
  sim_time from;
  sim_time length;
  double delay_s = 0;
  double loss = 0;
  bool reconnects = false;
};

/// The silences a bad link causes, in time order (none if every gap between arrivals is
/// within the grace). Losses are drawn from `seed`, so the same arguments give the same
/// silences. Draws one number per heartbeat of the window when 0 < loss < 1.
std::vector<silence> link_silences(const heartbeat_model& h, int server, const link_window& w, uint64_t seed);

} // namespace aryl
