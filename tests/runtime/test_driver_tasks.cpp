#include <doctest/doctest.h>

#include <atomic>
#include <thread>

#include "runtime/sim/driver_tasks.hpp"

using namespace aryl;
using namespace std::chrono_literals;

TEST_CASE("a task posted from another thread ends the driver loop's wait at once, not at its timeout") {
  driver_tasks tasks;
  std::atomic<bool> ran{false};
  std::thread network([&] {
    std::this_thread::sleep_for(20ms);
    tasks.post([&] { ran = true; });
  });
  auto start = std::chrono::steady_clock::now();
  // A limit no test run reaches: returning before it proves the post woke the wait.
  CHECK(tasks.wait_for(std::chrono::hours(1)));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::minutes(10));
  CHECK_FALSE(ran);  // waiting does not run the work: the loop's thread does, in run()
  tasks.run();
  CHECK(ran);
  network.join();
}

TEST_CASE("the driver loop's wait ends at its limit when nothing is posted, and work posted before it is not missed") {
  driver_tasks tasks;
  CHECK_FALSE(tasks.wait_for(1ms));
  std::vector<int> order;
  tasks.post([&] { order.push_back(1); });
  tasks.post([&] { order.push_back(2); });
  CHECK(tasks.wait_for(std::chrono::hours(1)));  // already posted: no wait at all
  tasks.run();
  CHECK(order == std::vector<int>{1, 2});
  CHECK_FALSE(tasks.wait_for(1ms));  // run() took everything
}
