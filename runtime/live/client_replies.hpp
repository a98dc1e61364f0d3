#pragma once
/// What the gateway answers a client, made from the scheduler's status and the job book:
/// pure conversions, no network.
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "actors/cluster_status.hpp"
#include "solvers/job_spec.hpp"
#include "runtime/live/job_book.hpp"
#include "runtime/wire/messages.hpp"

namespace aryl::live {

/// An active job as status and show list it.
wire::job_info job_info_of(const active_job& j);

/// The status reply: active jobs, then `ended` (status --all), within the list limit; `away`:
/// servers whose agent is not connected now (unreachable until the scheduler acts on it).
wire::status_reply status_reply_of(const cluster_status& s, const std::set<std::string>& away,
                                   const std::vector<wire::job_info>& ended);

/// `aryl show`: what the book holds of `job`, with the scheduler's view of it if it is active;
/// nothing for a job neither knows (or a trace job not submitted yet). `book` may be null.
std::optional<wire::show_reply> show_reply_of(const cluster_status& now, const job_book* book, uint64_t job);

/// A client's submit as the scheduler takes it; without an estimate, `default_estimate_s`
/// and unpredicted.
job_spec spec_of(const wire::submit& j, double default_estimate_s);

} // namespace aryl::live
