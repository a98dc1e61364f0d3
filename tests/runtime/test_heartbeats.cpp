// Loss detection by heartbeats in simulated time (solvers/heartbeats.hpp): which silences a bad
// link makes the scheduler notice, and when it hears the agent again.
#include <doctest/doctest.h>

#include "solvers/heartbeats.hpp"

using namespace aryl;

namespace {

const heartbeat_model h{10, 3};  // grace 30 s; server 0 heartbeats at 0, 10, 20, ...

sim_time at(double s) { return sim_time::from_seconds(s); }

link_window window(double from, double length, double delay_s, double loss) {
  return {at(from), at(length), delay_s, loss, false};
}

} // namespace

TEST_CASE("a disconnect is noticed a grace after the last heartbeat and ends when the agent registers again") {
  // Disconnected at 55 (last heartbeat 50) for 100 s: noticed at 80, heard again at 155.
  auto s = link_silences(h, 0, {at(55), at(100), 0, 1, true}, 1);
  REQUIRE(s.size() == 1);
  CHECK(s[0].noticed == at(80));
  CHECK(s[0].heard == at(155));
  CHECK(s[0].noticed == h.loss_noticed(0, at(55)));  // the same detection as a crash
}

TEST_CASE("a disconnect shorter than the time to notice it makes no silence") {
  CHECK(link_silences(h, 0, {at(55), at(24.9), 0, 1, true}, 1).empty());  // back at 79.9, noticed at 80
  CHECK(link_silences(h, 0, {at(50), at(30), 0, 1, true}, 1).empty());    // back at 80, as it is noticed
}

TEST_CASE("heartbeats delayed by at most (missed - 1) periods never make a loss") {
  CHECK(link_silences(h, 0, window(55, 3600, 20, 0), 1).empty());
}

TEST_CASE("heartbeats delayed by more make one loss, and the first to arrive brings the agent back") {
  // Last on time at 50; the one sent at 60 arrives at 85, after the grace ran out at 80.
  auto s = link_silences(h, 0, window(55, 3600, 25, 0), 1);
  REQUIRE(s.size() == 1);
  CHECK(s[0].noticed == at(80));
  CHECK(s[0].heard == at(85));
}

TEST_CASE("a lossy link is lost only after `missed` heartbeats in a row did not arrive, the same for the same seed") {
  int with_silence = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    auto s = link_silences(h, 2, window(1000, 120, 0, 0.5), seed);
    CHECK(s.size() == link_silences(h, 2, window(1000, 120, 0, 0.5), seed).size());
    sim_time previous = at(1000);
    for (auto& q : s) {
      // Heard again at least one heartbeat past the grace (to the microsecond): 3 in a row were lost.
      CHECK(q.heard - q.noticed >= at(10) - sim_time::from_us(1));
      CHECK(q.noticed > previous);
      CHECK(q.heard <= at(1000 + 120 + 10));  // at the latest, the first heartbeat after the window
      previous = q.heard;
    }
    with_silence += s.empty() ? 0 : 1;
  }
  // 12 heartbeats, each lost with probability 1/2: three in a row in 58% of windows.
  CHECK(with_silence > 80);
  CHECK(with_silence < 160);
}

TEST_CASE("a link that loses nothing and delays nothing makes no silence") {
  CHECK(link_silences(h, 1, window(5, 1e6, 0, 0), 7).empty());
}
