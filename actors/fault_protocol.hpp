#pragma once
/// Faults in simulated time: the fault actor's messages, and what a crash tells the actors it
/// reaches. A crash is physical (workers die at once); the scheduler learns of a lost server
/// only when its heartbeats stop arriving.
#include <caf/all.hpp>

#include "actors/atoms.hpp"

#include <cstdint>

namespace aryl {

/// A bad link between one training server's agent and the scheduler, for `for_us` of
/// simulated time: heartbeats and reports arrive `delay_s` late, and each heartbeat is lost
/// with probability `loss`. A disconnect loses everything and ends with the agent
/// registering again.
struct link_fault {
  int server = -1;
  int64_t for_us = 0;
  double delay_s = 0;
  double loss = 0;
  bool reconnects = false;

  static link_fault disconnect(int server, int64_t for_us) { return {server, for_us, 0, 1, true}; }
  static link_fault degraded(int server, int64_t for_us, double delay_s, double loss) {
    return {server, for_us, delay_s, loss, false};
  }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, link_fault& x) {
  return f(caf::meta::type_name("link_fault"), x.server, x.for_us, x.delay_s, x.loss, x.reconnects);
}

/// What goes wrong with a job's next checkpoint: it takes `slow_s` more seconds, or it fails
/// (the job runs on; its latest good checkpoint stays the one before).
struct checkpoint_fault {
  double slow_s = 0;
  bool fail = false;

  static checkpoint_fault slow(double s) { return {s, false}; }
  static checkpoint_fault failed() { return {0, true}; }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, checkpoint_fault& x) {
  return f(caf::meta::type_name("checkpoint_fault"), x.slow_s, x.fail);
}

/// Live mode, server -> job: the exit code of a worker given up for lost (its machine was lost,
/// or its agent came back without it): its real exit will never be reported.
constexpr int worker_lost_code = -1;
constexpr int worker_lost_signal = 9;

} // namespace aryl
