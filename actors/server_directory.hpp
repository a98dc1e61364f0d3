#pragma once
/// The server actors by id, shared by the scheduler and its jobs (a job launches its workers
/// through them). It grows while the run goes on when a machine joins (live mode), so reads
/// and the one kind of write are guarded: the scheduler and a job may run on two threads.
#include <mutex>
#include <vector>

#include "actors/server_protocol.hpp"

namespace aryl {

class server_directory {
 public:
  explicit server_directory(std::vector<server_actor> servers) : servers_(std::move(servers)) {}
  /// The server actor of id `id` (throws std::out_of_range for an id never added).
  server_actor at(size_t id) const {
    std::lock_guard lock(m_);
    return servers_.at(id);
  }
  /// Appends a joined machine's actor; its id is the previous size.
  void add(server_actor s) {
    std::lock_guard lock(m_);
    servers_.push_back(std::move(s));
  }
  size_t size() const {
    std::lock_guard lock(m_);
    return servers_.size();
  }

 private:
  mutable std::mutex m_;
  std::vector<server_actor> servers_;
};

} // namespace aryl
