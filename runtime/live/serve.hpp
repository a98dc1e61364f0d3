#pragma once
/// `aryl serve`: the scheduler of live mode. The same actors as `aryl simulate`, on the wall
/// clock, with each server actor fronting the node agent of its machine and each job following
/// its real worker processes. Runs a workload (a trace or the synthetic one) and the jobs
/// clients submit to its end, or until SIGINT/SIGTERM, and writes the same outputs as a
/// simulation.
#include <cstdint>
#include <ostream>
#include <string>

#include "runtime/inputs/config.hpp"

namespace aryl::live {

struct serve_options {
  std::string bind = "127.0.0.1";
  /// TLS on the agent and client listener (PEM certificate chain and key); empty: plain TCP,
  /// which a non-loopback `bind` refuses unless `insecure` (check_listen_policy).
  std::string tls_cert_file, tls_key_file;
  /// With TLS: agents and clients must present a certificate signed by a CA in this file.
  std::string tls_ca_file;
  bool insecure = false;
  uint16_t port = 0;           ///< 0: the OS chooses; written to port_file
  std::string token_file;      ///< cluster-token mode (loopback only): the token every peer presents
  /// Per-identity credentials and roles (docs/security.md); required beyond loopback.
  std::string identities_file;
  std::string port_file;       ///< optional: the port, once listening (for scripts)
  double agent_wait_s = 60;    ///< how long to wait for every configured agent
  std::string work_dir = "live";  ///< checkpoints/ of every job live here (cleared at start)
  /// Journal the run here (SQLite); an existing file's run is carried on after a restart,
  /// its checkpoints kept. Empty: no journal.
  std::string state_file;
  double stop_grace_s = 10;    ///< SIGTERM to SIGKILL when a job's workers are stopped
  /// Prometheus metrics on http://metrics_bind:metrics_port/metrics; -1: none, 0: the OS
  /// chooses (written to metrics_port_file).
  int metrics_port = -1;
  std::string metrics_bind = "127.0.0.1";
  std::string metrics_port_file;
  /// /metrics and /healthz answer only a request bearing the token of a reader or an admin
  /// (`Authorization: Bearer TOKEN`); needs identities_file.
  bool metrics_auth = false;
  /// /metrics and /healthz over HTTPS with the listener's certificate (tls_cert_file).
  bool metrics_tls = false;
  /// Serve until SIGINT/SIGTERM, not only until every known job is done.
  bool until_stopped = false;
  /// No trace and no synthetic jobs: only submitted ones (implies until_stopped).
  bool no_workload = false;
  /// A live inventory: the cluster is the first `join` agents to register, with the names,
  /// GPU types, counts and pools they give (one type and count per pool); the config's
  /// cluster.* sizes are not used. 0: the config's static list (t0.., i0..).
  int join = 0;
};

/// The highest speedup at which live mode's mean JCT was measured within 5% of the
/// simulation's (docs/live.md, "Fidelity"); serve warns above it.
inline constexpr double max_faithful_speedup = 20;

/// Returns the process exit code (0 ok, 2 input error, 3 run stopped); `log` gets one line
/// per connection event, `out` the summary. Once every agent has registered, SIGINT and
/// SIGTERM stop the run in order: active jobs end as cancelled, outputs are written.
int run_serve(config c, const serve_options& o, std::ostream& out, std::ostream& log);

} // namespace aryl::live
