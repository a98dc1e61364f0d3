#include <doctest/doctest.h>

#include <map>

#include "solvers/input_error.hpp"
#include "runtime/live/status_view.hpp"

using namespace aryl;
using namespace aryl::live;

namespace {

wire::job_info job(uint64_t id, const char* name, wire::job_state state) {
  wire::job_info j;
  j.job_id = id;
  j.name = name;
  j.state = state;
  return j;
}

/// Three jobs: 1 running on t0 and t1 for alice (vision), 2 queued for bob (nlp), 3 done and
/// without user or tenant.
wire::status_reply sample() {
  wire::status_reply s;
  auto a = job(1, "alpha", wire::job_state::running);
  a.workers = 6;
  a.gpus = 6;
  a.min_workers = 2;
  a.max_workers = 8;
  a.gpu_type = "V100";
  a.run_s = 3725;
  a.servers = "t0:4 t1:2";
  a.tenant = "vision";
  a.user = "alice";
  auto b = job(2, "beta", wire::job_state::queued);
  b.gpus = 8;
  b.reason = "behind job 1";
  b.tenant = "nlp";
  b.user = "bob";
  auto c = job(3, "gamma", wire::job_state::done);
  c.outcome = "done";
  c.exits = "0:0";
  c.run_s = 90000;
  s.jobs = {b, a, c};
  s.servers = {{"t0", "V100", 4, 0, wire::pool_kind::training, wire::server_state::up, std::nullopt, std::nullopt},
               {"t1", "V100", 4, 2, wire::pool_kind::training, wire::server_state::up, std::nullopt, std::nullopt}};
  s.tenants = std::vector<wire::tenant_info>{{"vision", 4, 6, 0, 2, 0}, {"nlp", 4, 0, 0, 0, 1}};
  return s;
}

std::vector<uint64_t> ids(const wire::status_reply& s) {
  std::vector<uint64_t> out;
  for (auto& j : s.jobs) out.push_back(j.job_id);
  return out;
}

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const input_error& e) {
    return e.what();
  }
  return {};
}

} // namespace

TEST_CASE("status view: every state name and every Slurm code, in any case, and nothing else") {
  const std::map<std::string, wire::job_state> accepted = {
      {"queued", wire::job_state::queued},   {"running", wire::job_state::running},
      {"done", wire::job_state::done},       {"failed", wire::job_state::failed},
      {"cancelled", wire::job_state::cancelled}, {"PD", wire::job_state::queued},
      {"R", wire::job_state::running},       {"CD", wire::job_state::done},
      {"F", wire::job_state::failed},        {"CA", wire::job_state::cancelled},
      {"pd", wire::job_state::queued},       {"Running", wire::job_state::running}};
  for (auto& [name, state] : accepted) {
    INFO(name);
    CHECK(parse_states("--state", name) == std::set{state});
  }
  CHECK(parse_states("--state", "PD,running,ca") ==
        std::set{wire::job_state::queued, wire::job_state::running, wire::job_state::cancelled});
  for (auto bad : {"pending", "canceled", "RUN", "S", "x"}) {
    auto why = error_of([&] { parse_states("status: --state", bad); });
    INFO(why);
    CHECK(why.rfind("status: --state: '", 0) == 0);
    CHECK(why.find("queued, running, done, failed, cancelled") != std::string::npos);
  }
  CHECK(error_of([] { parse_states("status: --state", ","); }) == "status: --state: give at least one state");
}

