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
