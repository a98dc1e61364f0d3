#include "runtime/sim/driver.hpp"

#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <tuple>
#include <utility>

#include "runtime/sim/driver_parts.hpp"
#include "solvers/control_chars.hpp"
#include "solvers/input_error.hpp"
#include "solvers/priorities.hpp"
#include "runtime/inputs/input_limits.hpp"
#include "runtime/inputs/job_checks.hpp"
#include "runtime/outputs/outputs.hpp"
#include "runtime/inputs/tenant_plan.hpp"
#include "solvers/plural.hpp"

namespace aryl {

using drive_parts::cluster_plan;
using drive_parts::run_actors;
using drive_parts::run_frame;

namespace {

using wall = std::chrono::steady_clock;

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
  s.reclaim = reclaim_method_named(c.reclaim_method);
  s.params.model = power_law_model(c.eff_exponent);
  s.params.model.cross_server_eff = c.cross_server_eff;
  s.params.restart_overhead_s = c.restart_overhead_s;
  s.params.scale_overhead_s = c.scale_overhead_s;
  s.params.checkpoint_s = c.checkpoint_s;
  s.params.checkpoint_per_gpu_s = c.checkpoint_per_gpu_s;
  s.params.hold_prior_s = c.scheduler.hold_prior_s;
  s.params.hold_halflife_s = c.scheduler.hold_halflife_s;
  s.params.priority_aging_s = c.priorities_aging_s;
  s.params.priority_max_preemptions = c.priorities_max_preemptions;
  s.check_invariants = c.check_invariants;
  s.heartbeat_s = c.heartbeat_s;
  s.missed_heartbeats = c.missed_heartbeats;
  s.max_retries = c.max_retries;
  s.seed = c.seed;
  s.checkpoints = {.interval_s = c.checkpoint_interval_s,
                   .fixed_s = c.checkpoint_s,
                   .per_gpu_s = c.checkpoint_per_gpu_s,
                   .jitter = c.checkpoint_jitter,
                   .seed = c.seed};
  int train_type = type_id(s.type_names, c.training.gpu_type);
  int infer_type = c.inference.servers > 0 ? type_id(s.type_names, c.inference.gpu_type) : -1;
  for (auto& name : s.type_names) s.params.type_speed.push_back(c.gpu_speed.at(name));
  for (auto& m : cluster_machines(c)) {
    server_entry e;
    e.id = m.id;
    e.name = m.name;
    // A joined machine has one of the run's types (checked where it joined, and on restore).
    e.gpu_type = m.inference || m.gpu_type != c.training.gpu_type ? infer_type : train_type;
    e.gpus = e.free = m.gpus;
    e.home = m.inference ? server_home::inference : server_home::training;
    e.mode = m.inference ? server_mode::serving : server_mode::training;
    if (m.inference) p.inference_ids.push_back(e.id);
    s.servers.push_back(std::move(e));
  }
  return p;
}

} // namespace

std::vector<machine> cluster_machines(const config& c) {
  std::vector<machine> out;
  for (auto [cl, prefix, inference] : {std::tuple{&c.training, "t", false}, std::tuple{&c.inference, "i", true}})
    for (int i = 0; i < cl->servers; ++i)
      out.push_back({static_cast<int>(out.size()),
                     static_cast<size_t>(i) < cl->names.size() ? cl->names[static_cast<size_t>(i)]
                                                               : fmt::format("{}{}", prefix, i),
                     cl->gpu_type, cl->gpus_per_server, inference});
  for (auto& j : c.joined_servers) out.push_back({static_cast<int>(out.size()), j.name, j.gpu_type, j.gpus, false});
  return out;
}