TEST_CASE("status view: every column parses by name, has a cell for every job, and sorts both ways") {
  const std::vector<std::string> all = {"jobid", "name",    "user", "tenant",  "state",   "workers", "gpus",
                                        "min_workers", "max_workers", "gpu_type", "time", "servers", "reason"};
  REQUIRE(status_columns().size() == all.size());
  // The expected cells of jobs 2, 1, 3 (the sample's order) in each column.
  const std::map<std::string, std::vector<std::string>> cells = {
      {"jobid", {"2", "1", "3"}},
      {"name", {"beta", "alpha", "gamma"}},
      {"user", {"bob", "alice", "-"}},
      {"tenant", {"nlp", "vision", "-"}},
      {"state", {"queued", "running", "done"}},
      {"workers", {"0", "6", "0"}},
      {"gpus", {"8", "6", "-"}},
      {"min_workers", {"-", "2", "-"}},
      {"max_workers", {"-", "8", "-"}},
      {"gpu_type", {"any", "V100", "any"}},
      {"time", {"-", "1:02:05", "1-1:00:00"}},
      {"servers", {"-", "t0:4 t1:2", "-"}},
      {"reason", {"behind job 1", "-", "exits 0:0"}},
  };
  // Each column's order up and down (ties keep the reply's order; absent values are lowest).
  const std::map<std::string, std::pair<std::vector<uint64_t>, std::vector<uint64_t>>> order = {
      {"jobid", {{1, 2, 3}, {3, 2, 1}}},       {"name", {{1, 2, 3}, {3, 2, 1}}},
      {"user", {{3, 1, 2}, {2, 1, 3}}},        {"tenant", {{3, 2, 1}, {1, 2, 3}}},
      {"state", {{2, 1, 3}, {3, 1, 2}}},       {"workers", {{2, 3, 1}, {1, 2, 3}}},
      {"gpus", {{3, 1, 2}, {2, 1, 3}}},        {"min_workers", {{2, 3, 1}, {1, 2, 3}}},
      {"max_workers", {{2, 3, 1}, {1, 2, 3}}}, {"gpu_type", {{1, 2, 3}, {2, 3, 1}}},
      {"time", {{2, 1, 3}, {3, 1, 2}}},        {"servers", {{2, 3, 1}, {1, 2, 3}}},
      {"reason", {{1, 2, 3}, {3, 2, 1}}},
  };
  auto s = sample();
  for (size_t i = 0; i < all.size(); ++i) {
    auto& name = all[i];
    INFO(name);
    CHECK(status_columns()[i].name == name);
    auto cols = parse_columns("--format", name);
    REQUIRE(cols.size() == 1);
    for (size_t k = 0; k < s.jobs.size(); ++k) CHECK(cell(s.jobs[k], *cols[0]) == cells.at(name)[k]);
    CHECK(ids(narrowed(s, {}, parse_sort("--sort", name))) == order.at(name).first);
    CHECK(ids(narrowed(s, {}, parse_sort("--sort", "-" + name))) == order.at(name).second);
    CHECK(!json_keys(cols).empty());
  }
  CHECK(parse_columns("--format", "JobID,time").size() == 2);
  auto why = error_of([] { parse_columns("status: --format", "jobid,nodes"); });
  CHECK(why == "status: --format: 'nodes' is not a column (valid: " + column_names() + ")");
  for (auto& name : all) CHECK(why.find(name) != std::string::npos);
  CHECK(error_of([] { parse_sort("status: --sort", "-nodes"); }).rfind("status: --sort: '-nodes' is not a column", 0) == 0);
  CHECK(error_of([] { parse_columns("status: --format", ""); }).rfind("status: --format: give at least one", 0) == 0);
}

TEST_CASE("status view: filters keep the jobs every given one matches, and narrow the server and tenant tables") {
  auto s = sample();
  status_filter f;
  f.states = {wire::job_state::running};
  CHECK(ids(narrowed(s, f, {})) == std::vector<uint64_t>{1});
  f = {};
  f.users = {"bob"};
  CHECK(ids(narrowed(s, f, {})) == std::vector<uint64_t>{2});
  f.users = {"carol"};  // a job without a user matches no --user
  CHECK(ids(narrowed(s, f, {})).empty());
  f = {};
  f.tenants = {"vision"};
  auto v = narrowed(s, f, {});
  CHECK(ids(v) == std::vector<uint64_t>{1});
  REQUIRE(v.tenants);
  CHECK(v.tenants->size() == 1);
  f = {};
  f.servers = {"t1"};
  v = narrowed(s, f, {});
  CHECK(ids(v) == std::vector<uint64_t>{1});
  CHECK(v.servers.size() == 1);
  f.servers = {"t"};  // a server's whole name, not a prefix
  CHECK(ids(narrowed(s, f, {})).empty());
  f = {};
  f.states = {wire::job_state::queued, wire::job_state::done};
  f.tenants = {"nlp"};
  CHECK(ids(narrowed(s, f, {})) == std::vector<uint64_t>{2});
  CHECK(ids(narrowed(s, {}, {})) == std::vector<uint64_t>{2, 1, 3});
}

TEST_CASE("status view: a table's columns are as wide as their widest cell, names escaped") {
  auto s = sample();
  s.jobs[0].name = "b\nx";
  auto text = job_table(s.jobs, parse_columns("--format", "jobid,name,state"));
  CHECK(text == "JOBID  NAME   STATE\n"
                "    2  b\\nx   queued\n"
                "    1  alpha  running\n"
                "    3  gamma  done\n");
  CHECK(json_keys(parse_columns("--format", "jobid,state,time")) == std::set<std::string>{"job_id", "state", "outcome", "run_s"});
}

TEST_CASE("status view: ranks read as Slurm's ranges") {
  CHECK(rank_ranges({}) == "");
  CHECK(rank_ranges({3}) == "3");
  CHECK(rank_ranges({3, 0, 1, 2, 6, 8, 7}) == "0-3,6-8");
  CHECK(rank_ranges({5, 1, 1}) == "1,5");
}
