#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <vector>

namespace aryl {

/// Work handed to the driver's loop thread: actors are spawned only from there (spawning
/// from the network thread would tie CAF's logger to it and hang the actor system's
/// shutdown). The loop sleeps in `wait_for`, which a post ends at once: a client's status
/// is asked as soon as it comes, not at the loop's next poll.
class driver_tasks {
 public:
  void post(std::function<void()> f) {
    {
      std::lock_guard lock(m_);
      waiting_.push_back(std::move(f));
    }
    posted_.notify_one();
  }

  /// Until work is posted or `limit` has passed; true if work is waiting.
  bool wait_for(std::chrono::steady_clock::duration limit) {
    std::unique_lock lock(m_);
    return posted_.wait_for(lock, limit, [this] { return !waiting_.empty(); });
  }

  void run() {
    std::vector<std::function<void()>> now;
    {
      std::lock_guard lock(m_);
      now.swap(waiting_);
    }
    for (auto& f : now) f();
  }

 private:
  std::mutex m_;
  std::condition_variable posted_;
  std::vector<std::function<void()>> waiting_;
};

} // namespace aryl
