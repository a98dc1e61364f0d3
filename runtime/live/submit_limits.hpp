#pragma once
/// What one client may ask of serve's queue: bounds on the jobs clients keep active (queued or
/// running), in all and per client address, on a submit's size, and on submits per second
/// per address, so that no single peer can take more than its bounded share of serve's memory
/// and journal. Pure bookkeeping: the gateway asks before it passes a submit on.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "solvers/job_spec.hpp"

namespace aryl::live {

struct submit_limit_options {
  size_t max_active = 10000;            ///< live.max_active_submits: clients' jobs active, in all
  size_t max_active_per_address = 1000;  ///< live.max_active_submits_per_address
  size_t max_submit_bytes = 65536;      ///< live.max_submit_bytes: name, command and tenant
  double submits_per_s = 20;            ///< live.submits_per_s: per address; bursts of twice that
};

class submit_limits {
 public:
  explicit submit_limits(submit_limit_options o = {}) : o_(o) {}

  /// Empty if a submit of `spec` from `address` may go on now; else why not, naming the limit
  /// (its config key). `ended(job)` says whether a job counted before has ended since.
  /// Takes one submit from the address's budget when it may. `repeat`: a repeat of a keyed
  /// submit, which takes no job, so only the rate applies.
  std::string admit(const std::string& address, const job_spec& spec, std::chrono::steady_clock::time_point now,
                    const std::function<bool(uint32_t)>& ended, bool repeat = false);
  /// A submit from `address` was taken as job `job`: it counts until it ends.
  void taken(const std::string& address, uint32_t job);

 private:
  struct bucket {
    double tokens = 0;
    std::chrono::steady_clock::time_point at{};
  };
  void forget_ended(const std::function<bool(uint32_t)>& ended);
  submit_limit_options o_;
  std::map<uint32_t, std::string> active_;     ///< job -> the address that submitted it
  std::map<std::string, size_t> per_address_;  ///< active jobs by address
  std::map<std::string, bucket> buckets_;
};

} // namespace aryl::live
