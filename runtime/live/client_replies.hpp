#pragma once
/// What the gateway answers a client, made from the scheduler's status and the job book:
/// pure conversions, no network.
#include <cstdint>
#include <map>
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

/// A server as status and show node list it; `away`: as status_reply_of's.
wire::server_info server_info_of(const server_report& v, const std::set<std::string>& away);

/// The status reply: active jobs, then `ended` (status --all), within the list limit; `away`:
/// servers whose agent is not connected now (unreachable until the scheduler acts on it);
/// `book` (may be null): who submitted each active job.
wire::status_reply status_reply_of(const cluster_status& s, const std::set<std::string>& away,
                                   const std::vector<wire::job_info>& ended, const job_book* book = nullptr);

/// `aryl show`: what the book holds of `job`, with the scheduler's view of it if it is active;
/// nothing for a job neither knows (or a trace job not submitted yet). `book` may be null.
std::optional<wire::show_reply> show_reply_of(const cluster_status& now, const job_book* book, uint64_t job);

/// What the gateway alone knows of a server's machine (its slot and its agent's connection).
struct node_presence {
  /// By job: the ranks launched there and not yet seen to exit.
  std::map<uint32_t, std::vector<uint32_t>> ranks;
  /// Seconds since its agent was last heard; nothing: no agent connected.
  std::optional<double> heard_s;
  /// Where its workers are reached; nothing: never registered.
  std::optional<std::string> address;
  /// Its agent's version; nothing: never registered, or not said.
  std::optional<std::string> version;
};

/// `aryl show node NAME`: the server as the scheduler reports it, its running jobs with their
/// workers there (and ranks from `there`), its agent; nothing for a server the scheduler does
/// not know.
std::optional<wire::show_node_reply> show_node_reply_of(const cluster_status& s, const std::set<std::string>& away,
                                                       const std::string& server, const node_presence& there);

/// A client's submit as the scheduler takes it; without an estimate, `default_estimate_s`
/// and unpredicted.
job_spec spec_of(const wire::submit& j, double default_estimate_s);

} // namespace aryl::live
