// Configuration: the shipped default file, overrides, and one-line errors for bad input.
#include <doctest/doctest.h>

#include <fstream>

#include "runtime/inputs/config.hpp"
#include "solvers/input_error.hpp"
#include "tests/input_test_support.hpp"

using namespace aryl;
using aryl::test::error_of;
using aryl::test::scratch_file;


TEST_CASE("configs/default.yaml states exactly the built-in defaults") {
  config c;
  load_config_file(c, "configs/default.yaml");
  const config defaults;  // named: a temporary inside CHECK trips GCC 12's -Wmaybe-uninitialized
  CHECK(c == defaults);
}

TEST_CASE("every config key is listed in configs/default.yaml") {
  std::ifstream in("configs/default.yaml");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (auto& key : config_key_names()) {
    auto leaf = key.substr(key.rfind('.') + 1);
    if (leaf == "<TYPE>") continue;
    CHECK_MESSAGE(text.find(leaf + ":") != std::string::npos, key);
  }
}

TEST_CASE("--set overrides nested keys and gpu speeds") {
  config c;
  apply_override(c, "cluster.training.servers=32");
  apply_override(c, "gpu_speed.H100=3.5");
  apply_override(c, "trace.vc=11cb48");
  CHECK(c.training.servers == 32);
  CHECK(c.gpu_speed.at("H100") == 3.5);
  CHECK(c.trace_vc == "11cb48");
}

TEST_CASE("scheduler.backfill takes auto (unset: the policy decides) or a boolean, and nothing else") {
  config c;
  apply_override(c, "scheduler.backfill=off");
  CHECK(c.scheduler.backfill == std::optional<bool>(false));
  apply_override(c, "scheduler.backfill=yes");
  CHECK(c.scheduler.backfill == std::optional<bool>(true));
  apply_override(c, "scheduler.backfill=auto");
  CHECK_FALSE(c.scheduler.backfill.has_value());
  CHECK(error_of([&] { apply_override(c, "scheduler.backfill=sometimes"); }) ==
        "--set: scheduler.backfill: 'sometimes' is not auto, true or false");
}

TEST_CASE("an unknown config key is an error naming the key") {
  config c;
  auto e = error_of([&] { apply_override(c, "jobs.restart_overhead=0"); });
  CHECK(e == "--set: unknown config key 'jobs.restart_overhead'");
}

TEST_CASE("a bad config value is an error naming the key and the value") {
  config c;
  CHECK(error_of([&] { apply_override(c, "jobs.elastic_fraction=1.5"); }) ==
        "--set: jobs.elastic_fraction: must be within [0, 1]");
  CHECK(error_of([&] { apply_override(c, "cluster.training.servers=many"); }) ==
        "--set: cluster.training.servers: 'many' is not an integer");
  CHECK(error_of([&] { apply_override(c, "policy=lottery"); }).find("unknown policy 'lottery'") != std::string::npos);
  CHECK(error_of([&] { apply_override(c, "noequals"); }) == "--set noequals: expected key=value");
  CHECK(error_of([&] { apply_override(c, "live.rdzv_endpoint=store"); }) ==
        "--set: live.rdzv_endpoint: 'store' is not HOST:PORT");
  CHECK(error_of([&] { apply_override(c, "live.rdzv_endpoint=store:x"); }) ==
        "--set: live.rdzv_endpoint: 'x' is not an integer");
  apply_override(c, "live.rdzv_endpoint=10.0.0.5:29400");
  CHECK(c.rdzv_endpoint == "10.0.0.5:29400");
}

TEST_CASE("a malformed tenant quota is an error naming the key") {
  config c;
  CHECK(error_of([&] { apply_override(c, "tenants.vc1.quota=-8"); }) ==
        "--set: tenants.vc1.quota: -8 is outside [0, 100000000]");
  CHECK(error_of([&] { apply_override(c, "tenants.vc1.quota=lots"); }) == "--set: tenants.vc1.quota: 'lots' is not an integer");
  CHECK(error_of([&] { apply_override(c, "tenants.vc1.weight=0"); }) ==
        "--set: tenants.vc1.weight: 0 is outside [1e-06, 1e+06]");
  CHECK(error_of([&] { apply_override(c, "tenants.vc1.qouta=8"); }) ==
        "--set: tenants.vc1.qouta: unknown tenant setting 'qouta' (quota, weight, borrow, lend, users, max_priority)");
  CHECK(error_of([&] { apply_override(c, "tenants.vc1.borrow=maybe"); }) ==
        "--set: tenants.vc1.borrow: 'maybe' is not a boolean (true/false)");
  CHECK(error_of([&] { apply_override(c, "tenants.fairshare=1"); }) == "--set: unknown config key 'tenants.fairshare'");
  auto path = scratch_file("tenants.yaml", "tenants:\n  vc1:\n    quota: 100\n  vc2:\n    quota: 1e3\n");
  CHECK(error_of([&] { load_config_file(c, path); }) == path + ":5: tenants.vc2.quota: '1e3' is not an integer");
  // Quotas beyond the training servers' GPUs (16 x 8 by default).
  config big;
  apply_override(big, "tenants.vc1.quota=100");
  apply_override(big, "tenants.vc2.quota=29");
  CHECK(error_of([&] { validate_config(big); }) ==
        "config: tenants.*.quota: quotas sum to 129 GPUs, more than the training servers' 128");
  apply_override(big, "tenants.vc2.quota=28");
  validate_config(big);
  CHECK(big.tenants.at("vc1").quota == 100);
}

