#include "runtime/driver.hpp"

#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "actors/feeder.hpp"
#include "actors/inference_load.hpp"
#include "actors/recorder.hpp"
#include "actors/scheduler.hpp"
#include "actors/server.hpp"
#include "runtime/input_error.hpp"

namespace aryl {
namespace {

using wall = std::chrono::steady_clock;

struct cluster_plan {
  scheduler_setup setup;
  std::vector<int> inference_ids;
};

int type_id(std::vector<std::string>& names, const std::string& t) {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == t) return static_cast<int>(i);
  names.push_back(t);
  return static_cast<int>(names.size() - 1);
}

cluster_plan plan_cluster(const config& c) {
  cluster_plan p;
  auto* policy = find_policy(c.policy);
  if (!policy) throw input_error("config: unknown policy '" + c.policy + "'");
  auto& s = p.setup;
  s.policy = *policy;
  s.planner = c.scheduler;
  s.reclaim_method = c.reclaim_method;
  s.params.model = power_law_model(c.eff_exponent);
  s.params.restart_overhead_s = c.restart_overhead_s;
  s.params.scale_overhead_s = c.scale_overhead_s;
  s.check_invariants = c.check_invariants;
  int train_type = type_id(s.type_names, c.training.gpu_type);
  int infer_type = c.inference.servers > 0 ? type_id(s.type_names, c.inference.gpu_type) : -1;
  for (auto& name : s.type_names) s.params.type_speed.push_back(c.gpu_speed.at(name));
  auto add_servers = [&](const cluster_config& cl, int type, const char* prefix, server_home home) {
    for (int i = 0; i < cl.servers; ++i) {
      server_entry e;
      e.id = static_cast<int>(s.servers.size());
      e.name = fmt::format("{}{}", prefix, i);
      e.gpu_type = type;
      e.gpus = e.free = cl.gpus_per_server;
      e.home = home;
      e.mode = home == server_home::inference ? server_mode::serving : server_mode::training;
      if (home == server_home::inference) p.inference_ids.push_back(e.id);
      s.servers.push_back(std::move(e));
    }
  };
  add_servers(c.training, train_type, "t", server_home::training);
  add_servers(c.inference, infer_type, "i", server_home::inference);
  return p;
}

/// A job that no cluster state could ever fit is an input error, not a deadlock.
void check_runnable(const config& c, const scheduler_setup& s, const std::vector<job_spec>& jobs) {
  int train_gpus = c.training.servers * c.training.gpus_per_server;
  int infer_gpus = c.inference.servers * c.inference.gpus_per_server;
  bool same_type = c.training.gpu_type == c.inference.gpu_type;
  for (auto& j : jobs) {
    int base = (s.policy.elastic && j.elastic) ? j.min_workers : j.gpus;
    bool may_loan = s.policy.loaning && (j.elastic || c.scheduler.inelastic_on_loaned);
    // A job's workers share one GPU type, so only same-type servers add up.
    int capacity = !may_loan ? train_gpus : same_type ? train_gpus + infer_gpus : std::max(train_gpus, infer_gpus);
    if (base > capacity)
      throw input_error(fmt::format("job {} ({}) needs {} GPUs; the cluster it may use has {}", j.index, j.name,
                                    base, capacity));
    if (!j.gpu_type.empty() && std::find(s.type_names.begin(), s.type_names.end(), j.gpu_type) == s.type_names.end())
      throw input_error(fmt::format("job {} ({}) needs GPU type {}, which the cluster lacks", j.index, j.name,
                                    j.gpu_type));
  }
}

std::string ask_dump(caf::actor_system& sys, caf::scheduler::test_coordinator& sched, const scheduler_actor& s) {
  caf::scoped_actor self{sys};
  std::string out = "(no answer)";
  self->send(s, dump_atom::value);
  sched.run();
  self->receive([&](const std::string& text) { out = text; },
                caf::after(std::chrono::seconds(0)) >> [] {});
  return out;
}

} // namespace

