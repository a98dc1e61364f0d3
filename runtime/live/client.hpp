#pragma once
/// Live mode's client commands (`aryl status`, `demand`, `submit`, `cancel`): one connection to `aryl serve`,
/// a hello with the cluster token, one request, its answer.
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <set>
#include <string>

#include "runtime/wire/messages.hpp"

namespace aryl::live {

struct client_options {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  std::string token;
  double timeout_s = 10;
  /// Speak TLS and trust only the CA (PEM) in this file; the server's certificate must name
  /// `host`. Empty: plain TCP, to a loopback address only unless `insecure`.
  std::string tls_ca_file;
  /// Plain TCP to an address that is not loopback too (--insecure): the token crosses the
  /// network in the clear.
  bool insecure = false;
  /// With TLS: the certificate and key (PEM) presented to a serve that asks for one.
  std::string tls_cert_file, tls_key_file;
};

/// Where a command finds the scheduler and its token. `host`, `port`, `token_file`: the
/// flags, empty when not given. Without --port the address is ARYL_ADDR ("HOST:PORT"),
/// without --token-file the file is ARYL_TOKEN_FILE; `env` looks a variable up (nullptr:
/// unset). Throws aryl::input_error naming the command and the flag or variable that is
/// missing or malformed; no token file is no error with a TLS client `certificate` (an
/// identity's credential; token_file is then empty).
struct endpoint {
  std::string host;
  uint16_t port = 0;
  std::string token_file;
};
endpoint resolve_endpoint(const std::string& command, const std::string& host, std::optional<uint16_t> port,
                          const std::string& token_file, const std::function<const char*(const char*)>& env,
                          bool certificate = false);

/// Sends `request` and returns the reply, or nothing when none is expected (`demand`).
/// Throws aryl::input_error naming the scheduler's address for a refused connection, a
/// refusal (the scheduler's reason, also when it closed the connection while the request was
/// being sent), a timeout or a malformed answer. Throws before connecting when plain TCP is
/// not allowed (net::plain_text_refusal) or when the request's frame is over the protocol's
/// limit (wire::default_max_frame_bytes; the message names the limit and what to shrink).
std::optional<wire::message> ask(const client_options& o, const wire::message& request, bool expect_reply);

/// Sends `first`, then each request `next` makes of the reply before it, on one connection,
/// until `next` returns none (a client that pages through an answer: `aryl history`). Throws
/// as ask does; and what `next` throws.
void ask_each(const client_options& o, const wire::message& first,
              const std::function<std::optional<wire::message>(const wire::message& reply)>& next);

/// Cancels a job and returns what it did, one line ("cancelled job 7 (train): it was running
/// on 4 workers, stopped"); throws aryl::input_error with the scheduler's reason (naming the
/// job) if it refuses.
std::string cancel(const client_options& o, uint64_t job);

/// `aryl logs`: writes the output of (job, rank) to `out` from its start; with `follow`, goes
/// on asking every `poll_s` seconds while the job is active (as `tail -f`). Throws
/// aryl::input_error with the scheduler's reason (no such worker, its agent away).
void logs(const client_options& o, uint64_t job, std::optional<uint32_t> task, uint32_t rank, bool follow,
          std::ostream& out, double poll_s = 1);

/// squeue/sinfo-like tables of a status reply: active jobs with their size, GPU type, run
/// time, servers and why each queued one waits; then ended ones (if listed) with their
/// outcome; then the servers.
/// `ids`: the JOB column of each job (fold_arrays'); empty: their ids.
void print_status(std::ostream& out, const wire::status_reply& s, const std::vector<std::string>& ids = {});

/// The status reply as one JSON object; with `job_keys`, each job keeps only those keys.
std::string status_json(const wire::status_reply& s, const std::set<std::string>& job_keys = {});

/// `aryl show JOB` (as `scontrol show job`): the spec, state, every allocation change with
/// its time and reason, the outcome.
void print_show(std::ostream& out, const wire::show_reply& s);

/// The show reply as one JSON object.
std::string show_json(const wire::show_reply& s);

/// `aryl show node NAME` (as `scontrol show node`): the server's size, state, hold, agent
/// (address, when it was last heard) and the jobs with workers there, with their ranks.
void print_show_node(std::ostream& out, const wire::show_node_reply& r);

/// The show node reply as one JSON object.
std::string show_node_json(const wire::show_node_reply& r);

} // namespace aryl::live
