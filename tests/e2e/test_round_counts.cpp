// summary.json's scheduling rounds by scope, on hand-made traces whose rounds are counted by
// hand.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "tests/e2e/run_helpers.hpp"

using namespace aryl;

namespace {

/// One 8-GPU V100 training server, no inference servers, policy aryl: the summary of a run
/// of `trace` under `rounds`.
nlohmann::json rounds_of(const std::string& name, scale_rounds rounds, const std::string& trace) {
  config c;
  c.trace_file = test::write_temp_file("rounds-" + name + ".csv", trace);
  c.check_invariants = true;
  c.training.servers = 1;
  c.inference.servers = 0;
  c.policy = "aryl";
  c.scheduler.rounds = rounds;
  c.out_dir = test::temp_dir("rounds-" + name + "-out");
  auto out = test::run(c);
  REQUIRE_MESSAGE(out.ok, out.error);
  auto s = nlohmann::json::parse(test::slurp(c.out_dir + "/summary.json"));
  CHECK(s.at("full_rounds") == out.summary.full_rounds);
  CHECK(s.at("local_rounds") == out.summary.local_rounds);
  return s;
}

/// Two rigid jobs that each take the server whole: a (submitted at 0, 100 s) and b (at 10,
/// 100 s). Rounds: at 0 (a starts), at 10 (b finds no room: nothing decided) and at 100 (a
/// ends, b starts); b's end at 200 ends the run.
const char* two_in_turn = "job_id,submit_s,gpus,duration_s,gpu_type,elastic\na,0,8,100,,0\nb,10,8,100,,0\n";

} // namespace

TEST_CASE("summary.json counts every round as full, and the one that decided nothing, when every round re-plans sizes") {
  auto s = rounds_of("every", scale_rounds::every, two_in_turn);
  CHECK(s.at("full_rounds") == 3);
  CHECK(s.at("full_rounds_deciding_nothing") == 1);  // at 10
  // Each round full, by what asked for it: the first, b's arrival, a's end.
  CHECK(s.at("full_rounds_by_cause") == nlohmann::json{{"first", 1}, {"arrival", 1}, {"end", 1}, {"loan", 0},
                                                        {"reclaim", 0}, {"cluster", 0}, {"timer", 0}});
  CHECK(s.at("starts_rounds") == 0);
  CHECK(s.at("local_rounds") == 0);
}

TEST_CASE("summary.json counts a rigid arrival's and a rigid job's end's rounds as local: no size may change") {
  // The run's first round is full (a scheduler starts with sizes to plan); a rigid
  // arrival or end gives no elastic job room to change, so the later two are local.
  auto s = rounds_of("arrivals", scale_rounds::arrivals, two_in_turn);
  CHECK(s.at("full_rounds") == 1);
  CHECK(s.at("full_rounds_deciding_nothing") == 0);
  CHECK(s.at("starts_rounds") == 0);
  CHECK(s.at("local_rounds") == 2);
}

TEST_CASE("summary.json counts an elastic arrival's round as a starts round when scale_rounds=capacity") {
  // a (rigid, 4 GPUs, 0 to 100 s) leaves 4 GPUs free; e (elastic, 2 to 4 workers) comes at 10
  // with room to grow: a starts round sizes it on the free GPUs, at its maximum. a's end at 100
  // then lets no size change: a local round. The first round (at 0) is full.
  auto s = rounds_of("capacity", scale_rounds::capacity,
                     "job_id,submit_s,gpus,duration_s,gpu_type,elastic,min_workers,max_workers\n"
                     "a,0,4,100,,0,,\ne,10,2,1000,,1,2,4\n");
  CHECK(s.at("full_rounds") == 1);
  CHECK(s.at("starts_rounds") == 1);
  CHECK(s.at("local_rounds") == 1);
}

namespace {

/// One 8-GPU server: a (rigid, 4 GPUs, 0 to 100 s), e (elastic, 2 to 6 workers, long) and q
/// (rigid, 8 GPUs, from 10 s, far longer than e, so it never stops e): q waits until e ends.
/// a's end at 100 frees GPUs e could grow onto while q queues. The run's summary and the
/// instants at which e scaled out.
std::pair<nlohmann::json, std::vector<double>> end_under_queue(const std::string& name, double end_period,
                                                               const std::string& more_rows = "",
                                                               double budget_per_s = 0, double budget_burst = 1) {
  config c;
  c.trace_file = test::write_temp_file("rounds-" + name + ".csv",
                                       "job_id,submit_s,gpus,duration_s,gpu_type,elastic,min_workers,max_workers\n"
                                       "a,0,4,100,,0,,\ne,0,2,20000,,1,2,6\nq,10,8,400000,,0,,\n" + more_rows);
  c.check_invariants = true;
  c.training.servers = 1;
  c.inference.servers = 0;
  c.policy = "aryl";
  c.scheduler.rescale_cooldown_s = 0;
  c.scheduler.end_scale_period_s = end_period;
  c.scheduler.scale_budget_per_s = budget_per_s;
  c.scheduler.scale_budget_burst = budget_burst;
  c.out_dir = test::temp_dir("rounds-" + name + "-out");
  auto out = test::run(c);
  REQUIRE_MESSAGE(out.ok, out.error);
  std::vector<double> outs;
  std::istringstream log(test::slurp(c.out_dir + "/events.log"));
  for (std::string line; std::getline(log, line);)
    if (line.find(" rescale job-1 ") != std::string::npos && line.find("| scale out") != std::string::npos)
      outs.push_back(std::stod(line));
  return {nlohmann::json::parse(test::slurp(c.out_dir + "/summary.json")), outs};
}

} // namespace

