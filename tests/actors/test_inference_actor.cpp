// Inference-load actor: lends what demand leaves idle, asks for servers back with a deadline,
// and counts what comes back late as reclaim SLO misses.
#include <doctest/doctest.h>

#include "actors/inference_load.hpp"
#include "tests/actors/sim_fixture.hpp"

using namespace aryl;
using namespace aryl::test;

namespace {

struct inference_fixture : sim_fixture {
  std::shared_ptr<std::vector<seen>> log = std::make_shared<std::vector<seen>>();
  std::shared_ptr<recorded> rec = std::make_shared<recorded>();
  scheduler_actor scheduler = sys->spawn(recording_scheduler, log, tb);
  recorder_actor recorder = sys->spawn(recording_recorder, rec);
  std::vector<inference_actor> spawned;

  // The actor re-arms its demand timer for ever; at shutdown the test coordinator would
  // deliver those timers without end, so the actor is stopped first (the driver does the same).
  ~inference_fixture() {
    for (auto& a : spawned) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    drain();
  }

  /// Four inference servers (ids 10..13); demand steps given as (t_s, servers needed).
  inference_actor spawn(std::vector<std::pair<int, int>> steps) {
    inference_setup s;
    s.servers = {10, 11, 12, 13};
    for (auto [t, n] : steps) s.demand.push_back({sim_time::from_seconds(t), n});
    s.interval_s = 60;
    s.headroom = 0;
    s.grace_s = 30;
    spawned.push_back(sys->spawn(inference_behavior, s, scheduler, recorder, tb));
    return spawned.back();
  }
  std::vector<seen> of_kind(const std::string& what) const {
    std::vector<seen> out;
    for (auto& s : *log)
      if (s.what == what) out.push_back(s);
    return out;
  }
  /// Steps timer by timer until `what` has been seen `n` times (the step that shows it runs
  /// nothing later than its own instant).
  void run_until_seen(const std::string& what, size_t n = 1) {
    while (of_kind(what).size() < n && step()) {}
  }
  void run_until(double t_s) {
    while (now() < sim_time::from_seconds(t_s) && step()) {}
  }
};

} // namespace

TEST_CASE_FIXTURE(inference_fixture, "the servers demand leaves idle are lent, highest ids first") {
  auto inf = spawn({{0, 1}, {1000, 1}});
  drain();
  auto loans = of_kind("loan");
  REQUIRE(loans.size() == 1);
  CHECK(loans[0].servers == std::vector<int>{11, 12, 13});
  CHECK(loans[0].at == sim_time{});
}

TEST_CASE_FIXTURE(inference_fixture, "rising demand asks for the deficit back, and a late return is an SLO miss") {
  // t=0: need 1, lend 3. t=120: need 3, ask for 2 by t=150. The stand-in scheduler never
  // returns them: at t=150 two servers are late.
  auto inf = spawn({{0, 1}, {120, 3}, {100000, 3}});
  drain();
  run_until_seen("reclaim");
  auto asks = of_kind("reclaim");
  REQUIRE(asks.size() == 1);
  CHECK(asks[0].count == 2);
  CHECK(asks[0].at == sim_time::from_seconds(120));
  CHECK(rec->slo_misses == 0);
  run_until(151);
  CHECK(rec->slo_misses == 2);
  // No second request for servers already asked for.
  run_until(400);
  CHECK(of_kind("reclaim").size() == 1);
}

TEST_CASE_FIXTURE(inference_fixture, "servers returned before the deadline are no SLO miss") {
  auto inf = spawn({{0, 1}, {120, 2}, {100000, 2}});
  drain();
  run_until_seen("reclaim");
  REQUIRE(of_kind("reclaim").size() == 1);
  caf::anon_send(inf, returned_atom::value, std::vector<int>{11});
  drain();
  run_until(400);
  CHECK(rec->slo_misses == 0);
}

TEST_CASE_FIXTURE(inference_fixture, "a pushed demand replaces the trace at once, without a second interval timer") {
  // The trace asks for all four servers for ever; a client then says none are needed.
  auto inf = spawn({{0, 4}, {1000, 4}});
  drain();
  CHECK(of_kind("loan").empty());
  caf::anon_send(inf, push_atom::value, 0);
  drain();
  auto loans = of_kind("loan");
  REQUIRE(loans.size() == 1);
  CHECK(loans[0].at == sim_time{});  // at once, not at the next interval
  CHECK(loans[0].servers == std::vector<int>{10, 11, 12, 13});
  // One periodic timer only: the next demand check comes one interval after the first.
  CHECK(step());
  CHECK(now() == sim_time::from_seconds(60));
  CHECK(step());
  CHECK(now() == sim_time::from_seconds(120));
}
