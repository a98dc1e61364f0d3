// A round's working state (solvers/round/round_context.hpp) is owned by its caller and reused
// from one round to the next for its memory only: the decisions must not depend on it.
#include <doctest/doctest.h>

#include "solvers/round/round_context.hpp"
#include "solvers/round_planner.hpp"
#include "tests/solvers/ledger_fixtures.hpp"

using namespace aryl;
using aryl::test::add_job;
using aryl::test::at;
using aryl::test::make_ledger;

namespace {

/// Six V100 and two T4 servers, and 40 jobs of 1 to 8 GPUs (every third elastic) arriving
/// over 2,000 s.
cluster_ledger busy_ledger() {
  auto l = make_ledger(6, 2);
  for (int i = 0; i < 40; ++i)
    add_job(l, 1 + (i * 7) % 8, 500.0 + 300.0 * ((i * 13) % 11), 50.0 * i, i % 3 == 0);
  return l;
}

bool same(const decision& a, const decision& b) {
  return a.what == b.what && a.job == b.job && a.alloc == b.alloc && a.before == b.before &&
         a.gpu_type == b.gpu_type && a.why == b.why;
}

/// Runs rounds of every scope every 50 s on two copies of the ledger, one with a context kept
/// throughout and one with a fresh context per round, ending the longest-running job every
/// fourth round; the number of rounds whose decisions differ.
int rounds_that_differ(const planner_options& o) {
  auto kept_l = busy_ledger(), fresh_l = busy_ledger();
  const policy_spec& p = *find_policy("aryl");
  round_context kept;
  int differ = 0, decided = 0;
  const round_scope scopes[3] = {round_scope::full, round_scope::local, round_scope::starts};
  for (int r = 0; r < 60; ++r) {
    const auto now = at(50.0 * r);
    if (r % 4 == 3 && !kept_l.running.empty()) {
      const uint32_t id = *kept_l.running.begin();
      kept_l.finish(id, now);
      fresh_l.finish(id, now);
    }
    const auto scope = scopes[r % 3];
    auto a = plan_round(kept_l, p, o, now, kept, scope);
    auto b = plan_round(fresh_l, p, o, now, scope);
    decided += static_cast<int>(a.size());
    bool equal = a.size() == b.size();
    for (size_t i = 0; equal && i < a.size(); ++i) equal = same(a[i], b[i]);
    differ += equal ? 0 : 1;
  }
  REQUIRE(decided > 40);  // the rounds did decide: starts, stops and resizes
  return differ;
}

} // namespace

TEST_CASE("round context: a context kept over many rounds decides as a fresh one per round does") {
  planner_options o;
  o.placement = placement_mode::consolidated;
  CHECK(rounds_that_differ(o) == 0);
}

TEST_CASE("round context: so it does with servers held for a starved job") {
  planner_options o;
  o.placement = placement_mode::consolidated;
  o.reserve_after_s = 200;
  CHECK(rounds_that_differ(o) == 0);
}
