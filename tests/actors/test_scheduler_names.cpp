// The scheduler's typed settings and answers: each enum's names, and the words it is read from.
#include <doctest/doctest.h>

#include <string>

#include "actors/admit_refusal.hpp"
#include "actors/job_orders.hpp"
#include "actors/node_orders.hpp"
#include "actors/reclaim_method.hpp"
#include "actors/scheduler_state.hpp"
#include "solvers/input_error.hpp"

using namespace aryl;

TEST_CASE("a reclaim method is read from its name, and an unknown one is refused naming the key") {
  CHECK(reclaim_method_named("greedy") == reclaim_method::greedy);
  CHECK(reclaim_method_named("exact") == reclaim_method::exact);
  CHECK(to_string(reclaim_method::exact) == "exact");
  try {
    reclaim_method_named("best");
    FAIL("an unknown method was taken");
  } catch (const input_error& e) {
    CHECK(std::string(e.what()) == "scheduler.reclaim: 'best' is not greedy or exact");
  }
}

TEST_CASE("an admit's answer below 0 reads as its refusal, and an unknown one as no answer") {
  CHECK(refusal_of(answer_of(admit_refusal::stopping)) == admit_refusal::stopping);
  CHECK(refusal_of(-3) == admit_refusal::not_journaled);
  CHECK(refusal_of(-4) == admit_refusal::bad_array);
  CHECK(refusal_of(-9) == admit_refusal::no_answer);
  CHECK(to_string(admit_refusal::stopping) == "the run is stopping");
  CHECK(to_string(admit_refusal::bad_array) == "its --array is not a list of task ids");
}

TEST_CASE("orders and holds are read from the words clients and the journal use, and others are not") {
  for (auto a : {job_action::hold, job_action::release, job_action::update, job_action::cancel})
    CHECK(job_action_named(to_string(a)) == a);
  CHECK(!job_action_named("requeue"));
  CHECK(done_word(job_action::release) == "released");
  for (auto a : {node_action::cordon, node_action::drain, node_action::resume})
    CHECK(enum_named<node_action>(node_action_names, to_string(a)) == a);
  CHECK(!enum_named<node_action>(node_action_names, "Drain"));
  CHECK(hold_named("drain") == hold_kind::drain);
  CHECK(hold_named("cordon") == hold_kind::cordon);
  CHECK(!hold_named("up"));  // no hold: the journal keeps no row
  CHECK(to_string(hold_kind::none) == "up");
}
