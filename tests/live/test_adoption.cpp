// Which jobs a restarted scheduler adopts (runtime/live/serve_state: plan_adoption): only a
// job the journal has running whose every worker still runs where its allocation placed it.
#include <doctest/doctest.h>

#include <sstream>

#include "runtime/live/serve_state.hpp"

using namespace aryl;
using namespace aryl::live;

namespace {

saved_job job(uint32_t index, const std::string& status, const std::string& alloc, int workers) {
  saved_job j;
  j.spec.index = index;
  j.status = *enum_named<saved_status>(saved_status_names, status);
  j.alloc = alloc;
  j.workers = workers;
  return j;
}

/// (job, rank, gpu) listed by one agent.
std::vector<wire::running_worker> listed(std::vector<std::tuple<uint64_t, uint32_t, uint32_t>> ws) {
  std::vector<wire::running_worker> out;
  for (auto& [j, r, g] : ws) out.push_back({j, r, {g}, std::nullopt, std::nullopt, std::nullopt});
  return out;
}

} // namespace

TEST_CASE("a restarted scheduler adopts a job only if every worker runs where its allocation placed it") {
  config c;  // t0..t15 and i0..i15, 8 GPUs each
  serve_state s;
  live_world w;
  w.restored = {job(1, "running", "t0:2 t1:2", 4),   // all four ranks where they belong: adopted
                job(2, "running", "t2:2", 2),        // rank 1 missing (died while serve was away)
                job(3, "running", "t3:2", 2),        // found on t4: not where the journal put it
                job(4, "queued", "", 0),             // queued in the journal, yet running: stopped
                job(5, "running", "i0:2", 2),        // on an inference server the journal has not lent
                job(6, "running", "t6:2", 2),        // both ranks on one GPU
                job(7, "ended", "", 0)};
  s.was_running = 5;
  std::map<std::string, std::vector<wire::running_worker>> found{
      {"t0", listed({{1, 0, 3}, {1, 1, 4}})},
      {"t1", listed({{1, 2, 0}, {1, 3, 1}})},
      {"t2", listed({{2, 0, 0}})},
      {"t4", listed({{3, 0, 0}, {3, 1, 1}, {4, 0, 2}})},
      {"i0", listed({{5, 0, 0}, {5, 1, 1}})},
      {"t6", listed({{6, 0, 5}, {6, 1, 5}})}};
  std::ostringstream log;
  auto adopted = plan_adoption(s, w, found, c, log);
  CHECK(adopted == std::set<uint32_t>{1});
  REQUIRE(w.restored[0].adopt.size() == 4);
  CHECK(w.restored[0].adopt[0].server == 0);
  CHECK(w.restored[0].adopt[0].gpu == 3);
  CHECK(w.restored[0].adopt[2].server == 1);
  CHECK(w.restored[0].adopt[2].rank == 2);
  for (size_t i = 1; i < w.restored.size(); ++i) CHECK(w.restored[i].adopt.empty());
  CHECK(w.adopted_jobs == 1);
  CHECK(w.restarted_jobs == 4);
  CHECK(log.str().find("of the 5 jobs running when the scheduler went away, 1 keep running, adopted: jobs 1; 4 "
                       "restart from their checkpoints") != std::string::npos);
}

TEST_CASE("a restarted scheduler adopts a job on an inference server only if the journal has it lent") {
  config c;
  serve_state s;
  live_world w;
  w.loaned = {"i1"};
  w.restored = {job(1, "running", "i1:2", 2),   // lent: the loan carries on, and the job with it
                job(2, "running", "i2:2", 2)};  // not lent (any more): stopped
  s.was_running = 2;
  std::map<std::string, std::vector<wire::running_worker>> found{{"i1", listed({{1, 0, 0}, {1, 1, 1}})},
                                                                  {"i2", listed({{2, 0, 0}, {2, 1, 1}})}};
  std::ostringstream log;
  CHECK(plan_adoption(s, w, found, c, log) == std::set<uint32_t>{1});
  REQUIRE(w.restored[0].adopt.size() == 2);
  CHECK(w.restored[1].adopt.empty());
}

TEST_CASE("a restarted scheduler adopts no job whose rank two agents list") {
  config c;
  serve_state s;
  live_world w;
  w.restored = {job(1, "running", "t0:1 t1:1", 2)};
  s.was_running = 1;
  std::map<std::string, std::vector<wire::running_worker>> found{{"t0", listed({{1, 0, 0}, {1, 1, 1}})},
                                                                  {"t1", listed({{1, 1, 0}})}};
  std::ostringstream log;
  CHECK(plan_adoption(s, w, found, c, log).empty());
  CHECK(w.restarted_jobs == 1);
}

TEST_CASE("a restarted scheduler adopts a job whose workers ended with 0 while it was away, not one whose worker failed") {
  config c;
  serve_state s;
  live_world w;
  w.restored = {job(1, "running", "t0:2", 2),   // both ranks exited 0 unheard: adopted, ends once
                job(2, "running", "t1:2", 2),   // rank 1 exited 0, rank 0 still runs: adopted
                job(3, "running", "t2:2", 2)};  // rank 1 killed by a signal: restarts
  s.was_running = 3;
  auto ended = [](uint64_t j, uint32_t r, uint32_t g, int32_t code, uint32_t sig) {
    return wire::running_worker{j, r, {g}, std::nullopt, code, sig};
  };
  std::map<std::string, std::vector<wire::running_worker>> found{
      {"t0", {ended(1, 0, 0, 0, 0), ended(1, 1, 1, 0, 0)}},
      {"t1", {listed({{2, 0, 0}})[0], ended(2, 1, 1, 0, 0)}},
      {"t2", {listed({{3, 0, 0}})[0], ended(3, 1, 1, 0, 9)}}};
  std::ostringstream log;
  CHECK(plan_adoption(s, w, found, c, log) == std::set<uint32_t>{1, 2});
  CHECK(w.restored[0].adopt.size() == 2);
  CHECK(w.restored[1].adopt.size() == 2);
  CHECK(w.restored[2].adopt.empty());
  CHECK(w.restarted_jobs == 1);
}