/// A job that no cluster state could ever fit, or that could not finish before the
/// simulation horizon even alone on the slowest GPUs it may use, is an input error, not a
/// deadlock or an overflow.
/// `label` names the job in errors.
void drive_parts::check_runnable(const config& c, const scheduler_setup& s, const job_spec& j, const job_label& label_of) {
  // Every job of a trace is checked: its label is made only for an error.
  auto label = [&] { return label_of(j); };
  struct pool {
    const cluster_config* cluster;
    bool loaned;  ///< inference servers: usable only while lent to training
  };
  const pool pools[] = {{&c.training, false}, {&c.inference, true}};
  if (!j.gpu_type.empty() && std::find(s.type_names.begin(), s.type_names.end(), j.gpu_type) == s.type_names.end())
    throw input_error(fmt::format("{} needs GPU type {}, which the cluster lacks", label(), j.gpu_type));
  if (j.priority != 0 && !preempts_for_classes(s.policy)) {
    std::string those;
    for (auto& p : all_policies())
      if (preempts_for_classes(p)) those += (those.empty() ? "" : ", ") + p.name;
    throw input_error(fmt::format("{} has priority {}, but policy {} does not preempt lower classes for a job's "
                                  "class (policies that do: {}); give it priority 0 or choose one of those",
                                  label(), j.priority, s.policy.name, those));
  }
  bool scales = s.policy.elastic && j.elastic;
  bool may_loan = s.policy.loaning && (j.elastic || c.scheduler.inelastic_on_loaned);
  // A job's workers share one GPU type, so only same-type servers add up (by type, in the
  // pools' order: a map per job of a trace would cost more than the whole check).
  std::pair<const std::string*, int64_t> capacity[2];  // at most one type per pool
  size_t types = 0;
  for (auto& p : pools) {
    if (p.cluster->servers == 0 || (p.loaned && !may_loan)) continue;
    if (!j.gpu_type.empty() && p.cluster->gpu_type != j.gpu_type) continue;
    size_t t = 0;
    while (t < types && *capacity[t].first != p.cluster->gpu_type) ++t;
    if (t == types) capacity[types++] = {&p.cluster->gpu_type, 0};
    capacity[t].second += int64_t{p.cluster->servers} * p.cluster->gpus_per_server;
  }
  int64_t most = 0;
  for (size_t t = 0; t < types; ++t) most = std::max(most, capacity[t].second);
  // The scheduler floors a request the cluster cannot hold at what it can (floor_workers).
  int base = scales ? floor_workers(j.min_workers, j.gpus, j.max_workers, s.planner, static_cast<long>(most)) : j.gpus;
  double slowest = 0;
  for (size_t t = 0; t < types; ++t) {
    const double speed = c.gpu_speed.at(*capacity[t].first);
    if (capacity[t].second >= base && (slowest == 0 || speed < slowest)) slowest = speed;
  }
  if (base > most)
    throw input_error(fmt::format("{} needs {}{}; the cluster it may use has {}", label(), gpus_text(base),
                                  j.gpu_type.empty() ? "" : " of type " + j.gpu_type, most));
  // Half the horizon leaves room for the waits, restarts and rescales of a busy cluster.
  double alone_s = j.duration_s / work_rate(s.params.model, j.gpus, base, 1, slowest) + c.restart_overhead_s;
  if (j.submit.seconds() + alone_s > sim_time::horizon().seconds() / 2)
    throw input_error(fmt::format("{} would run {:.3g} s at {} workers on its slowest GPU type, past the "
                                  "simulation horizon of {:.0f} s; check its duration and the GPU speeds",
                                  label(), alone_s, base, sim_time::horizon().seconds()));
}

