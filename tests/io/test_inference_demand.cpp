// Inference demand: CSV and ServeGen readers, synthetic diurnal demand.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "runtime/inputs/inference_demand.hpp"
#include "solvers/input_error.hpp"
#include "tests/input_test_support.hpp"

using namespace aryl;
using namespace aryl::test;

namespace {

std::string servegen(const std::string& rel) { return std::string(ARYL_SOURCE_DIR) + "/../shared/traces/servegen/" + rel; }

std::vector<int> servers_of(const std::vector<demand_point>& d) {
  std::vector<int> out;
  for (const auto& p : d) out.push_back(p.servers_needed);
  return out;
}

} // namespace

TEST_CASE("demand csv: t_s,servers_needed (or t_s,demand) read as a step function, extra columns ignored") {
  const auto d = read_demand_csv(data("demand.csv"));
  REQUIRE(d.size() == 4);
  CHECK(d[0].t == sim_time{});
  CHECK(d[2].t == sim_time::from_us(600'000'000));
  CHECK(d[3].t == sim_time::from_us(900'500'000));
  CHECK(servers_of(d) == std::vector<int>{5, 7, 12, 0});
  const auto a = read_demand_csv(data("demand_alias.csv"));
  CHECK(servers_of(a) == std::vector<int>{3, 4});
  CHECK(a[1].t == sim_time::from_us(60'000'000));
}

TEST_CASE("demand csv: unsorted, negative, fractional, missing and empty inputs are errors with file:line") {
  const std::string unsorted = data("demand_unsorted.csv");
  CHECK(error_of([&] { read_demand_csv(unsorted); }) ==
        unsorted + ":4: column 't_s': '300' is not after the previous row's t_s (rows must be sorted by time)");
  const std::string negative = scratch_file("neg.csv", "t_s,servers_needed\n0,1\n60,-2\n");
  CHECK(error_of([&] { read_demand_csv(negative); }) == negative + ":3: column 'servers_needed': '-2' is negative");
  const std::string fraction = scratch_file("frac.csv", "t_s,demand\n0,2.5\n");
  CHECK(error_of([&] { read_demand_csv(fraction); }) == fraction + ":2: column 'demand': '2.5' is not a whole number");
  const std::string time = scratch_file("time.csv", "t_s,demand\nsoon,2\n");
  CHECK(error_of([&] { read_demand_csv(time); }) == time + ":2: column 't_s': 'soon' is not a number");
  const std::string header_only = scratch_file("header.csv", "t_s,servers_needed\n");
  CHECK(error_of([&] { read_demand_csv(header_only); }) == header_only + ": no data rows after the header");
  const std::string bad_rate = scratch_file("rate.csv", "window_start_s,total_rate_rps\n0,1\n600,fast\n");
  CHECK(error_of([&] { read_servegen_demand(bad_rate, 4, 0.9); }) ==
        bad_rate + ":3: column 'total_rate_rps': 'fast' is not a number");
  CHECK(error_of([&] { read_demand_csv("tests/io/data/none.csv"); }) ==
        "tests/io/data/none.csv: cannot open: No such file or directory");
  CHECK(error_of([&] { read_demand_csv(data("canonical_minimal.csv")); }).find(":1: missing column 't_s'") !=
        std::string::npos);
  CHECK(error_of([&] { read_demand_csv(data("servegen_total.csv")); }).find("missing column 't_s'") !=
        std::string::npos);
  CHECK(error_of([&] { read_demand_csv(data("philly_small.csv")); }).find("missing column 't_s'") !=
        std::string::npos);
}

TEST_CASE("servegen demand: the peak window needs peak_utilisation times servers, others scale by rate, rounded up") {
  // Rates 10, 40, 100, 0 rps; 10 servers at 80% peak: 12.5 rps per server.
  const auto d = read_servegen_demand(data("servegen_total.csv"), 10, 0.8);
  REQUIRE(d.size() == 4);
  CHECK(servers_of(d) == std::vector<int>{1, 4, 8, 0});
  CHECK(d[3].t == sim_time::from_us(1'800'000'000));
  // A directory sums its chunk-*-trace.csv files per window: 4, 1, 8 rps.
  const auto s = read_servegen_demand(data("servegen_dir"), 8, 1.0);
  CHECK(servers_of(s) == std::vector<int>{4, 1, 8});
  // One raw chunk file alone (no header).
  CHECK(servers_of(read_servegen_demand(data("servegen_dir/chunk-0-trace.csv"), 8, 1.0)) ==
        std::vector<int>{3, 0, 8});
  CHECK_THROWS_AS(read_servegen_demand(data("servegen_total.csv"), 0, 0.8), input_error);
  CHECK_THROWS_AS(read_servegen_demand(data("servegen_total.csv"), 10, 1.5), input_error);
  CHECK(error_of([&] { read_servegen_demand(data(""), 10, 0.8); }).find("no chunk-*-trace.csv files") !=
        std::string::npos);
  CHECK(error_of([&] { read_servegen_demand(data("demand.csv"), 10, 0.8); }) ==
        data("demand.csv") + ":1: expected the header window_start_s,total_rate_rps or no header");
}

TEST_CASE("servegen demand: m-small derived totals and the 43 raw client files give the same 14-day demand") {
  const auto total = read_servegen_demand(servegen("derived/language_m-small_total_rate.csv"), 20, 0.9);
  REQUIRE(total.size() == 2016);
  CHECK(total[1].t == sim_time::from_us(600'000'000));
  CHECK(total.back().t == sim_time::from_us(2015LL * 600 * 1'000'000));
  const auto servers = servers_of(total);
  CHECK(*std::max_element(servers.begin(), servers.end()) == 18);
  CHECK(std::count(servers.begin(), servers.end(), 18) == 1);
  CHECK(std::count(servers.begin(), servers.end(), 0) == 37);  // windows with no requests
  const auto raw = read_servegen_demand(servegen("language/m-small"), 20, 0.9);
  CHECK(servers_of(raw) == servers);
}

TEST_CASE("synthetic demand: deterministic, bounded, peaks near 0.9 at 20:00 and dips near 0.4 at 08:00") {
  const auto a = synthetic_demand(7, 50, 7, 300);
  REQUIRE(a.size() == 7 * 288);
  CHECK(servers_of(a) == servers_of(synthetic_demand(7, 50, 7, 300)));
  CHECK(servers_of(a) != servers_of(synthetic_demand(8, 50, 7, 300)));
  double at20 = 0, at8 = 0;
  int n20 = 0, n8 = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].t == sim_time::from_us(static_cast<int64_t>(i) * 300 * 1'000'000));
    CHECK(a[i].servers_needed >= 0);
    CHECK(a[i].servers_needed <= 50);
    const int64_t hour = a[i].t.us / 3'600'000'000LL % 24;
    if (hour == 20) at20 += a[i].servers_needed, ++n20;
    if (hour == 8) at8 += a[i].servers_needed, ++n8;
  }
  CHECK(at20 / n20 / 50 == doctest::Approx(0.9).epsilon(0.05));
  CHECK(at8 / n8 / 50 == doctest::Approx(0.4).epsilon(0.1));
  CHECK(synthetic_demand(1, 10, 0.5, 3600).size() == 12);
  CHECK_THROWS_AS(synthetic_demand(1, 0, 1, 300), input_error);
  CHECK_THROWS_AS(synthetic_demand(1, 10, 0, 300), input_error);
  CHECK_THROWS_AS(synthetic_demand(1, 10, 1, 0), input_error);
}
