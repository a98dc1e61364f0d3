#pragma once
/// `aryl hold`, `release` and `update`: a user's or an admin's changes to queued jobs (Slurm's
/// scontrol hold/release/update), and the JOB or JOB_TASK ids they and cancel/show take.
#include <CLI/CLI.hpp>

#include <functional>
#include <optional>
#include <ostream>
#include <string>

#include "runtime/live/client.hpp"

namespace aryl::cli {

/// A job as a command names it: "42", or "42_7" for task 7 of array 42 (as Slurm writes it).
struct job_ref {
  uint64_t job = 0;
  std::optional<uint32_t> task;
};
/// Throws input_error naming `what` for anything else.
job_ref parse_job_ref(const std::string& what, const std::string& text);

struct queue_commands {
  CLI::App* hold = nullptr;
  CLI::App* release = nullptr;
  CLI::App* update = nullptr;
  std::string job;
  int32_t priority = 0;
  std::string time_limit, after;
  uint32_t min_workers = 0, max_workers = 0;
  double duration = 0;
};

/// Adds the commands to `app`, each with the client flags `client_flags` adds.
void add_queue_commands(CLI::App& app, queue_commands& q, const std::function<void(CLI::App*)>& client_flags);
/// Runs the one given, if any (after `connect_to` filled `co`); false if none was.
bool run_queue_commands(queue_commands& q, const std::function<void(CLI::App*)>& connect_to,
                        const live::client_options& co, std::ostream& out);

/// `aryl cancel` of one array task (`JOB_TASK`): what it did, one line.
std::string cancel_task(const live::client_options& co, const job_ref& ref);

} // namespace aryl::cli
