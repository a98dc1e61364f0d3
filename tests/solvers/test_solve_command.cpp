// `aryl solve` JSON contract: answers for each problem, and exit 2 with one line naming
// the fault for malformed input.
#include <doctest/doctest.h>

#include <sstream>

#include <nlohmann/json.hpp>

#include "runtime/cli/solve_command.hpp"

using json = nlohmann::json;

namespace {

struct outcome {
  int code;
  std::string out, err;
  json answer() const { return json::parse(out); }
};

outcome run(const std::string& problem, const std::string& input, const std::string& method = "") {
  std::istringstream in(input);
  std::ostringstream out, err;
  int code = aryl::run_solve_command(problem, method, in, out, err);
  return {code, out.str(), err.str()};
}

/// Exit 2, nothing on out, exactly one line on err containing `needle`.
void check_rejected(const outcome& o, const std::string& needle) {
  CHECK(o.code == 2);
  CHECK(o.out.empty());
  CHECK(o.err.find(needle) != std::string::npos);
  CHECK(o.err.find('\n') == o.err.size() - 1);
}

} // namespace

TEST_CASE("solve mckp: choices are item indices or null, value is their sum") {
  // j1 gains 10,6,1 and j2 gains 8,7 per GPU; 4 GPUs: j1 and j2 take 2 each (16 + 15);
  // j3's single 5-GPU item does not fit.
  auto o = run("mckp", R"({"capacity": 4, "classes": [
      {"id": "j1", "items": [{"weight": 1, "value": 10}, {"weight": 2, "value": 16},
                             {"weight": 3, "value": 17}]},
      {"id": "j2", "items": [{"weight": 1, "value": 8}, {"weight": 2, "value": 15}]},
      {"id": "j3", "items": [{"weight": 5, "value": 100}]}]})");
  REQUIRE(o.code == 0);
  auto a = o.answer();
  CHECK(a["value"] == 31.0);
  CHECK(a["choices"] == json({{"j1", 1}, {"j2", 1}, {"j3", nullptr}}));
}

TEST_CASE("solve mckp: the method argument is ignored (there is one method)") {
  auto o = run("mckp", R"({"capacity": 1, "classes": [{"id": "a", "items": [{"weight": 1, "value": 2.5}]}]})",
               "greedy");
  REQUIRE(o.code == 0);
  CHECK(o.answer()["value"] == 2.5);
  CHECK(o.answer()["choices"]["a"] == 0);
}

TEST_CASE("solve mckp: malformed input exits 2 naming the field") {
  check_rejected(run("mckp", R"({"capacity": 4, "classes": [{"id": "j1", "items": [{"weight": 0, "value": 1}]}]})"),
                 "classes[0].items[0].weight: must be an integer in [1, 10000000]");
  check_rejected(run("mckp", R"({"classes": []})"), "capacity: missing");
  check_rejected(run("mckp", R"({"capacity": 2.5, "classes": []})"), "capacity: must be an integer");
  check_rejected(run("mckp", R"({"capacity": 4, "classes": [{"id": "a", "items": []}, {"id": "a", "items": []}]})"),
                 "classes[1].id: \"a\" repeats");
  check_rejected(run("mckp", R"({"capacity": 4, "classes": [{"id": "a", "items": [{"weight": 1, "value": "x"}]}]})"),
                 "classes[0].items[0].value: must be a finite number");
  check_rejected(run("mckp", "{\"capacity\": 4, "), "input is not valid JSON");
  check_rejected(run("mckp", "[1, 2]"), "input: must be a JSON object");
}

TEST_CASE("solve reclaim: greedy and exact return ids, preempted jobs and scale-ins") {
  // Job a: 2 workers on s1 and 2 on s2, min 3 (losing either server preempts it).
  // Job b: 1 worker on s3 and 1 on training server t1, min 1 (losing s3 scales it in).
  // Return 2: exact takes s1+s2 (one preemption); greedy takes s3 first (cheapest alone),
  // then s1: one preemption and one scale-in.
  const std::string in = R"({"count": 2,
      "loaned_servers": [{"id": "s1", "gpus": 4}, {"id": "s2", "gpus": 4}, {"id": "s3", "gpus": 4}],
      "jobs": [{"id": "a", "min_workers": 3, "gpus_per_worker": 1, "placement": {"s1": 2, "s2": 2}},
               {"id": "b", "min_workers": 1, "placement": {"s3": 1, "t1": 1}}]})";
  auto exact = run("reclaim", in, "exact");
  REQUIRE(exact.code == 0);
  CHECK(exact.answer() == json::parse(R"({"returned": ["s1", "s2"], "preempted": ["a"], "scaled_in": {}})"));
  auto greedy = run("reclaim", in, "greedy");
  REQUIRE(greedy.code == 0);
  CHECK(greedy.answer() == json::parse(R"({"returned": ["s1", "s3"], "preempted": ["a"], "scaled_in": {"b": 1}})"));
  CHECK(run("reclaim", in).out == greedy.out);  // greedy is the default
}

