#pragma once
/// Exact integration of a job's progress between events. Pure: `now` is a parameter.
#include <algorithm>
#include <cmath>

#include "solvers/sim_time.hpp"

namespace aryl {

/// Progress accrues at `rate` work units per second from `since` on. `since` may lie in the
/// future while an overhead (restart or rescale) is being paid: no progress until then.
struct job_progress {
  double work_done = 0;
  double rate = 0;
  sim_time since;

  /// Folds the progress up to `now` into work_done.
  void settle(sim_time now) {
    if (rate > 0 && now > since) {
      work_done += rate * (now - since).seconds();
      since = now;
    }
  }

  /// Settles, then runs at `new_rate` after `overhead_s` seconds of no progress. A change
  /// while an earlier overhead is still being paid aborts that restart: its time so far is
  /// lost and the new overhead starts now, as when real workers are stopped mid-start.
  void change_rate(sim_time now, double new_rate, double overhead_s) {
    settle(now);
    rate = new_rate;
    since = now + sim_time::from_seconds(overhead_s);
  }

  /// Work done by `now`, without settling.
  double done_at(sim_time now) const {
    return (rate > 0 && now > since) ? work_done + rate * (now - since).seconds() : work_done;
  }

  /// When `total` work will be done at the current rate; sim_time::max() if not running or
  /// if that lies past sim_time::horizon().
  sim_time finish_time(double total) const {
    if (rate <= 0) return sim_time::max();
    double left = std::max(0.0, total - work_done);
    double us = std::ceil(left / rate * 1e6 - 1e-6);
    if (!(us < static_cast<double>((sim_time::horizon() - since).us))) return sim_time::max();
    return since + sim_time::from_us(static_cast<int64_t>(us));
  }
};

} // namespace aryl
