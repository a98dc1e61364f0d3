#include "runtime/live/serve.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <utility>

#include <sys/resource.h>

#include "runtime/sim/driver.hpp"
#include "runtime/outputs/effective_config.hpp"
#include "solvers/input_error.hpp"
#include "runtime/inputs/load_inputs.hpp"
#include "runtime/inputs/torchrun_command.hpp"
#include "runtime/live/gateway.hpp"
#include "runtime/live/history_answer.hpp"
#include "runtime/live/listen_policy.hpp"
#include "runtime/live/metrics.hpp"
#include "runtime/live/serve_state.hpp"
#include "runtime/live/token.hpp"
#include "runtime/wire/tls_stream.hpp"
#include "runtime/live/audit_log.hpp"
#include "runtime/live/gateway_access.hpp"
#include "runtime/live/identities.hpp"
#include "runtime/outputs/outputs.hpp"

namespace aryl::live {
namespace {

std::atomic<bool> told_to_stop{false};

/// How long /metrics and /healthz wait for the scheduler's status before answering 503.
constexpr std::chrono::milliseconds metrics_wait{1500};

extern "C" void on_stop_signal(int) {
  told_to_stop.store(true);
  // A second signal is not caught: the process ends at once.
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

/// Written under another name and renamed, so a reader never sees half a number.
void write_port_file(const std::string& path, uint16_t port) {
  if (path.empty()) return;
  auto tmp = path + ".tmp";
  std::ofstream(tmp) << port << '\n';
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw input_error(path + ": cannot write: " + ec.message());
}

/// Of a fault plan, what serve enacts itself: demand surges. Crashes happen to processes
/// (scripts/live_faults.py kills and restarts them); the scheduler learns of them as it would
/// of real ones, through the gateway's loss detection and the agents' exit reports.
std::vector<fault_event> enacted_here(std::vector<fault_event> plan, std::ostream& log) {
  std::vector<fault_event> here;
  size_t outside = 0;
  for (auto& e : plan) {
    if (e.what == fault_event::kind::surge) here.push_back(std::move(e));
    else ++outside;
  }
  if (!plan.empty())
    log << fmt::format("[serve] fault plan: {} surges enacted here; {} other faults are the testbed's to enact "
                       "(scripts/live_faults.py)\n",
                       here.size(), outside);
  return here;
}

/// live.max_connections, lowered so that every connection has a descriptor and serve keeps
/// some for itself (journal, outputs, metrics, workers' logs): past the cap a peer is refused
/// with a reason, where out of descriptors it could only be left waiting.
size_t connection_cap(int configured, std::ostream& log) {
  constexpr rlim_t kept = 64;
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return static_cast<size_t>(configured);
  auto room = r.rlim_cur > 2 * kept ? r.rlim_cur - kept : r.rlim_cur / 2;
  if (room >= static_cast<rlim_t>(configured)) return static_cast<size_t>(configured);
  log << fmt::format("[serve] at most {} connections (live.max_connections {}; open files limited to {})\n", room,
                     configured, r.rlim_cur);
  return static_cast<size_t>(room);
}

/// --join: the cluster is the agents that registered, each pool one GPU type and count (the
/// scheduler's model of a pool); their names replace t0.., i0...
void take_inventory(config& c, gateway& net, const serve_options& o, std::ostream& log) {
  auto joined = net.join_agents(static_cast<size_t>(o.join), std::chrono::milliseconds(static_cast<int64_t>(o.agent_wait_s * 1000)));
  auto refused = net.refused_joins();
  for (auto& why : refused) log << "[serve] --join: refused: " << why << "; the run goes on without it\n";
  if (joined.size() + refused.size() < static_cast<size_t>(o.join))
    throw input_error(fmt::format("serve: --join {}: only {} agent{} registered within {:g} s", o.join, joined.size(),
                                  joined.size() == 1 ? "" : "s", o.agent_wait_s));
  for (auto [cluster, pool] : {std::pair{&c.training, wire::pool_kind::training},
                               std::pair{&c.inference, wire::pool_kind::inference}}) {
    cluster->servers = 0;
    cluster->names.clear();
    const joined_machine* first = nullptr;
    for (auto& m : joined) {
      if (m.pool != pool) continue;
      if (!first) first = &m;
      if (m.gpu_type != first->gpu_type || m.gpus != first->gpus)
        throw input_error(fmt::format("serve: --join: agents {} ({} x {}) and {} ({} x {}) are in one pool; a pool has "
                                      "one GPU type and count",
                                      first->name, first->gpus, first->gpu_type, m.name, m.gpus, m.gpu_type));
      cluster->names.push_back(m.name);
    }
    if (!first) continue;
    cluster->servers = static_cast<int>(cluster->names.size());
    cluster->gpu_type = first->gpu_type;
    cluster->gpus_per_server = first->gpus;
  }
  validate_config(c);
  std::string names;
  for (auto& m : joined) names += (names.empty() ? "" : ", ") + m.name;
  log << fmt::format("[serve] inventory: {} training x {} {} and {} inference x {} {} joined: {}\n", c.training.servers,
                     c.training.gpus_per_server, c.training.gpu_type, c.inference.servers, c.inference.gpus_per_server,
                     c.inference.gpu_type, names);
}

/// --metrics-auth: a reader's or an admin's token, not revoked.
bearer_check metrics_bearer(std::shared_ptr<identity_registry> ids) {
  if (!ids) return {};
  return [ids](std::string_view token) { return metrics_refusal(*ids, token); };
}

} // namespace

int run_serve(config c, const serve_options& o, std::ostream& out, std::ostream& log) {
  // Each launch's real start-up (decision to running worker) shows in the outputs as that
  // many seconds times the speedup, which the simulation does not charge (docs/live.md,
  // "Fidelity").
  if (c.speedup > max_faithful_speedup)
    log << fmt::format("[serve] warning: --speedup {:g}: live timings were measured within 5% of the simulation's "
                       "up to {:g}x (docs/live.md, \"Fidelity\"); above, every launch's real start-up shows as "
                       "speedup times its seconds in JCTs\n",
                       c.speedup, max_faithful_speedup);
  if (o.metrics_tls && o.tls_cert_file.empty())
    throw input_error("serve: --metrics-tls serves the metrics with the listener's certificate: give --tls-cert and --tls-key");
  if (o.metrics_auth && o.identities_file.empty())
    throw input_error("serve: --metrics-auth checks readers' tokens: give --identities FILE");
  if (o.token_file.empty() == o.identities_file.empty())
    throw input_error("serve: give --identities FILE (a credential and role per user, node and operator) or, for a "
                      "loopback testbed, --token-file FILE (one cluster token for every peer)");
  check_listen_policy(o.bind, o.tls_cert_file, o.tls_key_file, o.insecure, !o.identities_file.empty());
  if (!o.tls_ca_file.empty() && o.tls_cert_file.empty())
    throw input_error("serve: --tls-ca asks agents and clients for certificates over TLS: give --tls-cert and --tls-key");
  if (o.join < 0) throw input_error(fmt::format("serve: --join {}: not a number of agents", o.join));
  c.mode = "wallclock";
  std::string note;
  run_inputs inputs;
  if (!o.no_workload) inputs = load_inputs(c, &note);
  else inputs.demand = load_inputs(c, &note).demand;
  if (!note.empty()) log << note;
  inputs.faults = enacted_here(std::move(inputs.faults), log);

  live_world world;
  serve_state state;
  // --join on a file that holds a run: the cluster is the journaled one, not a new inventory.
  if (!o.state_file.empty()) state = open_serve_state(o.state_file, c, inputs, world, log, o.join > 0);
  const bool take_new_inventory = o.join > 0 && !state.restoring;

  std::error_code ec;
  // Job ids start at 0 every new run: a previous run's checkpoints would be resumed by
  // mistake. A run carried on after a restart resumes from its own.
  auto checkpoints = std::filesystem::absolute(o.work_dir, ec) / "checkpoints";
  if (!state.restoring) std::filesystem::remove_all(checkpoints, ec);
  if (ec) throw input_error(checkpoints.string() + ": cannot clear the previous run's checkpoints: " + ec.message());
  std::filesystem::create_directories(checkpoints, ec);
  if (ec) throw input_error(checkpoints.string() + ": cannot create: " + ec.message());

  gateway_options g;
  g.bind = o.bind;
  g.port = o.port;
  if (!o.token_file.empty()) {
    g.token = read_token_file(o.token_file);
  } else {
    g.identities = std::make_shared<identity_registry>(o.identities_file);
    int admins = 0;
    for (auto& id : g.identities->all()) admins += id.who == role::admin && !id.revoked;
    log << fmt::format("[serve] identities: {} in {}{}\n", g.identities->all().size(), o.identities_file,
                       admins ? "" : "; no admin among them (aryl token create NAME --role admin --identities FILE)");
  }
  std::filesystem::create_directories(c.out_dir, ec);
  g.audit = std::make_shared<audit_log>(c.out_dir + "/audit.jsonl", [&log](const std::string& line) {
    log << "[serve] " << line << '\n' << std::flush;
  });
  g.tls_cert_file = o.tls_cert_file;
  g.tls_key_file = o.tls_key_file;
  g.tls_client_ca_file = o.tls_ca_file;
  g.checkpoint_root = checkpoints.string();
  g.stop_grace_s = o.stop_grace_s;
  g.default_estimate_s = c.default_estimate_s;
  for (auto& [name, t] : c.tenants) {
    if (!t.users.empty()) g.tenants.users[name] = t.users;
    if (t.max_priority) g.tenants.max_priority[name] = *t.max_priority;
  }
  g.allow_root_jobs = c.allow_root_jobs;
  g.master_port_first = static_cast<uint16_t>(c.master_port_first);
  g.master_port_count = static_cast<uint16_t>(std::min(c.master_port_count, 65536 - c.master_port_first));
  g.rdzv_endpoint = c.rdzv_endpoint;
  g.rdzv_last_call_s = c.rdzv_last_call_s;
  g.submit_limits = {static_cast<size_t>(c.max_active_submits), static_cast<size_t>(c.max_active_submits_per_address),
                     static_cast<size_t>(c.max_submit_bytes), c.submits_per_s};
  // The simulation's detection delay (faults.heartbeat_s x faults.missed_heartbeats simulated
  // seconds), so that a fault plays out at the same simulated times in both clocks; at least
  // five of the agents' 1 s heartbeats, or a busy machine would lose agents that are alive.
  g.loss_grace_s = std::max(c.heartbeat_s * c.missed_heartbeats / c.speedup, 5.0);
  // A restarted scheduler decides which of the workers the agents kept it adopts once
  // every agent has registered.
  g.hold_found_workers = state.restoring;
  g.hello_timeout_s = c.hello_timeout_s;
  g.max_before_hello = static_cast<size_t>(c.max_before_hello);
  g.max_before_hello_per_address = static_cast<size_t>(c.max_before_hello_per_address);
  g.pre_hello_closes_per_s = c.pre_hello_closes_per_s;
  g.max_connections = connection_cap(c.max_connections, log);
  g.join = take_new_inventory;
  // A machine of a GPU type the config has no speed for cannot be modelled: its agent is
  // refused naming the key to set, and the cluster is the other agents'.
  g.join_problem = [speeds = c.gpu_speed](const std::string& name, const std::string& type) {
    if (speeds.count(type)) return std::string{};
    return fmt::format("agent {} reports GPU type {}, which the config has no speed for: set gpu_speed.{}", name,
                       type, type);
  };
  // What clients may ask of any job, ended ones included (`aryl show`, `status --all`).
  auto book = std::make_shared<job_book>();
  for (auto& j : inputs.jobs) book->spec(j);
  for (auto& j : world.restored) book->spec(j.spec);
  // A run carried on: the histories begin with what the killed serve wrote.
  if (world.carry_on_outputs) {
    std::ifstream events(c.out_dir + "/events.log.partial", std::ios::binary);
    book->replay(std::string(std::istreambuf_iterator<char>(events), std::istreambuf_iterator<char>()));
  }
  world.on_event = [book](const event_record& e) { book->event(e); };
  world.on_job = [book](const job_record& r) { book->ended(r); };
  g.book = book;
  // `aryl history` while serve runs: from the state file, through the journal's connection.
  if (state.journal)
    g.history = [journal = state.journal](const wire::history_request& q) { return answer_history(*journal, q); };
  gateway net(g, log);

  if (state.journal) state.journal->watch_troubles(log);
  auto publish = [&, done = false]() mutable {
    if (std::exchange(done, true)) return;
    log << fmt::format("[serve] listening on {}:{}{}\n", o.bind, net.port(),
                       o.tls_cert_file.empty() ? "" : " (TLS)") << std::flush;
    write_port_file(o.port_file, net.port());
  };
  // A live inventory is whoever comes: the address is published before the cluster is known.
  if (take_new_inventory) {
    publish();
    take_inventory(c, net, o, log);
    state.run.cluster = cluster_fingerprint(c);  // journaled when the run starts
  }
  for (auto& m : cluster_machines(c))
    world.nodes.push_back(net.add_server(m.id, m.name, m.gpu_type, m.gpus,
                                         m.inference ? wire::pool_kind::inference : wire::pool_kind::training));
  world.workers.follow_workers = true;
  world.workers.node_per_server = &is_torchrun;
  world.workers.speedup = c.speedup;
  world.workers.command = c.worker_command;
  // The run is said to start once its scheduler answers clients: a status asked right after
  // that line must find the run, not "no run in progress".
  world.on_ready = [&net, &log](worker_router r) {
    const bool answers = r.status || r.status_async;
    net.set_router(std::move(r));
    if (answers) log << "[serve] every agent registered; the run starts\n" << std::flush;
  };
  world.until_stopped = o.until_stopped || o.no_workload;
  world.stop_requested = [] { return told_to_stop.load(); };

  std::unique_ptr<metrics_endpoint> metrics;
  if (o.metrics_port >= 0) {
    if (o.metrics_port > 65535) throw input_error(fmt::format("--metrics-port {}: not a port", o.metrics_port));
    // Asked without the gateway's lock, at most 1.5 s: a stuck scheduler makes /metrics and
    // /healthz answer 503 saying so, not hang (or, as zeros, lie), and is asked once at a time.
    using outcome = gateway::status_answer::outcome;
    metrics = std::make_unique<metrics_endpoint>(
        o.metrics_bind, static_cast<uint16_t>(o.metrics_port),
        [&net, journal = state.journal, restarts = world.scheduler_restarts] {
          auto s = net.status_within(metrics_wait);
          if (s.what == outcome::late)
            return health{false, fmt::format("the scheduler did not answer within {:g} s", metrics_wait.count() / 1e3)};
          // Machines that joined mid-run count as configured from then on.
          front_counts f{net.agents_configured(), net.agents_connected()};
          if (journal) {
            f.journal_failing = !journal->current_trouble().empty();
            f.journal_write_failures = journal->write_failures();
          }
          for (auto& a : net.agents_seen()) f.agents.push_back({a.server, a.connected, a.heard_s_ago});
          f.scheduler_restarts = restarts;
          f.version = ARYL_VERSION;
          return health{true, render_metrics(s.status, f)};
        },
        log,
        [&net] {
          // Healthy while a run is in progress: the scheduler answers its status.
          int connected = net.agents_connected();
          int configured = net.agents_configured();
          auto s = net.status_within(metrics_wait);
          if (s.what == outcome::no_run)
            return health{false, fmt::format("no run in progress: {} of {} agents connected", connected, configured)};
          if (s.what == outcome::late)
            return health{false, fmt::format("the scheduler did not answer within {:g} s: {} of {} agents connected",
                                             metrics_wait.count() / 1e3, connected, configured)};
          return health{true, fmt::format("ok: run in progress, {} of {} agents connected", connected, configured)};
        },
        metrics_limits{}, metrics_bearer(o.metrics_auth ? g.identities : nullptr),
        o.metrics_tls ? net::tls_server_context(o.tls_cert_file, o.tls_key_file) : nullptr);
    log << fmt::format("[serve] metrics on {}://{}:{}/metrics{}\n", o.metrics_tls ? "https" : "http", o.metrics_bind,
                       metrics->port(), o.metrics_auth ? " (bearer token of a reader or an admin)" : "");
    write_port_file(o.metrics_port_file, metrics->port());
  }
  publish();
  auto missing = net.wait_for_agents(std::chrono::milliseconds(static_cast<int64_t>(o.agent_wait_s * 1000)));
  if (!missing.empty()) {
    std::string names;
    for (auto& n : missing) names += (names.empty() ? "" : ", ") + n;
    throw input_error(fmt::format("serve: no agent registered within {:g} s for: {}", o.agent_wait_s, names));
  }
  if (state.restoring) net.settle_found_workers(plan_adoption(state, world, net.found_workers(), c, log));
  // Workers from before this serve that are not adopted were told to stop; no job of
  // theirs starts again before they have exited (checkpointing), or it would run twice.
  auto still = net.wait_for_found_workers(
      std::chrono::milliseconds(static_cast<int64_t>((o.stop_grace_s + 15) * 1000)));
  if (!still.empty()) {
    std::string names;
    for (auto& n : still) names += (names.empty() ? "" : ", ") + n;
    throw input_error(fmt::format("serve: workers from before this serve did not exit within {:g} s of their stop: {}",
                                  o.stop_grace_s + 15, names));
  }
  // Caught before the run is said to start (world.on_ready): a stop that follows that line at
  // once (an operator, a test) ends the run with its outputs, rather than killing serve
  // mid-write.
  told_to_stop.store(false);
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  begin_serve_state(state, world);
  auto result = run_simulation(c, std::move(inputs), nullptr, &world);
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  write_effective_config(c, c.out_dir + "/config.json");  // as simulate does
  if (told_to_stop.load()) log << "[serve] told to stop: active jobs cancelled, outputs written\n";
  // For good: the agents stop their (already stopped) workers and exit rather than wait
  // for a scheduler that is not coming back. A killed serve sends nothing, so its agents
  // reconnect to the one started again on its --state.
  // A run that failed sends nothing either: a scheduler's trouble never stops running work, and
  // the agents keep their workers for a serve started again on the same --state.
  if (told_to_stop.load() || result.ok)
    net.send_shutdown(told_to_stop.load() ? "serve was told to stop" : "the run is over", std::chrono::seconds(2));
  net.close();
  if (!result.ok) {
    log << "aryl: " << (result.exit_code == 3 ? "run stopped: " : "") << result.error << '\n';
    return result.exit_code;
  }
  if (!result.warning.empty()) log << "aryl: warning: " << result.warning << '\n';
  print_summary_table(out, result.summary);
  out << "outputs in " << c.out_dir << "/\n";
  return 0;
}

} // namespace aryl::live
