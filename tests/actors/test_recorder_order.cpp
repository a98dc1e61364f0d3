// The recorder writes events in the order they come, and never back in time: live mode's actors
// read the wall clock on different threads, a little apart.
#include <doctest/doctest.h>

#include "actors/recorder.hpp"
#include "tests/actors/sim_fixture.hpp"

using namespace aryl;

namespace {

/// Keeps the events' times; every other record is dropped.
struct times_sink : run_sink {
  std::vector<int64_t> times;
  run_measures m;
  void event(const event_record& e) override { times.push_back(e.t_us); }
  void job(const job_record&) override {}
  void snapshot(const cluster_snapshot&) override {}
  void slo_misses(int) override {}
  void lost_work(double, double) override {}
  void reclaim_done(double, double) override {}
  void quota_done(double, double) override {}
  void serving(int64_t, int) override {}
  const run_measures& measures() const override { return m; }
  uint64_t jobs_recorded() const override { return 0; }
  run_summary finish(run_summary s) override { return s; }
};

} // namespace

TEST_CASE_FIXTURE(aryl::test::sim_fixture, "recorder: an event stamped before the last one is written at the last one's time") {
  auto sink = std::make_shared<times_sink>();
  auto rec = sys->spawn(recorder_behavior, std::shared_ptr<run_sink>(sink), std::make_shared<run_status>(), 1,
                        run_summary{}, true, 0);
  for (int64_t t : {100, 250, 240, 300}) caf::anon_send(rec, event_atom::value, event_record{t, "scheduler", "x", "", ""});
  drain();
  CHECK(sink->times == std::vector<int64_t>{100, 250, 250, 300});
}
