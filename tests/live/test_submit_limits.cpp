// Bounds on clients' submits (runtime/live/submit_limits): active jobs in all and per address,
// a submit's size, and submits a second per address; each refusal names its config key.
#include <doctest/doctest.h>

#include <set>

#include "runtime/live/submit_limits.hpp"

using namespace aryl;
using namespace aryl::live;
using clock_type = std::chrono::steady_clock;

namespace {

job_spec job(const std::string& name, size_t command_bytes = 8) {
  job_spec j;
  j.name = name;
  j.command = {std::string(command_bytes, 'x')};
  return j;
}

} // namespace

TEST_CASE("submit limits: a submit larger than max_submit_bytes is refused naming the key") {
  submit_limits l({10, 10, 100, 1000});
  auto never = [](uint32_t) { return false; };
  auto now = clock_type::now();
  CHECK(l.admit("10.0.0.1", job("small", 50), now, never).empty());
  auto why = l.admit("10.0.0.1", job("big", 200), now, never);
  CHECK(why == "the job's name, command and tenant are 203 bytes; at most 100 (live.max_submit_bytes)");
}

TEST_CASE("submit limits: active jobs are bounded per address and in all, and an ended job frees its place") {
  submit_limits l({3, 2, 1000, 1000});
  std::set<uint32_t> ended;
  auto is_ended = [&](uint32_t j) { return ended.count(j) > 0; };
  auto now = clock_type::now();
  REQUIRE(l.admit("a", job("0"), now, is_ended).empty());
  l.taken("a", 0);
  REQUIRE(l.admit("a", job("1"), now, is_ended).empty());
  l.taken("a", 1);
  CHECK(l.admit("a", job("2"), now, is_ended) ==
        "jobs queued or running from a: 2, the most one address may keep (live.max_active_submits_per_address)");
  REQUIRE(l.admit("b", job("2"), now, is_ended).empty());
  l.taken("b", 2);
  CHECK(l.admit("c", job("3"), now, is_ended) ==
        "clients' jobs queued or running: 3, the most serve keeps (live.max_active_submits)");
  ended.insert(0);
  CHECK(l.admit("a", job("3"), now, is_ended).empty());
}

TEST_CASE("submit limits: past submits_per_s an address is refused until its budget refills, others are not") {
  submit_limits l({1000, 1000, 1000, 2});  // bursts of 4, then 2 a second
  auto never = [](uint32_t) { return false; };
  auto t = clock_type::now();
  for (int i = 0; i < 4; ++i) REQUIRE(l.admit("a", job("x"), t, never).empty());
  CHECK(l.admit("a", job("x"), t, never) == "more than 2 submits a second from a (live.submits_per_s): try again shortly");
  CHECK(l.admit("b", job("x"), t, never).empty());
  CHECK(l.admit("a", job("x"), t + std::chrono::milliseconds(600), never).empty());
}
