#include "runtime/live/serve_state.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <set>
#include <sstream>

#include "solvers/input_error.hpp"
#include "runtime/live/node_holds.hpp"
#include "runtime/live/registration_checks.hpp"
#include "solvers/control_chars.hpp"
#include "runtime/live/state_checks.hpp"

namespace aryl::live {
namespace {

int64_t unix_us_now() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// Machines that joined the run mid-way, checked as their registrations were: a name the
/// cluster lacks, of one of the run's GPU types, within the registration limits.
void take_joined(config& c, const std::vector<saved_machine>& joined, const std::string& path, std::ostream& log) {
  std::set<std::string> names;
  for (auto& m : cluster_machines(c)) names.insert(m.name);
  std::string listed;
  for (auto& m : joined) {
    auto why = registration_problem(wire::register_{m.name, m.gpu_type, static_cast<uint32_t>(std::max(m.gpus, 0)),
                                                    wire::pool_kind::training, {}});
    if (why.empty() && !names.insert(m.name).second) why = fmt::format("server '{}' is in the cluster already", m.name);
    if (why.empty() && m.gpu_type != c.training.gpu_type && !(c.inference.servers > 0 && m.gpu_type == c.inference.gpu_type))
      why = fmt::format("server '{}': GPU type {} is none of this run's", m.name, m.gpu_type);
    if (!why.empty()) throw input_error(fmt::format("{}: a machine that joined the run: {}", path, why));
    c.joined_servers.push_back({m.name, m.gpu_type, m.gpus});
    listed += fmt::format("{}{} ({} x {})", listed.empty() ? "" : ", ", m.name, m.gpus, m.gpu_type);
  }
  if (!listed.empty())
    log << fmt::format("[serve] state {}: machines that joined the run are in its cluster again: {}\n", path, listed);
}

} // namespace

std::vector<std::string> cluster_fingerprint(const config& c) {
  std::vector<std::string> out;
  for (auto& m : cluster_machines(c))
    out.push_back(fmt::format("{} {}x{} {}", m.name, m.gpu_type, m.gpus, m.inference ? "inference" : "training"));
  return out;
}

void take_fingerprint(config& c, const std::vector<std::string>& cluster, const std::string& path) {
  for (auto* pool : {&c.training, &c.inference}) {
    pool->servers = 0;
    pool->names.clear();
  }
  for (auto& line : cluster) {
    // "t0 V100x4 training"
    std::istringstream in(line);
    std::string name, size, pool;
    in >> name >> size >> pool;
    auto x = size.rfind('x');
    int gpus = x == std::string::npos ? 0 : std::atoi(size.c_str() + x + 1);
    auto* cl = pool == "training" ? &c.training : pool == "inference" ? &c.inference : nullptr;
    if (!cl || gpus <= 0 || name.empty())
      throw input_error(fmt::format("{}: the run's cluster: machine '{}' is not 'NAME TYPExGPUS POOL'", path,
                                    escape_control(line)));
    auto type = size.substr(0, x);
    if (cl->servers > 0 && (cl->gpu_type != type || cl->gpus_per_server != gpus))
      throw input_error(fmt::format("{}: the run's cluster: machine '{}' differs from the rest of its pool", path,
                                    escape_control(line)));
    cl->gpu_type = type;
    cl->gpus_per_server = gpus;
    cl->names.push_back(name);
    ++cl->servers;
  }
  validate_config(c);
}

serve_state open_serve_state(const std::string& path, config& c, run_inputs& inputs, live_world& world,
                             std::ostream& log, bool inventory_from_file) {
  serve_state s;
  s.journal = std::make_shared<state_journal>(path);
  // Its history is a simulation's: a live run's jobs would take the same ids.
  if (s.journal->simulated())
    throw input_error(fmt::format("{}: a simulation's database (aryl simulate --db), not a state file to serve on; give "
                                  "serve a file of its own",
                                  path));
  world.journal = s.journal;
  if (inventory_from_file && !s.journal->fresh()) {
    take_fingerprint(c, s.journal->load().run.cluster, path);
    log << fmt::format("[serve] state {}: --join: the cluster is the run's, as journaled ({} training, {} inference)\n",
                       path, c.training.servers, c.inference.servers);
  }
  s.run.cluster = cluster_fingerprint(c);
  s.run.trace_jobs = static_cast<uint32_t>(inputs.jobs.size());
  s.run.speedup = c.speedup;
  s.run.next_index = s.run.trace_jobs;
  if (s.journal->fresh()) {
    log << fmt::format("[serve] state {}: a new run, journaled there\n", path);
    return s;
  }
  auto saved = s.journal->load();
  auto refuse = [&](const std::string& why) {
    throw input_error(fmt::format("{}: the state of another run: {}; start it with its own config, or give a new "
                                  "--state file",
                                  path, why));
  };
  if (auto m = cluster_mismatch(saved.run.cluster, s.run.cluster); !m.empty()) refuse("cluster: " + m);
  if (saved.run.trace_jobs != s.run.trace_jobs)
    refuse(fmt::format("its workload has {} jobs, this one {}", saved.run.trace_jobs, s.run.trace_jobs));
  if (saved.run.speedup != s.run.speedup)
    refuse(fmt::format("it ran at --speedup {:g}, this one at {:g}", saved.run.speedup, s.run.speedup));

  check_saved_state(saved, s.run.trace_jobs, path);
  take_joined(c, saved.joined, path, log);
  std::vector<job_spec> active;
  for (auto& j : saved.jobs)
    if (j.status != saved_status::ended) active.push_back(j.spec);
  check_runnable(c, active, [&](const job_spec& j) { return fmt::format("{}: job {} ({})", path, j.index, j.name); });

  // Only a file whose run this is gets compacted: a refused one is left as it was.
  if (auto folded = s.journal->compact(); folded > 0)
    log << fmt::format("[serve] state {}: folded {} ended job{} into final records ({} rows in the file)\n", path,
                       folded, folded == 1 ? "" : "s", s.journal->rows());

  s.restoring = true;
  s.run.start_unix_us = saved.run.start_unix_us;
  s.run.scheduler_restarts = saved.run.scheduler_restarts + 1;
  std::set<uint32_t> have;
  uint32_t next = std::max(saved.run.next_index, s.run.trace_jobs);
  int ended = 0, running = 0, queued = 0;
  for (auto& j : saved.jobs) {
    have.insert(j.spec.index);
    next = std::max(next, j.spec.index + 1);
    (j.status == saved_status::ended ? ended : j.status == saved_status::running ? running : queued)++;
  }
  s.was_running = running;
  s.run.next_index = next;
  s.run.restarted_jobs = saved.run.restarted_jobs;
  s.run.adopted_jobs = saved.run.adopted_jobs;
  std::erase_if(inputs.jobs, [&](const job_spec& j) { return have.count(j.index) > 0; });
  world.restored = std::move(saved.jobs);
  world.first_free_index = next;
  world.scheduler_restarts = s.run.scheduler_restarts;
  world.measures = std::move(saved.measures);
  world.tenants = std::move(saved.tenants);
  world.carry_on_outputs = true;
  log << fmt::format("[serve] state {}: carrying on the run after a scheduler restart ({} so far): {} jobs ended, "
                     "{} were running, {} queued; {} trace jobs still to come\n",
                     path, s.run.scheduler_restarts, ended, running, queued, inputs.jobs.size());
  // Operators' holds ("cordon:REASON", "drain:REASON") carry on; the other rows are loans.
  world.holds = take_holds(saved.server_modes, c, *s.journal, path, log);
  if (!saved.server_modes.empty()) {
    // Loans carry on, so that jobs running on lent servers can be adopted there. A reclaim in
    // flight is not: its server is lent again, and the inference-load actor, which starts
    // afresh, asks for it anew if demand still needs it.
    std::string loans;
    for (auto& [name, mode] : saved.server_modes) {
      loans += fmt::format("{}{} {}", loans.empty() ? "" : ", ", name, mode);
      world.loaned.push_back(name);
      if (mode != "loaned") s.journal->put_server_mode(name, "loaned");
    }
    log << fmt::format("[serve] state {}: loans carry on ({}); a reclaim in flight is asked again if demand still "
                       "needs it\n",
                       path, loans);
  }
  return s;
}

std::set<uint32_t> plan_adoption(serve_state& s, live_world& world,
                                 const std::map<std::string, std::vector<wire::running_worker>>& found,
                                 const config& c, std::ostream& log) {
  std::map<std::string, machine> machines;
  for (auto& m : cluster_machines(c)) machines[m.name] = m;
  // job -> rank -> (server, GPUs) as listed; a rank listed twice is nobody's to adopt.
  std::map<uint32_t, std::map<uint32_t, std::pair<std::string, std::vector<uint32_t>>>> listed;
  std::set<uint32_t> doubtful;
  for (auto& [server, workers] : found)
    for (auto& w : workers) {
      auto job = static_cast<uint32_t>(w.job_id);
      if (w.job_id > UINT32_MAX || !listed[job].emplace(w.rank, std::pair{server, w.gpus}).second) doubtful.insert(job);
      // A worker that ended while the scheduler was away counts as where it ran if it
      // succeeded (its exit, passed on once the run resumes, ends the job once); one that
      // failed or was killed leaves its job to restart from its checkpoint, as a missing one does.
      if (w.exit_code && (*w.exit_code != 0 || w.exit_signal.value_or(0) != 0)) doubtful.insert(job);
    }
  std::set<uint32_t> adopted;
  std::map<std::string, std::set<uint32_t>> gpus_taken;
  for (auto& row : world.restored) {
    auto job = row.spec.index;
    if (row.status != saved_status::running || row.workers <= 0 || doubtful.count(job) || !listed.count(job)) continue;
    auto& ranks = listed[job];
    if (ranks.size() != static_cast<size_t>(row.workers)) continue;
    // The allocation "t0:2 t1:2" numbered ranks 0, 1 on t0 and 2, 3 on t1.
    std::vector<adopted_worker> plan;
    std::map<std::string, std::set<uint32_t>> gpus_here;
    bool fits = true;
    uint32_t rank = 0;
    std::istringstream alloc(row.alloc);
    std::string part;
    while (fits && alloc >> part) {
      auto colon = part.rfind(':');
      auto m = machines.find(part.substr(0, colon));
      int count = colon == std::string::npos ? 0 : std::atoi(part.c_str() + colon + 1);
      bool lent = m != machines.end() && std::count(world.loaned.begin(), world.loaned.end(), m->first) > 0;
      if (m == machines.end() || (m->second.inference && !lent) || count <= 0) fits = false;
      for (int i = 0; fits && i < count; ++i, ++rank) {
        auto r = ranks.find(rank);
        fits = r != ranks.end() && r->second.first == m->first && r->second.second.size() == 1 &&
               static_cast<int>(r->second.second[0]) < m->second.gpus &&
               !gpus_taken[m->first].count(r->second.second[0]) && gpus_here[m->first].insert(r->second.second[0]).second;
        if (fits) plan.push_back({m->second.id, rank, r->second.second[0]});
      }
    }
    if (!fits || rank != static_cast<uint32_t>(row.workers)) continue;
    for (auto& [server, g] : gpus_here) gpus_taken[server].insert(g.begin(), g.end());
    row.adopt = std::move(plan);
    adopted.insert(job);
  }
  auto restarted = static_cast<uint64_t>(s.was_running) - adopted.size();
  s.run.adopted_jobs += adopted.size();
  s.run.restarted_jobs += restarted;
  world.adopted_jobs = s.run.adopted_jobs;
  world.restarted_jobs = s.run.restarted_jobs;
  std::string names;
  for (auto j : adopted) names += (names.empty() ? "" : ", ") + std::to_string(j);
  log << fmt::format("[serve] of the {} jobs running when the scheduler went away, {} keep running, adopted{}{}; {} "
                     "restart from their checkpoints\n",
                     s.was_running, adopted.size(), names.empty() ? "" : ": jobs ", names, restarted);
  return adopted;
}

void begin_serve_state(serve_state& s, live_world& world) {
  if (!s.journal) return;
  auto now = unix_us_now();
  if (!s.restoring) s.run.start_unix_us = now;
  world.run_start_unix_us = s.run.start_unix_us;
  if (s.restoring)
    world.start_at_us =
        static_cast<int64_t>(static_cast<double>(std::max<int64_t>(0, now - s.run.start_unix_us)) * s.run.speedup);
  s.journal->put_run(s.run);
}

} // namespace aryl::live