TEST_CASE("a job's end under a queue re-plans sizes only end_scale_period_s after the last full round") {
  // Rounds: at 0 full (a starts, e starts at 4 workers on the GPUs left); at 10 local (q finds no
  // room); at 100 local (a ends while q queues: no size changes); at 120 full (the end's
  // period is up: e grows onto a's GPUs); at e's end local (q starts; no elastic job left).
  auto [s, outs] = end_under_queue("end-waits", 120);
  CHECK(s.at("full_rounds") == 2);
  CHECK(s.at("local_rounds") == 3);
  CHECK(outs == std::vector<double>{120});
  CHECK(s.at("full_rounds_by_cause").at("first") == 1);
  CHECK(s.at("full_rounds_by_cause").at("end") == 1);  // at 120, its timer's round
  CHECK(s.at("full_rounds_by_cause").at("timer") == 0);
}

TEST_CASE("with end_scale_period_s 0, a job's end under a queue re-plans sizes at once") {
  auto [s, outs] = end_under_queue("end-at-once", 0);
  CHECK(s.at("full_rounds") == 2);  // at 0 and at 100
  CHECK(s.at("local_rounds") == 2);  // at 10 and at e's end
  CHECK(outs == std::vector<double>{100});
  CHECK(s.at("full_rounds_by_cause").at("end") == 1);
}

TEST_CASE("a full round for another cause between a job's end under a queue and its period's end takes the end's place") {
  // f (elastic, 1 to 2 workers) arrives at 110 with room to grow: a full round there sizes f
  // and grows e onto a's GPUs. The end's timer at 120 finds nothing waiting: no round. f's end
  // (e at its maximum) and e's end are local.
  auto [s, outs] = end_under_queue("end-overtaken", 120, "f,110,1,1000,,1,1,2\n");
  CHECK(s.at("full_rounds") == 2);   // at 0 and at 110
  CHECK(s.at("local_rounds") == 4);  // at 10, 100, f's end and e's end
  CHECK(outs == std::vector<double>{110});
  CHECK(s.at("full_rounds_by_cause").at("arrival") == 1);
  CHECK(s.at("full_rounds_by_cause").at("end") == 0);
}

TEST_CASE("a scale budget the bucket cannot pay makes a full round local and brings it when the bucket refills") {
  // With a budget of 0.01 valuations per second in a bucket of 1: the first round (at 0)
  // values no running elastic job; a's end at 100 (end_scale_period_s 0) values e, emptying
  // the bucket. f's arrival at 110 would value e again: the bucket holds 0.1, so the round is
  // local and a timer brings the full round at 200, when it holds 1 again.
  const std::string f = "f,110,1,1000,,1,1,2\n";
  auto [off, off_outs] = end_under_queue("budget-off", 0, f);
  auto [s, outs] = end_under_queue("budget", 0, f, 0.01, 1);
  CHECK(off.at("full_rounds_by_cause").at("arrival") == 1);  // f's, at 110
  CHECK(off.at("full_rounds_by_cause").at("timer") == 0);
  // The timer's round at 200 counts under what asked for its sizes: f's arrival.
  CHECK(s.at("full_rounds_by_cause").at("arrival") == 1);
  CHECK(s.at("full_rounds_by_cause").at("timer") == 0);
  CHECK(s.at("full_rounds") == off.at("full_rounds"));
  CHECK(s.at("local_rounds").get<int>() == off.at("local_rounds").get<int>() + 1);  // f's arrival
  CHECK(outs == std::vector<double>{100});  // e grew at a's end, paid from the full bucket
}

TEST_CASE("a scale budget of rate 0 is off, as is one that never runs dry: the run's events are the same") {
  auto events = [](const std::string& name, double rate, double burst) {
    config c;
    c.trace_file = test::write_temp_file("budget-zero.csv",
                                         "job_id,submit_s,gpus,duration_s,gpu_type,elastic,min_workers,max_workers\n"
                                         "a,0,4,100,,0,,\ne,0,2,20000,,1,2,6\nf,110,1,1000,,1,1,2\n");
    c.training.servers = 1;
    c.inference.servers = 0;
    c.policy = "aryl";
    c.scheduler.rescale_cooldown_s = 0;
    c.scheduler.scale_budget_per_s = rate;
    c.scheduler.scale_budget_burst = burst;
    c.out_dir = test::temp_dir("budget-zero-" + name);
    auto out = test::run(c);
    REQUIRE_MESSAGE(out.ok, out.error);
    return test::slurp(c.out_dir + "/events.log");
  };
  const auto off = events("off", 0, 1), off_big = events("off-big", 0, 1e9), ample = events("ample", 1e9, 1e9);
  CHECK(off.find(" rescale ") != std::string::npos);  // a run with sizes to re-plan
  CHECK(off == off_big);
  CHECK(off == ample);
  // ...while a budget that binds changes them (f's arrival waits for its full round).
  CHECK(off != events("binding", 0.01, 1));
}
