// Server actor: it owns its GPU slots and reports every placement that would break them.
#include <doctest/doctest.h>

#include "actors/server.hpp"
#include "solvers/cluster_ledger.hpp"
#include "tests/actors/sim_fixture.hpp"

using namespace aryl;
using namespace aryl::test;

namespace {
struct server_fixture : sim_fixture {
  std::shared_ptr<recorded> rec = std::make_shared<recorded>();
  recorder_actor recorder = sys->spawn(recording_recorder, rec);
  server_actor spawn(int mode) { return sys->spawn(server_behavior, std::string("t0"), 8, mode, recorder, nullptr); }
};
} // namespace

TEST_CASE_FIXTURE(server_fixture, "a server reports a placement beyond its GPUs") {
  auto s = spawn(static_cast<int>(server_mode::training));
  caf::anon_send(s, place_atom::value, uint32_t{1}, 6);
  caf::anon_send(s, place_atom::value, uint32_t{2}, 2);  // 8 of 8: fine
  drain();
  CHECK(rec->violations.empty());
  caf::anon_send(s, place_atom::value, uint32_t{3}, 1);  // the ninth GPU
  drain();
  REQUIRE(rec->violations.size() == 1);
  CHECK(rec->violations[0].find("job 3") != std::string::npos);
}

TEST_CASE_FIXTURE(server_fixture, "a round's changes to a server apply its removals before its placements") {
  auto s = spawn(static_cast<int>(server_mode::training));
  caf::anon_send(s, place_atom::value, uint32_t{1}, 8);
  drain();
  // Job 1 gives its 8 GPUs to jobs 2 and 3 in one round: fine only if it leaves first.
  caf::anon_send(s, changes_atom::value, std::vector<uint32_t>{1}, std::vector<uint32_t>{2, 3}, std::vector<int>{6, 2});
  drain();
  CHECK(rec->violations.empty());
  caf::anon_send(s, changes_atom::value, std::vector<uint32_t>{}, std::vector<uint32_t>{4}, std::vector<int>{1});
  caf::anon_send(s, changes_atom::value, std::vector<uint32_t>{1}, std::vector<uint32_t>{}, std::vector<int>{});
  drain();
  REQUIRE(rec->violations.size() == 2);  // a ninth GPU, and a job no longer there
  CHECK(rec->violations[0].find("job 4") != std::string::npos);
  CHECK(rec->violations[1].find("job 1 removed but not here") != std::string::npos);
}

TEST_CASE_FIXTURE(server_fixture, "a server that serves inference refuses training workers") {
  auto s = spawn(static_cast<int>(server_mode::serving));
  caf::anon_send(s, place_atom::value, uint32_t{1}, 1);
  drain();
  CHECK(rec->violations.size() == 1);
}

TEST_CASE_FIXTURE(server_fixture, "a loaned server goes back to serving only once its workers are gone") {
  auto s = spawn(static_cast<int>(server_mode::loaned));
  caf::anon_send(s, place_atom::value, uint32_t{1}, 4);
  caf::anon_send(s, mode_atom::value, static_cast<int>(server_mode::serving));
  drain();
  CHECK(rec->violations.size() == 1);
  caf::anon_send(s, remove_atom::value, uint32_t{1});
  caf::anon_send(s, mode_atom::value, static_cast<int>(server_mode::serving));
  drain();
  CHECK(rec->violations.size() == 1);
}
