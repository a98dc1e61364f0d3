// Why a queued job waits (queue_wait_reason), one rule per case, from the ledger as a round
// left it. Servers of 8 GPUs: V100 training ones (type 0), T4 loaned ones (type 1).
#include <doctest/doctest.h>

#include "solvers/round_planner.hpp"
#include "tests/solvers/ledger_fixtures.hpp"

using namespace aryl;
using aryl::test::add_job;
using aryl::test::at;
using aryl::test::make_ledger;

namespace {

const std::vector<std::string> types{"V100", "T4"};

const policy_spec& policy(const char* name) { return *find_policy(name); }

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

} // namespace

TEST_CASE("queue reason: a job larger than every server it may use, lost ones aside, has no fit") {
  // t0, t1 of 8; t1 lost. Queue: job 0 (16 GPUs).
  auto l = make_ledger(2);
  add_job(l, 16, 100);
  l.set_mode(1, server_mode::down);
  auto why = queue_wait_reason(l, policy("fifo"), {}, 0, types);
  INFO(why);
  CHECK(has(why, "no fit on training servers: needs 16 GPUs, they have 8 in all (1 lost)"));
}

TEST_CASE("queue reason: an inelastic job that only loaned servers could hold is told they are for elastic jobs") {
  // t0 of 8 V100, i1 of 8 T4 lent to training. Queue: job 0 (12 GPUs, inelastic, any type).
  // With inelastic_on_loaned it may use them, and waits for free GPUs instead.
  auto l = make_ledger(1, 1);
  l.params.type_speed = {1.0, 1.0};
  l.servers[1].gpu_type = 0;  // same type, so that together they could hold it
  add_job(l, 12, 100);
  auto why = queue_wait_reason(l, policy("aryl"), {}, 0, types);
  INFO(why);
  CHECK(has(why, "loaned servers are for elastic jobs"));
  planner_options o;
  o.inelastic_on_loaned = true;
  CHECK_FALSE(has(queue_wait_reason(l, policy("aryl"), o, 0, types), "loaned servers"));
}

TEST_CASE("queue reason: under strict queue order a job that would fit waits behind the head") {
  // t0 of 8: job 0 runs on 4. Queue: job 1 (8 GPUs, head), job 2 (1 GPU, fits the 4 free).
  auto l = make_ledger(1);
  add_job(l, 4, 100);
  add_job(l, 8, 100, 1);
  add_job(l, 1, 100, 2);
  l.start(0, {{0, 4}}, 0, at(0));
  auto head = queue_wait_reason(l, policy("fifo"), {}, 1, types);
  auto behind = queue_wait_reason(l, policy("fifo"), {}, 2, types);
  INFO(head << " / " << behind);
  CHECK(has(head, "no fit on training servers: needs 8 GPUs, 4 free"));
  CHECK(has(behind, "behind job 1 in queue order (fifo)"));
  // With backfill nothing holds job 2 back but the round to come.
  planner_options o;
  o.backfill = true;
  CHECK(has(queue_wait_reason(l, policy("fifo"), o, 2, types), "fits now"));
}

TEST_CASE("queue reason: a job whose GPU type has too few GPUs free says which type it needs") {
  // t0 of 8 V100: job 0 runs on 6. Queue: job 1 (4 GPUs of V100).
  auto l = make_ledger(1);
  add_job(l, 6, 100);
  add_job(l, 4, 100, 1);
  l.jobs[1].gpu_type = 0;
  l.start(0, {{0, 6}}, 0, at(0));
  auto why = queue_wait_reason(l, policy("baseline"), {}, 1, types);
  INFO(why);
  CHECK(has(why, "needs 4 GPUs of type V100, 2 free"));
}

TEST_CASE("queue reason: a one-GPU job needs 1 GPU, not 1 GPUs") {
  // t0 of 8: job 0 runs on all 8. Queue: job 1 (1 GPU).
  auto l = make_ledger(1);
  add_job(l, 8, 100);
  add_job(l, 1, 100, 1);
  l.start(0, {{0, 8}}, 0, at(0));
  auto why = queue_wait_reason(l, policy("fifo"), {}, 1, types);
  INFO(why);
  CHECK(has(why, "needs 1 GPU, 0 free"));
  CHECK_FALSE(has(why, "1 GPUs"));
}