namespace {

void check_runnable(const config& c, const scheduler_setup& s, const std::vector<job_spec>& jobs) {
  const drive_parts::job_label label = [](const job_spec& j) { return fmt::format("job {} ({})", j.index, j.name); };
  for (auto& j : jobs) drive_parts::check_runnable(c, s, j, label);
}

/// When the last timed event that can give queued jobs somewhere to run falls due: a crashed
/// server's return, the end of a disconnect or bad link (a server noticed lost comes back
/// then), the scheduler's return, a demand surge, a fall in inference demand. Worker and
/// checkpoint faults only take away. Until then a quiet cluster is waiting, not stalled.
sim_time last_capacity_return(const std::vector<fault_event>& faults, const std::vector<demand_point>& demand) {
  using kind = fault_event::kind;
  sim_time last;
  auto later = [&](sim_time t) { last = std::max(last, t); };
  for (auto& e : faults) {
    if ((e.what == kind::server_crash && e.down_s >= 0) || e.what == kind::scheduler_crash)
      later(e.at + sim_time::from_seconds(e.down_s));
    else if (e.what == kind::disconnect || e.what == kind::link)
      later(e.at + sim_time::from_seconds(e.for_s));
    else if (e.what == kind::surge)
      later(e.at);
  }
  for (size_t i = 1; i < demand.size(); ++i)
    if (demand[i].servers_needed < demand[i - 1].servers_needed) later(demand[i].t);
  return last;
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

void configure_actor_system(caf::actor_system_config& cfg, bool simulated) {
  cfg.set("logger.file-verbosity", caf::atom("quiet"));
  cfg.set("logger.console-verbosity", caf::atom("quiet"));
  if (simulated) {
    cfg.set("scheduler.policy", caf::atom("testing"));
  } else {
    // One shared queue whose threads sleep until a message comes. Work stealing polls an
    // empty queue every 50 us for 500 polls after each message: with live mode's steady
    // trickle (heartbeats, worker output, clients) its two threads woke about 10,000 times a
    // second and slowed every other process on the scheduler's machine.
    cfg.set("scheduler.policy", caf::atom("sharing"));
    cfg.set("scheduler.max-threads", 2);
  }
}

timebase run_clock(caf::actor_system& sys, bool simulated, const config& c, const live_world* live) {
  timebase tb{sys.clock().now(), simulated ? 1.0 : c.speedup};
  // A run carried on after a restart goes on at the simulated time it has reached.
  if (live && live->start_at_us > 0) tb.origin -= tb.span(sim_time::from_us(live->start_at_us));
  return tb;
}

run_summary summary_header(const config& c, const live_world* live) {
  run_summary header;
  header.policy = c.policy;
  header.placement = c.scheduler.placement == placement_mode::count ? "count" : "consolidated";
  header.seed = c.seed;
  if (live) {
    header.scheduler_restarts = live->scheduler_restarts;
    header.restarts_after_scheduler_restart = live->restarted_jobs;
    header.adopted_after_scheduler_restart = live->adopted_jobs;
  }
  return header;
}

/// Spawns the recorder, the journal, the servers, the scheduler and the inference actor, in
/// that order. `index_space`: job indices taken by the trace and a restored journal.
run_actors spawn_cluster(run_frame& f, run_inputs& in, const std::shared_ptr<run_writer>& writer,
                         uint64_t restored_jobs, uint64_t index_space) {
  auto& [c, plan, sys, tb, status, live] = f;
  run_actors a;
  a.recorder = sys.spawn(recorder_behavior, std::shared_ptr<run_sink>(writer), status,
                         static_cast<uint64_t>(in.jobs.size()) + restored_jobs, summary_header(c, live),
                         live && live->until_stopped, index_space);
  if (live && live->journal) {
    a.journal = sys.spawn(journal_behavior, live->journal, a.recorder, std::chrono::milliseconds(2000),
                          static_cast<uint32_t>(c.state_compact_every));
    caf::anon_send(a.recorder, measures_to_atom::value, caf::actor_cast<caf::actor>(a.journal));
  }
  // Loans that carry on after a scheduler restart: lent from the start.
  std::vector<int> lent;
  if (live)
    for (auto& s : plan.setup.servers)
      if (std::count(live->loaned.begin(), live->loaned.end(), s.name) > 0 && s.home == server_home::inference) {
        s.mode = server_mode::loaned;
        lent.push_back(s.id);
      }
  for (auto& s : plan.setup.servers)
    a.servers.push_back(sys.spawn(server_behavior, s.name, s.gpus, static_cast<int>(s.mode), a.recorder,
                                  live ? live->nodes.at(static_cast<size_t>(s.id)) : nullptr));
  if (live) plan.setup.workers = live->workers;
  plan.setup.first_free_index = static_cast<uint32_t>(index_space);
  plan.setup.journal = a.journal;
  // Machines joining mid-run grow it: the machines' reports find their actors through it.
  a.directory = std::make_shared<server_directory>(a.servers);
  plan.setup.directory = a.directory;
  if (live) plan.setup.holds = live->holds;
  a.scheduler = sys.spawn(scheduler_behavior, plan.setup, a.servers, a.recorder, tb, plan.setup.params.model);
  if (!plan.inference_ids.empty()) {
    inference_setup is{.servers = plan.inference_ids,
                       .demand = std::move(in.demand),
                       .interval_s = c.inference_interval_s,
                       .headroom = c.inference_headroom,
                       .grace_s = c.inference_grace_s,
                       .gpus_per_server = c.inference.gpus_per_server,
                       .lend = plan.setup.policy.loaning,
                       .lent = lent};
    a.inference = sys.spawn(inference_behavior, std::move(is), a.scheduler, a.recorder, tb);
  }
  return a;
}

/// The trace's jobs, fed at their submit times, and the fault plan's faults.
void spawn_feeders(run_frame& f, run_actors& a, run_inputs& in) {
  a.feeder = f.sys.spawn(feeder_behavior, std::move(in.jobs), a.scheduler, f.tb);
  if (!in.faults.empty()) {
    std::map<std::string, int> ids;
    for (auto& s : f.plan.setup.servers) ids[s.name] = s.id;
    a.faults = f.sys.spawn(fault_behavior, std::move(in.faults), std::move(ids), a.scheduler, a.inference, a.recorder,
                           f.tb);
  }
}

/// A restarted scheduler takes its journal's jobs before any worker report can reach a
/// server actor: the adopted workers' servers and jobs know them by then (their messages are
/// queued before the answer, the router is set after it).
void restore_journal_jobs(run_frame& f, const run_actors& a) {
  if (!f.live || f.live->restored.empty()) return;
  caf::scoped_actor asker{f.sys};
  bool restored = false;
  asker->request(a.scheduler, std::chrono::seconds(30), restore_atom::value, f.live->restored)
      .receive([&](int) { restored = true; }, [](caf::error&) {});
  if (!restored)
    caf::anon_send(a.recorder, failed_atom::value, std::string("the scheduler did not take its journal's jobs within 30 s"),
                   4);
}

/// Every actor is stopped on every way out of a run. The inference actor re-arms its timer for
/// ever, and the test coordinator delivers pending timers when the system shuts down. In
/// wall-clock time the system does not wait for its actors at shutdown, so they are waited for
/// here (a bounded while: an actor that never ends must not hang the run's exit); on a loaded
/// machine one could still be running when the system went away, and its state leaked.
struct actor_stopper {
  caf::actor_system& sys;
  bool simulated;
  std::vector<caf::actor> actors;
  bool done = false;
  void run() {
    if (done) return;
    done = true;
    if (simulated) {
      for (auto& h : actors)
        if (h) caf::anon_send_exit(h, caf::exit_reason::user_shutdown);
      dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler()).run();
      return;
    }
    caf::scoped_actor self{sys};
    size_t waiting = 0;
    for (auto& h : actors)
      if (h) {
        self->monitor(h);
        self->send_exit(h, caf::exit_reason::user_shutdown);
        ++waiting;
      }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    bool late = false;
    while (waiting > 0 && !late) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      self->receive([&](caf::down_msg&) { --waiting; },
                    caf::after(std::max(left, std::chrono::milliseconds(0))) >> [&] { late = true; });
    }
  }
  ~actor_stopper() { run(); }
};

