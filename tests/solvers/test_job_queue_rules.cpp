// Dependencies and arrays as users write them (solvers/job_queue_rules.*).
#include <doctest/doctest.h>

#include <map>

#include "solvers/input_error.hpp"
#include "solvers/job_queue_rules.hpp"

using namespace aryl;

TEST_CASE("--after reads JOB, JOB:KIND and Slurm's KIND:JOB, ok by default, in one canonical form") {
  auto deps = parse_after("3,4:any,afternotok:5:6", "--after");
  REQUIRE(deps.size() == 4);
  CHECK(deps[0] == job_dependency{3, after_kind::ok});
  CHECK(deps[1] == job_dependency{4, after_kind::any});
  CHECK(deps[2] == job_dependency{5, after_kind::notok});
  CHECK(deps[3] == job_dependency{6, after_kind::notok});
  CHECK(after_text(deps) == "ok:3,any:4,notok:5,notok:6");
  CHECK(after_of(after_text(deps)) == deps);
  CHECK_THROWS_WITH_AS(parse_after("3:maybe", "--after"), "--after: '3:maybe': give JOB, JOB:ok, JOB:any or JOB:notok",
                       input_error);
  CHECK_THROWS_WITH_AS(parse_after("x", "--after"), "--after: 'x' is not a job id", input_error);
  CHECK_THROWS_AS(parse_after("", "--after"), input_error);
}

TEST_CASE("a dependency is met or never met by how its job ended") {
  using s = dependency_state;
  CHECK(dependency_state_of(after_kind::ok, std::nullopt) == s::waiting);
  CHECK(dependency_state_of(after_kind::ok, true) == s::met);
  CHECK(dependency_state_of(after_kind::ok, false) == s::never);
  CHECK(dependency_state_of(after_kind::any, false) == s::met);
  CHECK(dependency_state_of(after_kind::notok, false) == s::met);
  CHECK(dependency_state_of(after_kind::notok, true) == s::never);
}

TEST_CASE("a dependency that leads back to its job closes a cycle") {
  std::map<uint32_t, std::vector<job_dependency>> graph{{1, {{0, after_kind::ok}}}, {2, {{1, after_kind::any}}}};
  auto after = [&](uint32_t j) { return graph.count(j) ? graph[j] : std::vector<job_dependency>{}; };
  CHECK(closes_cycle(0, {{2, after_kind::ok}}, after));   // 0 -> 2 -> 1 -> 0
  CHECK_FALSE(closes_cycle(3, {{2, after_kind::ok}}, after));
  CHECK(closes_cycle(0, {{0, after_kind::ok}}, after));
}

TEST_CASE("--array reads ranges, lists, steps and a limit, and refuses what is not one") {
  auto a = parse_array("0-3,7,10-14:2%2", "--array");
  CHECK(a.ids == std::vector<uint32_t>{0, 1, 2, 3, 7, 10, 12, 14});
  CHECK(a.limit == 2);
  CHECK(array_ranges(a.ids) == "0-3,7,10,12,14");
  CHECK(parse_array("5", "--array").ids == std::vector<uint32_t>{5});
  CHECK_THROWS_WITH_AS(parse_array("0-3,2", "--array"), "--array: '0-3,2': task 2 is listed twice", input_error);
  CHECK_THROWS_WITH_AS(parse_array("3-1", "--array"), "--array: '3-1': '3-1': the range ends before it starts",
                       input_error);
  CHECK_THROWS_AS(parse_array("0-9%0", "--array"), input_error);
  CHECK_THROWS_AS(parse_array("0-5000", "--array"), input_error);
  CHECK_THROWS_AS(parse_array("a-b", "--array"), input_error);
  CHECK_THROWS_AS(parse_array("%4", "--array"), input_error);
}
