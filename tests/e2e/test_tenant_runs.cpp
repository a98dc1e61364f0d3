// Whole runs with tenants and with jobs that come without an estimate: every job completes
// with the invariant checker on, and the outputs say what happened.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <map>
#include <sstream>

#include "tests/e2e/run_helpers.hpp"

using namespace aryl;

namespace {

/// Tenant b floods the cluster at time 0 (borrowing a's idle quota); a's jobs come later.
std::string two_tenant_trace() {
  std::ostringstream out;
  out << "job_id,submit_s,gpus,duration_s,tenant\n";
  for (int i = 0; i < 40; ++i) out << "b" << i << ",0," << (i % 2 ? 8 : 4) << "," << 20000 + 100 * i << ",b\n";
  for (int i = 0; i < 20; ++i) out << "a" << i << "," << 3600 + 60 * i << ",8," << 3000 + 100 * i << ",a\n";
  return out.str();
}

} // namespace

TEST_CASE("jobs without an estimate complete, and jobs.csv and summary.json say which had one") {
  config c;
  c.synthetic_jobs = 300;
  c.unestimated_fraction = 0.5;
  c.check_invariants = true;
  c.out_dir = test::temp_dir("unestimated");
  auto out = test::run(c);
  REQUIRE_MESSAGE(out.ok, out.error);
  CHECK(out.summary.jobs_completed == 300);
  auto summary = nlohmann::json::parse(test::slurp(c.out_dir + "/summary.json"));
  const auto without = summary.at("jobs_without_estimate").get<int>();
  CHECK(without > 120);
  CHECK(without < 180);
  CHECK(summary.at("mean_jct_without_estimate_s").get<double>() > 0);
  auto jobs = test::slurp(c.out_dir + "/jobs.csv");
  CHECK(jobs.substr(0, jobs.find('\n')).ends_with(",tenant,estimated,exits,attempts"));
  CHECK(test::lines_with(jobs, ",done,").size() == 300);
}

TEST_CASE("a tenant's lent quota comes back through quota reclaims, each measured against its deadline") {
  config c;
  c.trace_file = test::write_temp_file("tenants.csv", two_tenant_trace());
  c.training.servers = 16;
  c.inference.servers = 0;
  c.policy = "baseline";
  c.check_invariants = true;
  apply_override(c, "tenants.a.quota=64");
  apply_override(c, "tenants.b.quota=64");
  c.out_dir = test::temp_dir("tenant-run");
  auto out = test::run(c);
  REQUIRE_MESSAGE(out.ok, out.error);
  CHECK(out.summary.jobs_completed == 60);
  auto log = test::slurp(c.out_dir + "/events.log");
  auto stops = test::lines_with(log, "quota reclaim for job");
  CHECK(!stops.empty());
  auto summary = nlohmann::json::parse(test::slurp(c.out_dir + "/summary.json"));
  CHECK(summary.at("quota_reclaims").get<int>() > 0);
  CHECK(summary.at("quota_reclaims").get<size_t>() == test::lines_with(log, "quota-return").size());
  // A stop's checkpoint of at most 8 workers takes ~14 s: within the 120 s deadline.
  CHECK(summary.at("quota_reclaims_late").get<int>() == 0);
  CHECK(summary.at("quota_reclaim_latency_p99_s").get<double>() <= 120);
  // a's jobs arrive into a cluster full of b's: a's mean queuing stays far below b's.
  std::istringstream jobs(test::slurp(c.out_dir + "/jobs.csv"));
  std::map<std::string, std::pair<double, int>> queued;  // tenant -> (sum of queued_s, jobs)
  std::string line;
  std::getline(jobs, line);
  while (std::getline(jobs, line)) {
    std::vector<std::string> f;
    std::istringstream fields(line);
    for (std::string x; std::getline(fields, x, ',');) f.push_back(x);
    REQUIRE(f.size() == 25);
    auto& q = queued[f[21]];  // tenant
    q.first += std::stod(f[8]);
    ++q.second;
  }
  REQUIRE(queued.size() == 2);
  CHECK(queued["a"].second == 20);
  CHECK(queued["a"].first / 20 < queued["b"].first / 40);
}
