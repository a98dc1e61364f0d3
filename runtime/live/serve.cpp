#include "runtime/live/serve.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>

#include <sys/resource.h>

#include "runtime/driver.hpp"
#include "runtime/effective_config.hpp"
#include "runtime/input_error.hpp"
#include "runtime/inputs.hpp"
#include "runtime/live/gateway.hpp"
#include "runtime/live/metrics.hpp"
#include "runtime/live/serve_state.hpp"
#include "runtime/live/token.hpp"
#include "runtime/outputs.hpp"

namespace aryl::live {
namespace {

std::atomic<bool> told_to_stop{false};

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

} // namespace

int run_serve(config c, const serve_options& o, std::ostream& out, std::ostream& log) {
  if (o.token_file.empty()) throw input_error("serve: --token-file is required (the cluster token)");
  c.mode = "wallclock";
  std::string note;
  run_inputs inputs;
  if (!o.no_workload) inputs = load_inputs(c, &note);
  else inputs.demand = load_inputs(c, &note).demand;
  if (!note.empty()) log << note;
  inputs.faults = enacted_here(std::move(inputs.faults), log);

  live_world world;
  serve_state state;
  if (!o.state_file.empty()) state = open_serve_state(o.state_file, c, inputs, world, log);

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
  g.token = read_token_file(o.token_file);
  g.checkpoint_root = checkpoints.string();
  g.stop_grace_s = o.stop_grace_s;
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
  g.max_connections = connection_cap(c.max_connections, log);
  gateway net(g, log);

  for (auto& m : cluster_machines(c))
    world.nodes.push_back(net.add_server(m.id, m.name, m.gpu_type, m.gpus,
                                         m.inference ? wire::pool_kind::inference : wire::pool_kind::training));
  world.workers.follow_workers = true;
  world.workers.speedup = c.speedup;
  world.workers.command = c.worker_command;
  world.on_ready = [&net](worker_router r) { net.set_router(std::move(r)); };
  world.until_stopped = o.until_stopped || o.no_workload;
  world.stop_requested = [] { return told_to_stop.load(); };

  std::unique_ptr<metrics_endpoint> metrics;
  if (o.metrics_port >= 0) {
    if (o.metrics_port > 65535) throw input_error(fmt::format("--metrics-port {}: not a port", o.metrics_port));
    int configured = static_cast<int>(world.nodes.size());
    metrics = std::make_unique<metrics_endpoint>(
        o.metrics_bind, static_cast<uint16_t>(o.metrics_port),
        [&net, configured] {
          return render_metrics(net.status().value_or(cluster_status{}), {configured, net.agents_connected()});
        },
        log);
    log << fmt::format("[serve] metrics on http://{}:{}/metrics\n", o.metrics_bind, metrics->port());
    write_port_file(o.metrics_port_file, metrics->port());
  }
  log << fmt::format("[serve] listening on {}:{}\n", o.bind, net.port()) << std::flush;
  write_port_file(o.port_file, net.port());
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
  log << "[serve] every agent registered; the run starts\n" << std::flush;
  begin_serve_state(state, world);

  told_to_stop.store(false);
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  auto result = run_simulation(c, std::move(inputs), nullptr, &world);
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  write_effective_config(c, c.out_dir + "/config.json");  // as simulate does
  if (told_to_stop.load()) log << "[serve] told to stop: active jobs cancelled, outputs written\n";
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
