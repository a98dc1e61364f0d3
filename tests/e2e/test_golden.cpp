// End to end against checked-in decision logs: a small trace, every decision and its reason.
// When a change of behaviour is intended, regenerate with ARYL_UPDATE_GOLDEN=1 and review the
// diff of the .events.log file like code.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>

#include "tests/e2e/run_helpers.hpp"

using namespace aryl;

namespace {

void check_golden(config c, const std::string& golden, const std::string& name) {
  c.trace_file = "tests/e2e/data/small.csv";
  c.check_invariants = true;
  // The logs were made without a cross-server cost, as the peer simulators they mirror run.
  c.cross_server_eff = 1;
  c.out_dir = test::temp_dir("golden-" + name);
  auto out = test::run(c);
  REQUIRE_MESSAGE(out.ok, out.error);
  CHECK(out.summary.jobs_completed == 8);
  auto actual = test::slurp(c.out_dir + "/events.log");
  if (std::getenv("ARYL_UPDATE_GOLDEN")) std::filesystem::copy_file(c.out_dir + "/events.log", golden,
                                                                    std::filesystem::copy_options::overwrite_existing);
  REQUIRE(std::filesystem::exists(golden));
  CHECK(actual == test::slurp(golden));
}

} // namespace

TEST_CASE("strict fifo on a small trace makes exactly the checked-in decisions") {
  config c;
  c.policy = "fifo";
  c.training.servers = 2;
  c.inference.servers = 0;
  check_golden(c, "tests/e2e/data/small.fifo.events.log", "fifo");
}

static config small_aryl() {
  config c;
  c.policy = "aryl";
  c.training.servers = 2;
  c.inference.servers = 2;
  c.inference_trace = "tests/e2e/data/small_demand.csv";
  c.inference_interval_s = 30;
  c.inference_grace_s = 10;
  c.inference_headroom = 0;
  c.elastic_fraction = 0.5;
  return c;
}

TEST_CASE("aryl with loaning and elasticity on a small trace makes exactly the checked-in decisions") {
  check_golden(small_aryl(), "tests/e2e/data/small.aryl.events.log", "aryl");
}

// At the minimum floor (the paper's base) elastic jobs may start at their minimum when that is
// all that is free, and queued jobs and reclaims shrink them down to it.
TEST_CASE("aryl at the minimum floor on a small trace makes exactly the checked-in decisions") {
  config c = small_aryl();
  c.scheduler.floor = elastic_floor::min;
  check_golden(c, "tests/e2e/data/small.aryl-min.events.log", "aryl-min");
}
