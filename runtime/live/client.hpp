#pragma once
/// Live mode's client commands (`aryl status`, `demand`, `submit`, `cancel`): one connection to `aryl serve`,
/// a hello with the cluster token, one request, its answer.
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "runtime/wire/messages.hpp"

namespace aryl::live {

struct client_options {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  std::string token;
  double timeout_s = 10;
};

/// Sends `request` and returns the reply, or nothing when none is expected (`demand`).
/// Throws aryl::input_error naming the scheduler's address for a refused connection, a
/// refusal (the scheduler's reason), a timeout or a malformed answer.
std::optional<wire::message> ask(const client_options& o, const wire::message& request, bool expect_reply);

/// Cancels a job; throws aryl::input_error with the scheduler's reason (naming the job) if
/// it refuses.
void cancel(const client_options& o, uint64_t job);

/// squeue/sinfo-like tables of a status reply.
void print_status(std::ostream& out, const wire::status_reply& s);

/// The status reply as one JSON object.
std::string status_json(const wire::status_reply& s);

} // namespace aryl::live
