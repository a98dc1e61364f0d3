// Rigid baselines against the two peer simulators' published results on Philly VC 11cb48
// (../shared/traces/README.md). FIFO must land within 1%, SRTF within 3%.
#include <doctest/doctest.h>

#include "tests/e2e/run_helpers.hpp"

using namespace aryl;

namespace {

void check_against_peer(int servers, const char* policy, const char* placement, double peer_jct, double tolerance) {
  auto c = test::philly_reference(servers, policy, placement);
  // Tiresias and Helios charge nothing for a job spread over servers.
  c.cross_server_eff = 1;
  c.out_dir = test::temp_dir(std::string("peer-") + policy + placement + std::to_string(servers));
  auto out = test::run(c);
  REQUIRE_MESSAGE(out.ok, out.error);
  CHECK(out.summary.jobs_completed == 11897);
  MESSAGE(std::string(policy) << " " << std::string(placement) << " " << servers << " nodes: mean JCT " << out.summary.mean_jct_s
                 << " vs peer " << peer_jct);
  CHECK(out.summary.mean_jct_s == doctest::Approx(peer_jct).epsilon(tolerance));
}

} // namespace

TEST_CASE("fifo with count placement on 16 nodes matches Tiresias within 1%") {
  check_against_peer(16, "fifo", "count", 3110.6, 0.01);
}
TEST_CASE("fifo with consolidated placement on 16 nodes matches Helios within 1%") {
  check_against_peer(16, "fifo", "consolidated", 3110.7, 0.01);
}
TEST_CASE("fifo with count placement on 4 nodes matches Tiresias within 1%") {
  check_against_peer(4, "fifo", "count", 193341.9, 0.01);
}
TEST_CASE("fifo with consolidated placement on 4 nodes matches Helios within 1%") {
  check_against_peer(4, "fifo", "consolidated", 245445.2, 0.01);
}
TEST_CASE("srtf with count placement on 16 nodes matches Tiresias within 3%") {
  check_against_peer(16, "srtf", "count", 3018.3, 0.03);
}
TEST_CASE("srtf with count placement on 4 nodes matches Tiresias within 3%") {
  check_against_peer(4, "srtf", "count", 4253.0, 0.03);
}
TEST_CASE("sjf with consolidated placement on 16 nodes matches Helios within 1%") {
  check_against_peer(16, "sjf", "consolidated", 3059.1, 0.01);
}