std::vector<caf::actor> every_actor(const run_actors& a) {
  std::vector<caf::actor> out{caf::actor_cast<caf::actor>(a.faults), caf::actor_cast<caf::actor>(a.scheduler),
                              caf::actor_cast<caf::actor>(a.recorder), caf::actor_cast<caf::actor>(a.feeder),
                              caf::actor_cast<caf::actor>(a.inference), caf::actor_cast<caf::actor>(a.journal)};
  for (auto& s : a.servers) out.push_back(caf::actor_cast<caf::actor>(s));
  return out;
}

/// The driving loop's progress line and stall check.
struct run_watch {
  const run_frame& f;
  std::ostream* progress;
  wall::time_point start_wall;
  wall::time_point last_report = start_wall;
  uint64_t total_jobs = 0;
  sim_time last_submit{};
  sim_time returns_until{};

  void report(bool force) {
    auto now = wall::now();
    if (!progress || (!force && now - last_report < std::chrono::seconds(2))) return;
    last_report = now;
    *progress << fmt::format("\r[aryl] t={:.2f} days  jobs done {}/{}  wall {:.1f} s", f.status->now_us.load() / 86400e6,
                             f.status->jobs_done.load(), total_jobs,
                             std::chrono::duration<double>(now - start_wall).count())
              << std::flush;
  }

