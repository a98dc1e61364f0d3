#include "runtime/live/serve.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "runtime/driver.hpp"
#include "runtime/input_error.hpp"
#include "runtime/inputs.hpp"
#include "runtime/live/gateway.hpp"
#include "runtime/live/token.hpp"
#include "runtime/outputs.hpp"

namespace aryl::live {

int run_serve(config c, const serve_options& o, std::ostream& out, std::ostream& log) {
  if (o.token_file.empty()) throw input_error("serve: --token-file is required (the cluster token)");
  c.mode = "wallclock";
  std::string note;
  auto inputs = load_inputs(c, &note);
  if (!note.empty()) log << note;

  std::error_code ec;
  // Job ids start at 0 every run: a previous run's checkpoints would be resumed by mistake.
  auto checkpoints = std::filesystem::absolute(o.work_dir, ec) / "checkpoints";
  std::filesystem::remove_all(checkpoints, ec);
  if (ec) throw input_error(checkpoints.string() + ": cannot clear the previous run's checkpoints: " + ec.message());
  std::filesystem::create_directories(checkpoints, ec);
  if (ec) throw input_error(checkpoints.string() + ": cannot create: " + ec.message());

  gateway_options g;
  g.bind = o.bind;
  g.port = o.port;
  g.token = read_token_file(o.token_file);
  g.checkpoint_root = checkpoints.string();
  g.stop_grace_s = o.stop_grace_s;
  gateway net(g, log);

  live_world world;
  for (auto& m : cluster_machines(c))
    world.nodes.push_back(net.add_server(m.id, m.name, m.gpu_type, m.gpus,
                                         m.inference ? wire::pool_kind::inference : wire::pool_kind::training));
  world.workers.follow_workers = true;
  world.workers.speedup = c.speedup;
  world.workers.command = c.worker_command;
  world.on_ready = [&net](worker_router r) { net.set_router(std::move(r)); };

  log << fmt::format("[serve] listening on {}:{}\n", o.bind, net.port()) << std::flush;
  if (!o.port_file.empty()) {
    // Written under another name and renamed, so a reader never sees half a number.
    auto tmp = o.port_file + ".tmp";
    std::ofstream(tmp) << net.port() << '\n';
    std::filesystem::rename(tmp, o.port_file, ec);
    if (ec) throw input_error(o.port_file + ": cannot write: " + ec.message());
  }
  auto missing = net.wait_for_agents(std::chrono::milliseconds(static_cast<int64_t>(o.agent_wait_s * 1000)));
  if (!missing.empty()) {
    std::string names;
    for (auto& n : missing) names += (names.empty() ? "" : ", ") + n;
    throw input_error(fmt::format("serve: no agent registered within {:g} s for: {}", o.agent_wait_s, names));
  }
  log << "[serve] every agent registered; the run starts\n" << std::flush;

  auto result = run_simulation(c, std::move(inputs), nullptr, &world);
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