TEST_CASE("solve reclaim: malformed input exits 2 naming the field") {
  const std::string servers = R"("loaned_servers": [{"id": "s1", "gpus": 4}])";
  check_rejected(run("reclaim", "{\"count\": 2, " + servers + ", \"jobs\": []}"),
                 "count: must be an integer in [0, 1]");
  check_rejected(run("reclaim", "{\"count\": 1, " + servers +
                                    R"(, "jobs": [{"id": "a", "min_workers": 1, "placement": {"s1": 5}}]})"),
                 "jobs[0].placement.s1: workers on loaned server \"s1\" need more than its 4 GPUs");
  check_rejected(run("reclaim", "{\"count\": 1, " + servers +
                                    R"(, "jobs": [{"id": "a", "min_workers": 0, "placement": {}}]})"),
                 "jobs[0].min_workers: must be an integer >= 1");
  check_rejected(run("reclaim", "{\"count\": 1, " + servers + R"(, "jobs": [{"id": "a", "min_workers": 1}]})"),
                 "jobs[0].placement: missing");
  check_rejected(run("reclaim", "{\"count\": 1, " + servers + ", \"jobs\": []}", "random"),
                 "unknown method \"random\"");
}

TEST_CASE("solve reclaim: exact refuses more than 20 loaned servers") {
  std::string in = R"({"count": 1, "jobs": [], "loaned_servers": [)";
  for (int i = 0; i < 21; ++i) {
    if (i > 0) in += ",";
    in += R"({"id": "s)";
    in += std::to_string(i);
    in += R"(", "gpus": 8})";
  }
  in += "]}";
  check_rejected(run("reclaim", in, "exact"), "at most 20 loaned servers (got 21)");
  CHECK(run("reclaim", in, "greedy").code == 0);
}

TEST_CASE("solve place: best fit per request, unplaced listed") {
  // Consolidated, largest first: j2 (8) takes s1 whole; j1 (4) goes best-fit on s2 (5
  // free), leaving 1; j4 (2) then fits nowhere; j3 wants T4, which no server has.
  auto o = run("place", R"({"mode": "consolidated",
      "servers": [{"id": "s1", "gpu_type": "V100", "gpus": 8, "free_gpus": 8},
                  {"id": "s2", "gpu_type": "V100", "gpus": 8, "free_gpus": 5}],
      "requests": [{"id": "j1", "gpus": 4, "gpu_type": "V100"}, {"id": "j2", "gpus": 8},
                   {"id": "j3", "gpus": 1, "gpu_type": "T4"}, {"id": "j4", "gpus": 2}]})");
  REQUIRE(o.code == 0);
  CHECK(o.answer() == json::parse(R"({"placed": {"j1": {"s2": 4}, "j2": {"s1": 8}},
                                      "unplaced": ["j3", "j4"]})"));
}

TEST_CASE("solve place: count mode spreads over servers, and prefer is honoured") {
  // 6 GPUs, no server has 6 free: most-free first, s2 (4) then s1 (2 of 3).
  // Then k (1 GPU) prefers s3.
  auto o = run("place", R"({"mode": "count",
      "servers": [{"id": "s1", "gpu_type": "V100", "gpus": 8, "free_gpus": 3},
                  {"id": "s2", "gpu_type": "V100", "gpus": 8, "free_gpus": 4},
                  {"id": "s3", "gpu_type": "V100", "gpus": 8, "free_gpus": 2}],
      "requests": [{"id": "big", "gpus": 6}, {"id": "k", "gpus": 1, "prefer": ["s3"]}]})");
  REQUIRE(o.code == 0);
  CHECK(o.answer() == json::parse(R"({"placed": {"big": {"s1": 2, "s2": 4}, "k": {"s3": 1}},
                                      "unplaced": []})"));
}

TEST_CASE("solve place: free_gpus defaults to gpus") {
  auto o = run("place", R"({"mode": "count", "servers": [{"id": "s", "gpu_type": "A100", "gpus": 2}],
      "requests": [{"id": "r", "gpus": 2}]})");
  REQUIRE(o.code == 0);
  CHECK(o.answer()["placed"]["r"] == json({{"s", 2}}));
}

TEST_CASE("solve place: malformed input exits 2 naming the field") {
  const std::string servers = R"("servers": [{"id": "s1", "gpu_type": "V100", "gpus": 8, "free_gpus": 8}])";
  check_rejected(run("place", "{\"mode\": \"spread\", " + servers + ", \"requests\": []}"),
                 "mode: must be \"count\" or \"consolidated\"");
  check_rejected(run("place", "{" + servers + ", \"requests\": []}"), "mode: missing");
  check_rejected(run("place", R"({"mode": "count", "servers": [{"id": "s1", "gpu_type": "V100", "gpus": 8,
                                  "free_gpus": 9}], "requests": []})"),
                 "servers[0].free_gpus: must be an integer in [0, 8]");
  check_rejected(run("place", "{\"mode\": \"count\", " + servers +
                                  R"(, "requests": [{"id": "r", "gpus": 1, "prefer": ["s9"]}]})"),
                 "requests[0].prefer[0]: unknown server \"s9\"");
  check_rejected(run("place", "{\"mode\": \"count\", " + servers + R"(, "requests": [{"id": "r", "gpus": -1}]})"),
                 "requests[0].gpus: must be an integer >= 0");
}

TEST_CASE("solve: an unknown problem exits 2") {
  check_rejected(run("schedule", "{}"), "unknown problem \"schedule\"");
}