TEST_CASE("tenants bound to users: a YAML list or commas, names checked where they enter, naming file, line and key") {
  auto path = scratch_file("users.yaml", "tenants:\n  vision:\n    users: [alice, bob]\n    max_priority: 1\n"
                                         "  nlp:\n    users: carol, dave\n");
  config c;
  load_config_file(c, path);
  CHECK(c.tenants.at("vision").users == std::vector<std::string>{"alice", "bob"});
  CHECK(c.tenants.at("vision").max_priority == 1);
  CHECK(c.tenants.at("nlp").users == std::vector<std::string>{"carol", "dave"});
  CHECK_FALSE(c.tenants.at("nlp").max_priority);
  auto bad = scratch_file("users-bad.yaml", "tenants:\n  vision:\n    users: [alice, Bob]\n");
  CHECK(error_of([&] { load_config_file(c, bad); }) ==
        bad + ":3: tenants.vision.users: user 'Bob' holds a character outside a-z 0-9 . _ - (a name is also a "
              "Unix user name)");
  auto twice = scratch_file("users-twice.yaml", "tenants:\n  vision:\n    users: alice,,bob\n");
  CHECK(error_of([&] { load_config_file(c, twice); }) == twice + ":3: tenants.vision.users: an empty user name in 'alice,,bob'");
  auto nested = scratch_file("users-nested.yaml", "tenants:\n  vision:\n    users:\n      - [alice]\n");
  CHECK(error_of([&] { load_config_file(c, nested); }) ==
        nested + ":4: key 'tenants.vision.users': each user is a plain name");
  CHECK(error_of([&] { apply_override(c, "tenants.vision.max_priority=high"); }) ==
        "--set: tenants.vision.max_priority: 'high' is not an integer");
}

TEST_CASE("a config file error names the file and line") {
  auto path = scratch_file("bad.yaml", "policy: fifo\njobs:\n  scale_overhead_s: 5\n  bogus: 1\n");
  config c;
  CHECK(error_of([&] { load_config_file(c, path); }) == path + ":4: unknown config key 'jobs.bogus'");
  auto broken = scratch_file("broken.yaml", "policy: [fifo\n");
  CHECK(error_of([&] { load_config_file(c, broken); }).rfind(broken + ":", 0) == 0);
  CHECK(error_of([&] { load_config_file(c, "/nonexistent/aryl.yaml"); }) ==
        "/nonexistent/aryl.yaml: cannot open config file");
}

TEST_CASE("a gpu type without a speed is rejected before the run") {
  config c;
  c.training.gpu_type = "H100";
  CHECK(error_of([&] { validate_config(c); }).find("H100") != std::string::npos);
}

TEST_CASE("live.pre_hello_closes_per_s is a positive rate, at least one close in 10 s") {
  config c;
  apply_override(c, "live.pre_hello_closes_per_s=2.5");
  CHECK(c.pre_hello_closes_per_s == 2.5);
  CHECK(error_of([&] { apply_override(c, "live.pre_hello_closes_per_s=0"); }) ==
        "--set: live.pre_hello_closes_per_s: 0 is outside [0.1, 1e+06]");
  CHECK(error_of([&] { apply_override(c, "live.pre_hello_closes_per_s=nan"); }).find("live.pre_hello_closes_per_s") !=
        std::string::npos);
}

TEST_CASE("a malformed priority config is an error naming the key") {
  config c;
  CHECK(error_of([&] { apply_override(c, "priorities.aging_s=-5"); }) ==
        "--set: priorities.aging_s: -5 is outside [0, 1e+09]");
  CHECK(error_of([&] { apply_override(c, "priorities.aging_s=soon"); }).find("priorities.aging_s: 'soon'") !=
        std::string::npos);
  CHECK(error_of([&] { apply_override(c, "priorities.max_preemptions=-1"); }) ==
        "--set: priorities.max_preemptions: -1 is outside [0, 1000000]");
  CHECK(error_of([&] { apply_override(c, "priorities.max_preemptions=2.5"); }) ==
        "--set: priorities.max_preemptions: '2.5' is not an integer");
  CHECK(error_of([&] { apply_override(c, "priorities.maxpreemptions=1"); }) ==
        "--set: unknown config key 'priorities.maxpreemptions'");
  apply_override(c, "priorities.aging_s=600");
  apply_override(c, "priorities.max_preemptions=3");
  CHECK(c.priorities_aging_s == 600);
  CHECK(c.priorities_max_preemptions == 3);
}