  /// A job that can never be placed while the inference actor keeps ticking would run for
  /// ever. Pending submissions, running jobs (each has a finish timer) and pending returns of
  /// capacity are progress, however far apart: only a run where none is left and no job moved
  /// for the limit since the last of them is stuck (then `error` says so).
  bool stalled(sim_time now, std::string& error) const {
    // Serving until told to stop, an idle cluster is waiting for submissions.
    if (f.live && f.live->until_stopped) return false;
    if (now < last_submit || f.status->running_jobs.load() > 0 || now < returns_until) return false;
    auto moved = std::max(sim_time::from_us(f.status->last_job_event_us.load()), returns_until);
    if ((now - moved).seconds() <= f.c.stall_limit_s) return false;
    error = fmt::format("stalled: no job moved for {:.0f} s with {} of {} jobs finished, none running and "
                        "none left to submit",
                        f.c.stall_limit_s, f.status->jobs_done.load(), total_jobs);
    return true;
  }
};

/// Simulated time: delivers every message of an instant, then moves to the next timer, until
/// the run ends, fails, stalls or has nothing left pending. Returns the actor activations.
uint64_t drive_simulated(run_frame& f, const run_actors& a, run_watch& watch, run_outcome& out) {
  auto& sched = dynamic_cast<caf::scheduler::test_coordinator&>(f.sys.scheduler());
  auto& status = *f.status;
  uint64_t activations = 0, steps = 0;
  for (;;) {
    activations += sched.run();
    if (status.finished.load() || status.failed.load()) break;
    // Checked once every message of this instant is handled, so the instant counts.
    if (watch.stalled(f.tb.at(sched.clock().now()), out.error)) {
      out.error += "\n" + ask_dump(f.sys, sched, a.scheduler);
      break;
    }
    if (!sched.has_pending_timeout()) {
      out.error = fmt::format("deadlock: {} of {} jobs finished and nothing is pending\n{}", status.jobs_done.load(),
                              watch.total_jobs, ask_dump(f.sys, sched, a.scheduler));
      break;
    }
    sched.trigger_timeout();
    if ((++steps & 0xFFF) == 0) watch.report(false);
  }
  if (status.failed.load()) {
    out.error = status.failure;
    // An input error names its cause in one line; other failures come with the state.
    if (status.failure_code != 2) out.error += "\n" + ask_dump(f.sys, sched, a.scheduler);
  }
  return activations;
}

/// Wall clock: runs clients' requests on this thread while the actors run on theirs, until
/// the run ends, fails or stalls; a stop request drains the run first.
void drive_wallclock(run_frame& f, const run_actors& a, run_watch& watch, driver_tasks& tasks, run_outcome& out) {
  auto& status = *f.status;
  bool stopping = false;
  while (!status.finished.load(std::memory_order_acquire) && !status.failed.load()) {
    tasks.wait_for(std::chrono::milliseconds(5));
    tasks.run();
    if (!stopping && f.live && f.live->stop_requested && f.live->stop_requested()) {
      stopping = true;
      caf::anon_send_exit(a.feeder, caf::exit_reason::user_shutdown);
      caf::anon_send(a.scheduler, drain_atom::value);
    }
    watch.report(false);
    if (watch.stalled(f.tb.at(f.sys.clock().now()), out.error)) break;
  }
  if (status.failed.load()) out.error = status.failure;
}

/// A finished run's summary, with what only the driver measures.
void take_summary(run_outcome& out, const run_frame& f, uint64_t activations, wall::time_point start_wall) {
  auto& status = *f.status;
  if (!out.error.empty() || !status.finished.load()) return;
  out.ok = true;
  out.exit_code = 0;
  out.summary = status.summary;
  out.summary.actor_activations = activations;
  out.summary.sim_wall_s = std::chrono::duration<double>(wall::now() - start_wall).count();
  // A run carried on after scheduler restarts began with its first serve, not this one.
  if (f.live && f.live->run_start_unix_us > 0) {
    auto since_us = std::chrono::duration_cast<std::chrono::microseconds>(
                        std::chrono::system_clock::now().time_since_epoch()).count() - f.live->run_start_unix_us;
    out.summary.sim_wall_s = std::max(out.summary.sim_wall_s, static_cast<double>(since_us) / 1e6);
  }
  out.summary.max_timer_lag_s = static_cast<double>(status.max_lag_us.load()) / 1e6;
}