run_outcome run_simulation(const config& c, run_inputs in, std::ostream* progress) {
  auto plan = plan_cluster(c);
  check_runnable(c, plan.setup, in.jobs);
  auto writer = std::make_shared<run_writer>(c.out_dir);
  if (!in.jobs.empty()) writer->set_window_end(in.jobs.back().submit.us);
  auto status = std::make_shared<run_status>();
  bool simulated = c.mode == "simulated";

  caf::actor_system_config cfg;
  cfg.set("logger.file-verbosity", caf::atom("quiet"));
  cfg.set("logger.console-verbosity", caf::atom("quiet"));
  if (simulated) cfg.set("scheduler.policy", caf::atom("testing"));
  else cfg.set("scheduler.max-threads", 2);
  caf::actor_system sys{cfg};
  sys.await_actors_before_shutdown(false);

  timebase tb{sys.clock().now(), simulated ? 1.0 : c.speedup};
  run_summary header;
  header.policy = c.policy;
  header.placement = c.scheduler.placement == placement_mode::count ? "count" : "consolidated";
  header.seed = c.seed;

  auto start_wall = wall::now();
  auto recorder = sys.spawn(recorder_behavior, writer, status, static_cast<uint64_t>(in.jobs.size()), header);
  std::vector<server_actor> servers;
  for (auto& s : plan.setup.servers)
    servers.push_back(sys.spawn(server_behavior, s.name, s.gpus, static_cast<int>(s.mode), recorder));
  auto scheduler = sys.spawn(scheduler_behavior, plan.setup, servers, recorder, tb, plan.setup.params.model);
  inference_actor inference;
  if (!plan.inference_ids.empty()) {
    inference_setup is{plan.inference_ids, std::move(in.demand), c.inference_interval_s, c.inference_headroom,
                       c.inference_grace_s, c.inference.gpus_per_server, plan.setup.policy.loaning};
    inference = sys.spawn(inference_behavior, std::move(is), scheduler, recorder, tb);
  }
  auto total_jobs = in.jobs.size();
  auto feeder = sys.spawn(feeder_behavior, std::move(in.jobs), scheduler, tb);

  // The inference actor re-arms its timer for ever, and the test coordinator delivers pending
  // timers when the system shuts down: every actor is stopped first, on every way out.
  struct stopper {
    caf::actor_system& sys;
    bool simulated;
    std::vector<caf::actor> actors;
    bool done = false;
    void run() {
      if (done) return;
      done = true;
      for (auto& h : actors)
        if (h) caf::anon_send_exit(h, caf::exit_reason::user_shutdown);
      if (simulated) dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler()).run();
    }
    ~stopper() { run(); }
  } stop_actors{sys, simulated, {caf::actor_cast<caf::actor>(scheduler), caf::actor_cast<caf::actor>(recorder),
                                 caf::actor_cast<caf::actor>(feeder), caf::actor_cast<caf::actor>(inference)}};
  for (auto& s : servers) stop_actors.actors.push_back(caf::actor_cast<caf::actor>(s));

  run_outcome out;
  auto last_report = start_wall;
  auto report = [&](bool force) {
    auto now = wall::now();
    if (!progress || (!force && now - last_report < std::chrono::seconds(2))) return;
    last_report = now;
    *progress << fmt::format("\r[aryl] t={:.2f} days  jobs done {}/{}  wall {:.1f} s", status->now_us.load() / 86400e6,
                             status->jobs_done.load(), total_jobs,
                             std::chrono::duration<double>(now - start_wall).count())
              << std::flush;
  };
  // A job that can never be placed while the inference actor keeps ticking would run for ever.
  auto stalled = [&](sim_time now) {
    if ((now - sim_time::from_us(status->last_job_event_us.load())).seconds() <= c.stall_limit_s) return false;
    out.error = fmt::format("stalled: no job moved for {:.0f} s with {} of {} jobs finished", c.stall_limit_s,
                            status->jobs_done.load(), total_jobs);
    return true;
  };
  if (simulated) {
    auto& sched = dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler());
    uint64_t steps = 0;
    for (;;) {
      sched.run();
      if (status->finished.load() || status->failed.load()) break;
      if (!sched.has_pending_timeout()) {
        out.error = fmt::format("deadlock: {} of {} jobs finished and nothing is pending\n{}",
                                status->jobs_done.load(), total_jobs, ask_dump(sys, sched, scheduler));
        break;
      }
      sched.trigger_timeout();
      if (stalled(tb.at(sched.clock().now()))) {
        out.error += "\n" + ask_dump(sys, sched, scheduler);
        break;
      }
      if ((++steps & 0xFFF) == 0) report(false);
    }
    if (status->failed.load()) out.error = status->failure + "\n" + ask_dump(sys, sched, scheduler);
  } else {
    while (!status->finished.load(std::memory_order_acquire) && !status->failed.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      report(false);
      if (stalled(tb.at(sys.clock().now()))) break;
    }
    if (status->failed.load()) out.error = status->failure;
  }
  if (progress && std::chrono::duration<double>(wall::now() - start_wall).count() > 2) {
    report(true);
    *progress << '\n';
  }
  stop_actors.run();

  if (out.error.empty() && status->finished.load()) {
    out.ok = true;
    out.summary = status->summary;
    out.summary.sim_wall_s = std::chrono::duration<double>(wall::now() - start_wall).count();
    std::ofstream(c.out_dir + "/summary.json") << summary_json(out.summary) << '\n';
  }
  return out;
}

} // namespace aryl