/// Spawns the actors and drives time until the run finishes or stops. The actor system lives
/// only in here: when this returns, no actor runs any more and the outputs can be closed.
run_outcome drive(const config& c, cluster_plan& plan, run_inputs in, const std::shared_ptr<run_writer>& writer,
                  std::ostream* progress, const live_world* live) {
  const bool simulated = c.mode == "simulated";
  const sim_time returns_until = last_capacity_return(in.faults, in.demand);
  caf::actor_system_config cfg;
  configure_actor_system(cfg, simulated);
  caf::actor_system sys{cfg};
  sys.await_actors_before_shutdown(false);
  run_frame f{c, plan, sys, run_clock(sys, simulated, c, live), std::make_shared<run_status>(), live};

  const uint64_t restored_jobs = live ? live->restored.size() : 0;
  uint64_t index_space = in.jobs.size();
  if (live) index_space = std::max<uint64_t>(index_space, live->first_free_index);
  run_watch watch{f, progress, wall::now()};
  watch.total_jobs = in.jobs.size() + restored_jobs;
  watch.last_submit = in.jobs.empty() ? sim_time{} : in.jobs.back().submit;
  watch.returns_until = returns_until;
  auto actors = spawn_cluster(f, in, writer, restored_jobs, index_space);
  // Clients' requests from the network thread, asked by the driver's loop.
  auto tasks = std::make_shared<driver_tasks>();
  // The machines' reports reach the server actors from the network thread until the run ends.
  struct router_guard {
    const live_world* live;
    ~router_guard() {
      if (live && live->on_ready) live->on_ready(worker_router{});
    }
  } guard{live};
  restore_journal_jobs(f, actors);
  if (live && live->on_ready) live->on_ready(drive_parts::make_router(f, actors, tasks));
  spawn_feeders(f, actors, in);
  actor_stopper stop_actors{sys, simulated, every_actor(actors)};

  run_outcome out;
  uint64_t activations = 0;
  if (simulated) activations = drive_simulated(f, actors, watch, out);
  else drive_wallclock(f, actors, watch, *tasks, out);
  if (f.status->failed.load()) out.exit_code = f.status->failure_code;
  if (progress && std::chrono::duration<double>(wall::now() - watch.start_wall).count() > 2) {
    watch.report(true);
    *progress << '\n';
  }
  // Machines that joined mid-run have server actors too, stopped as the others.
  for (size_t i = actors.servers.size(); i < actors.directory->size(); ++i)
    stop_actors.actors.push_back(caf::actor_cast<caf::actor>(actors.directory->at(i)));
  stop_actors.run();
  take_summary(out, f, activations, watch.start_wall);
  return out;
}

} // namespace

void check_runnable(const config& c, const std::vector<job_spec>& jobs,
                    const std::function<std::string(const job_spec&)>& label) {
  auto plan = plan_cluster(c);
  for (auto& j : jobs) drive_parts::check_runnable(c, plan.setup, j, label);
}

run_outcome run_simulation(const config& c, run_inputs in, std::ostream* progress, const live_world* live,
                           std::function<void(const job_record&)> on_job) {
  auto plan = plan_cluster(c);
  plan.setup.tenants = plan_tenants(c, in.jobs, plan.setup.params);
  if (live) restore_tenant_usage(plan.setup.tenants, live->tenants);
  check_runnable(c, plan.setup, in.jobs);
  if (!live) check_fault_jobs(in.faults, in.jobs.size());
  // Live: every line reaches the OS as it is written, so that a killed serve leaves its outputs
  // whole for the serve that carries its run on.
  auto writer = std::make_shared<run_writer>(c.out_dir, live != nullptr, live && live->carry_on_outputs);
  if (live) writer->restore_measures(live->measures);
  if (live) writer->observe(live->on_event, live->on_job);
  else if (on_job) writer->observe({}, std::move(on_job));
  if (!in.jobs.empty()) writer->set_window_end(in.jobs.back().submit.us);
  if (live && live->nodes.size() != plan.setup.servers.size())
    throw input_error(fmt::format("live: {} machines for {} configured servers", live->nodes.size(),
                                  plan.setup.servers.size()));
  auto out = drive(c, plan, std::move(in), writer, progress, live);
  if (out.ok) {
    writer->commit(out.summary);
    if (c.mode == "wallclock" && out.summary.max_timer_lag_s > c.max_lag_s)
      out.warning = fmt::format("the wall clock fell behind: a job finished {:.1f} simulated s after it was due "
                                "(run.max_lag_s={:g}) at --speedup {:g}; decisions may differ from simulated "
                                "time: lower the speedup",
                                out.summary.max_timer_lag_s, c.max_lag_s, c.speedup);
  } else {
    out.error += "\n" + writer->abandon();
  }
  return out;
}

} // namespace aryl
