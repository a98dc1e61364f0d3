#include "runtime/sim/driver.hpp"

#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <map>
#include <tuple>

#include "actors/admit_refusal.hpp"
#include "actors/fault_injector.hpp"
#include "actors/feeder.hpp"
#include "actors/inference_load.hpp"
#include "actors/journal.hpp"
#include "actors/recorder.hpp"
#include "actors/scheduler.hpp"
#include "actors/server.hpp"
#include "runtime/sim/driver_tasks.hpp"
#include "solvers/control_chars.hpp"
#include "solvers/input_error.hpp"
#include "solvers/priorities.hpp"
#include "runtime/inputs/input_limits.hpp"
#include "runtime/inputs/job_checks.hpp"
#include "runtime/outputs/outputs.hpp"
#include "runtime/inputs/tenant_plan.hpp"
#include "runtime/inputs/torchrun_command.hpp"
#include "solvers/plural.hpp"

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
  s.checkpoints = {c.checkpoint_interval_s, c.checkpoint_s, c.checkpoint_per_gpu_s, c.checkpoint_jitter, c.seed};
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

namespace {

/// A job that no cluster state could ever fit, or that could not finish before the
/// simulation horizon even alone on the slowest GPUs it may use, is an input error, not a
/// deadlock or an overflow.
/// `label` names the job in errors.
void check_runnable(const config& c, const scheduler_setup& s, const job_spec& j, const std::string& label) {
  struct pool {
    const cluster_config* cluster;
    bool loaned;  ///< inference servers: usable only while lent to training
  };
  const pool pools[] = {{&c.training, false}, {&c.inference, true}};
  if (!j.gpu_type.empty() && std::find(s.type_names.begin(), s.type_names.end(), j.gpu_type) == s.type_names.end())
    throw input_error(fmt::format("{} needs GPU type {}, which the cluster lacks", label, j.gpu_type));
  if (j.priority != 0 && !preempts_for_classes(s.policy)) {
    std::string those;
    for (auto& p : all_policies())
      if (preempts_for_classes(p)) those += (those.empty() ? "" : ", ") + p.name;
    throw input_error(fmt::format("{} has priority {}, but policy {} does not preempt lower classes for a job's "
                                  "class (policies that do: {}); give it priority 0 or choose one of those",
                                  label, j.priority, s.policy.name, those));
  }
  bool scales = s.policy.elastic && j.elastic;
  bool may_loan = s.policy.loaning && (j.elastic || c.scheduler.inelastic_on_loaned);
  // A job's workers share one GPU type, so only same-type servers add up.
  std::map<std::string, int64_t> capacity;
  for (auto& p : pools) {
    if (p.cluster->servers == 0 || (p.loaned && !may_loan)) continue;
    if (!j.gpu_type.empty() && p.cluster->gpu_type != j.gpu_type) continue;
    capacity[p.cluster->gpu_type] += int64_t{p.cluster->servers} * p.cluster->gpus_per_server;
  }
  int64_t most = 0;
  for (auto& [type, gpus] : capacity) most = std::max(most, gpus);
  // The scheduler floors a request the cluster cannot hold at what it can (floor_workers).
  int base = scales ? floor_workers(j.min_workers, j.gpus, j.max_workers, s.planner, static_cast<long>(most)) : j.gpus;
  double slowest = 0;
  for (auto& [type, gpus] : capacity)
    if (gpus >= base && (slowest == 0 || c.gpu_speed.at(type) < slowest)) slowest = c.gpu_speed.at(type);
  if (base > most)
    throw input_error(fmt::format("{} needs {}{}; the cluster it may use has {}", label, gpus_text(base),
                                  j.gpu_type.empty() ? "" : " of type " + j.gpu_type, most));
  // Half the horizon leaves room for the waits, restarts and rescales of a busy cluster.
  double alone_s = j.duration_s / work_rate(s.params.model, j.gpus, base, 1, slowest) + c.restart_overhead_s;
  if (j.submit.seconds() + alone_s > sim_time::horizon().seconds() / 2)
    throw input_error(fmt::format("{} would run {:.3g} s at {} workers on its slowest GPU type, past the "
                                  "simulation horizon of {:.0f} s; check its duration and the GPU speeds",
                                  label, alone_s, base, sim_time::horizon().seconds()));
}

void check_runnable(const config& c, const scheduler_setup& s, const std::vector<job_spec>& jobs) {
  for (auto& j : jobs) check_runnable(c, s, j, fmt::format("job {} ({})", j.index, j.name));
}

/// A job a client submits: the same checks as a trace row's, then the cluster's.
void check_submitted(const config& c, const scheduler_setup& s, const job_spec& j) {
  if (auto why = job_spec_problem(j); !why.empty()) throw input_error(fmt::format("job '{}': {}", j.name, why));
  // At submit only: a job a journal restores was taken before, and runs on as it was.
  if (auto why = torchrun_problem(j); !why.empty()) throw input_error(fmt::format("job '{}': {}", j.name, why));
  // Governed tenants are the configured ones: a misspelt name would otherwise get a tenant
  // of its own, with no quota and a fresh fair share.
  if (s.params.quotas && !j.tenant.empty()) {
    std::string known;
    bool found = false;
    for (auto& t : s.tenants) {
      found = found || t.name == j.tenant;
      if (!t.name.empty()) known += (known.empty() ? "" : ", ") + t.name;
    }
    if (!found)
      throw input_error(fmt::format("job '{}': unknown tenant '{}' (configured: {})", j.name, j.tenant,
                                    known.empty() ? std::string("none") : known));
  }
  check_runnable(c, s, j, fmt::format("job '{}'", j.name));
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

/// Asks `whom` on the driver's thread and waits (at most 3 s) for the answer; `fallback`
/// if none comes.
template <class Result, class Handle, class... Args>
Result ask(driver_tasks& tasks, caf::actor_system& sys, Handle whom, Result fallback, Args... args) {
  auto answer = std::make_shared<std::promise<Result>>();
  auto result = answer->get_future();
  tasks.post([&sys, answer, whom, fallback, args...] {
    // (The unused int: CAF 0.17 binds a null reference for an empty argument list.)
    sys.spawn([=](caf::event_based_actor* self, int) {
      self->request(whom, std::chrono::seconds(2), args...)
          .then([answer](Result& r) { answer->set_value(std::move(r)); },
                [answer, fallback](caf::error&) { answer->set_value(fallback); });
    }, 0);
  });
  if (result.wait_for(std::chrono::seconds(3)) != std::future_status::ready) return fallback;
  return result.get();
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

namespace {

/// Spawns the actors and drives time until the run finishes or stops. The actor system lives
/// only in here: when this returns, no actor runs any more and the outputs can be closed.
run_outcome drive(const config& c, cluster_plan& plan, run_inputs in, const std::shared_ptr<run_writer>& writer,
                  std::ostream* progress, const live_world* live) {
  auto status = std::make_shared<run_status>();
  bool simulated = c.mode == "simulated";
  const sim_time returns_until = last_capacity_return(in.faults, in.demand);

  caf::actor_system_config cfg;
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
  caf::actor_system sys{cfg};
  sys.await_actors_before_shutdown(false);

  timebase tb{sys.clock().now(), simulated ? 1.0 : c.speedup};
  // A run carried on after a restart goes on at the simulated time it has reached.
  if (live && live->start_at_us > 0) tb.origin -= tb.span(sim_time::from_us(live->start_at_us));
  run_summary header;
  header.policy = c.policy;
  header.placement = c.scheduler.placement == placement_mode::count ? "count" : "consolidated";
  header.seed = c.seed;
  uint64_t restored_jobs = 0, index_space = in.jobs.size();
  if (live) {
    header.scheduler_restarts = live->scheduler_restarts;
    header.restarts_after_scheduler_restart = live->restarted_jobs;
    header.adopted_after_scheduler_restart = live->adopted_jobs;
    restored_jobs = live->restored.size();
    index_space = std::max<uint64_t>(index_space, live->first_free_index);
  }

  auto start_wall = wall::now();
  auto recorder = sys.spawn(recorder_behavior, std::shared_ptr<run_sink>(writer), status,
                            static_cast<uint64_t>(in.jobs.size()) + restored_jobs, header,
                            live && live->until_stopped, index_space);
  journal_actor journal;
  if (live && live->journal) {
    journal = sys.spawn(journal_behavior, live->journal, recorder, std::chrono::milliseconds(2000),
                        static_cast<uint32_t>(c.state_compact_every));
    caf::anon_send(recorder, measures_to_atom::value, caf::actor_cast<caf::actor>(journal));
  }
  // Loans that carry on after a scheduler restart: lent from the start.
  std::vector<int> lent;
  if (live)
    for (auto& s : plan.setup.servers)
      if (std::count(live->loaned.begin(), live->loaned.end(), s.name) > 0 && s.home == server_home::inference) {
        s.mode = server_mode::loaned;
        lent.push_back(s.id);
      }
  std::vector<server_actor> servers;
  for (auto& s : plan.setup.servers)
    servers.push_back(sys.spawn(server_behavior, s.name, s.gpus, static_cast<int>(s.mode), recorder,
                                live ? live->nodes.at(static_cast<size_t>(s.id)) : nullptr));
  if (live) plan.setup.workers = live->workers;
  plan.setup.first_free_index = static_cast<uint32_t>(index_space);
  plan.setup.journal = journal;
  // Machines joining mid-run grow it: the machines' reports find their actors through it.
  auto directory = std::make_shared<server_directory>(servers);
  plan.setup.directory = directory;
  if (live) plan.setup.holds = live->holds;
  auto scheduler = sys.spawn(scheduler_behavior, plan.setup, servers, recorder, tb, plan.setup.params.model);
  inference_actor inference;
  if (!plan.inference_ids.empty()) {
    inference_setup is{plan.inference_ids, std::move(in.demand), c.inference_interval_s, c.inference_headroom,
                       c.inference_grace_s, c.inference.gpus_per_server, plan.setup.policy.loaning, lent};
    inference = sys.spawn(inference_behavior, std::move(is), scheduler, recorder, tb);
  }
  // Clients' requests from the network thread, asked by the driver's loop.
  auto tasks = std::make_shared<driver_tasks>();
  // The machines' reports reach the server actors from the network thread.
  struct router_guard {
    const live_world* live;
    ~router_guard() {
      if (live && live->on_ready) live->on_ready(worker_router{});
    }
  } guard{live};
  // A restarted scheduler takes its journal's jobs before any worker report can reach a
  // server actor: the adopted workers' servers and jobs know them by then (their messages
  // are queued before the answer, the router is set after it).
  if (live && !live->restored.empty()) {
    caf::scoped_actor asker{sys};
    bool restored = false;
    asker->request(scheduler, std::chrono::seconds(30), restore_atom::value, live->restored)
        .receive([&](int) { restored = true; }, [](caf::error&) {});
    if (!restored)
      caf::anon_send(recorder, failed_atom::value, std::string("the scheduler did not take its journal's jobs within 30 s"),
                     4);
  }
  if (live && live->on_ready) {
    live->on_ready(worker_router{
        [directory](int s, uint32_t job, uint32_t rank, double work) {
          caf::anon_send(directory->at(static_cast<size_t>(s)), wprogress_atom::value, job, rank, work);
        },
        [directory](int s, uint32_t job, uint32_t rank, int code, int signal, const std::string& reason) {
          caf::anon_send(directory->at(static_cast<size_t>(s)), wexit_atom::value, job,
                         worker_exit{rank, code, signal, reason});
        },
        [scheduler](int s) { caf::anon_send(scheduler, lost_atom::value, s); },
        [tasks, &sys, scheduler, status] {
          auto s = ask<cluster_status>(*tasks, sys, scheduler, cluster_status{}, status_atom::value);
          s.reclaim_slo_misses = status->slo_misses.load();
          s.inference_needed = status->inference_needed.load();
          return s;
        },
        [inference](int servers) {
          if (inference) caf::anon_send(inference, push_atom::value, servers);
        },
        [tasks, &sys, scheduler, tb, &c, &plan, journal = live->journal](job_spec job,
                                                                         std::function<void(submit_result)> reply) {
          // Checked and asked on the driver's thread: the network thread waits for neither.
          tasks->post([&sys, scheduler, tb, &c, &plan, journal, job = std::move(job), reply]() mutable {
            try {
              // For the horizon check only: the scheduler stamps the job when it takes it.
              job.submit = tb.at(sys.clock().now());
              check_submitted(c, plan.setup, job);
            } catch (const input_error& e) {
              return reply(submit_result{-1, e.what(), {}});
            }
            if (auto trouble = journal ? journal->current_trouble() : std::string(); !trouble.empty())
              return reply(submit_result{-1, fmt::format("job '{}': the state file cannot be written ({}); submits "
                                                         "are refused until it can, running jobs go on",
                                                         job.name, trouble),
                                         {}});
            // The floor the scheduler applies (floor_workers), said to the submitter.
            std::string note;
            if (job.elastic && plan.setup.planner.floor == elastic_floor::request && job.min_workers < job.gpus)
              note = fmt::format("runs on at least {} workers, its request: scheduler.elastic_floor=request raises "
                                 "min-workers {} (set it to min for the minimum)",
                                 floor_workers(job.min_workers, job.gpus, job.max_workers, plan.setup.planner),
                                 job.min_workers);
            auto outcome = [name = job.name, note](int64_t index) {
              if (index >= 0) return submit_result{index, {}, note};
              return submit_result{-1, fmt::format("job '{}': {}", name, to_string(refusal_of(index))), {}};
            };
            sys.spawn([=](caf::event_based_actor* self, int) {
              auto admit = [=] {
                self->request(scheduler, std::chrono::seconds(2), admit_atom::value, job)
                    .then([=](int64_t index) { reply(outcome(index)); },
                          [=](caf::error&) { reply(outcome(answer_of(admit_refusal::no_answer))); });
              };
              if (job.after.empty() && job.array.empty()) return admit();
              // Its dependencies and array checked first: a refusal says why.
              self->request(scheduler, std::chrono::seconds(2), vet_atom::value, job)
                  .then(
                      [=](std::string& why) {
                        if (why.empty()) return admit();
                        reply(submit_result{-1, fmt::format("job '{}': {}", job.name, why), {}});
                      },
                      [=](caf::error&) { reply(outcome(answer_of(admit_refusal::no_answer))); });
            }, 0);
          });
        },
        [tasks, &sys, scheduler](uint32_t job, std::function<void(std::string)> reply) {
          tasks->post([&sys, scheduler, job, reply] {
            sys.spawn([=](caf::event_based_actor* self, int) {
              self->request(scheduler, std::chrono::seconds(2), cancel_atom::value, job)
                  .then([=](std::string& why) { reply(std::move(why)); },
                        [=](caf::error&) { reply(fmt::format("job {}: the scheduler did not answer", job)); });
            }, 0);
          });
        },
        [scheduler](int s) { caf::anon_send(scheduler, back_atom::value, s); },
        [directory](int s, std::vector<uint32_t> jobs, std::vector<uint32_t> ranks, uint64_t launches) {
          caf::anon_send(directory->at(static_cast<size_t>(s)), reconcile_atom::value, std::move(jobs), std::move(ranks),
                         launches);
        },
        [tasks, &sys, scheduler, status](std::function<void(cluster_status)> reply) {
          tasks->post([&sys, scheduler, status, reply] {
            sys.spawn([=](caf::event_based_actor* self, int) {
              self->request(scheduler, std::chrono::seconds(2), status_atom::value)
                  .then([=](cluster_status& s) {
                          s.reclaim_slo_misses = status->slo_misses.load();
          s.inference_needed = status->inference_needed.load();
                          reply(std::move(s));
                        },
                        [=](caf::error&) { reply(cluster_status{}); });
            }, 0);
          });
        },
        [tasks, &sys, scheduler, recorder](node_join m, std::shared_ptr<node_link> link,
                                           std::function<void(join_answer)> reply) {
          // Spawned on the driver's thread, as every actor is, then offered to the scheduler.
          tasks->post([&sys, scheduler, recorder, m, link, reply] {
            auto server = sys.spawn(server_behavior, m.server, m.gpus, static_cast<int>(server_mode::training),
                                    recorder, link);
            sys.spawn([=](caf::event_based_actor* self, int) {
              self->request(scheduler, std::chrono::seconds(2), join_atom::value, m, server)
                  .then([=](join_answer& a) {
                          if (a.id < 0) caf::anon_send_exit(server, caf::exit_reason::user_shutdown);
                          reply(std::move(a));
                        },
                        [=](caf::error&) {
                          caf::anon_send_exit(server, caf::exit_reason::user_shutdown);
                          reply({-1, "the scheduler did not answer"});
                        });
            }, 0);
          });
        },
        [tasks, &sys, scheduler](node_order o, std::function<void(node_answer)> reply) {
          tasks->post([&sys, scheduler, o = std::move(o), reply] {
            sys.spawn([=](caf::event_based_actor* self, int) {
              self->request(scheduler, std::chrono::seconds(2), node_atom::value, o)
                  .then([=](node_answer& a) { reply(std::move(a)); },
                        [=](caf::error&) { reply(node_answer{false, o.server + ": the scheduler did not answer"}); });
            }, 0);
          });
        },
        [journal](std::string line) {
          if (journal) caf::anon_send(journal, jaudit_atom::value, std::move(line));
        },
        [tasks, &sys, scheduler](job_order o, std::function<void(node_answer)> reply) {
          tasks->post([&sys, scheduler, o = std::move(o), reply] {
            sys.spawn([=](caf::event_based_actor* self, int) {
              self->request(scheduler, std::chrono::seconds(2), jobctl_atom::value, o)
                  .then([=](node_answer& a) { reply(std::move(a)); },
                        [=](caf::error&) { reply(node_answer{false, fmt::format("job {}: the scheduler did not answer", o.job)}); });
            }, 0);
          });
        }});
  }
  auto total_jobs = in.jobs.size() + restored_jobs;
  auto last_submit = in.jobs.empty() ? sim_time{} : in.jobs.back().submit;
  auto feeder = sys.spawn(feeder_behavior, std::move(in.jobs), scheduler, tb);
  fault_actor faults;
  if (!in.faults.empty()) {
    std::map<std::string, int> ids;
    for (auto& s : plan.setup.servers) ids[s.name] = s.id;
    faults = sys.spawn(fault_behavior, std::move(in.faults), std::move(ids), scheduler, inference, recorder, tb);
  }

  // The inference actor re-arms its timer for ever, and the test coordinator delivers pending
  // timers when the system shuts down: every actor is stopped first, on every way out. In
  // wall-clock time the system does not wait for its actors at shutdown, so they are waited
  // for here (a bounded while: an actor that never ends must not hang the run's exit); on a
  // loaded machine one could still be running when the system went away, and its state leaked.
  struct stopper {
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
    ~stopper() { run(); }
  } stop_actors{sys, simulated, {caf::actor_cast<caf::actor>(faults), caf::actor_cast<caf::actor>(scheduler),
                                 caf::actor_cast<caf::actor>(recorder),
                                 caf::actor_cast<caf::actor>(feeder), caf::actor_cast<caf::actor>(inference),
                                 caf::actor_cast<caf::actor>(journal)}};
  for (auto& s : servers) stop_actors.actors.push_back(caf::actor_cast<caf::actor>(s));

  run_outcome out;
  uint64_t activations = 0;
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
  // Pending submissions, running jobs (each has a finish timer) and pending returns of
  // capacity are progress, however far apart: only a run where none is left and no job moved
  // for the limit since the last of them is stuck.
  auto stalled = [&](sim_time now) {
    // Serving until told to stop, an idle cluster is waiting for submissions.
    if (live && live->until_stopped) return false;
    if (now < last_submit || status->running_jobs.load() > 0 || now < returns_until) return false;
    auto moved = std::max(sim_time::from_us(status->last_job_event_us.load()), returns_until);
    if ((now - moved).seconds() <= c.stall_limit_s) return false;
    out.error = fmt::format("stalled: no job moved for {:.0f} s with {} of {} jobs finished, none running and "
                            "none left to submit",
                            c.stall_limit_s, status->jobs_done.load(), total_jobs);
    return true;
  };
  if (simulated) {
    auto& sched = dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler());
    uint64_t steps = 0;
    for (;;) {
      activations += sched.run();
      if (status->finished.load() || status->failed.load()) break;
      // Checked once every message of this instant is handled, so the instant counts.
      if (stalled(tb.at(sched.clock().now()))) {
        out.error += "\n" + ask_dump(sys, sched, scheduler);
        break;
      }
      if (!sched.has_pending_timeout()) {
        out.error = fmt::format("deadlock: {} of {} jobs finished and nothing is pending\n{}",
                                status->jobs_done.load(), total_jobs, ask_dump(sys, sched, scheduler));
        break;
      }
      sched.trigger_timeout();
      if ((++steps & 0xFFF) == 0) report(false);
    }
    if (status->failed.load()) {
      out.error = status->failure;
      // An input error names its cause in one line; other failures come with the state.
      if (status->failure_code != 2) out.error += "\n" + ask_dump(sys, sched, scheduler);
    }
  } else {
    bool stopping = false;
    while (!status->finished.load(std::memory_order_acquire) && !status->failed.load()) {
      tasks->wait_for(std::chrono::milliseconds(5));
      tasks->run();
      if (!stopping && live && live->stop_requested && live->stop_requested()) {
        stopping = true;
        caf::anon_send_exit(feeder, caf::exit_reason::user_shutdown);
        caf::anon_send(scheduler, drain_atom::value);
      }
      report(false);
      if (stalled(tb.at(sys.clock().now()))) break;
    }
    if (status->failed.load()) out.error = status->failure;
  }
  if (status->failed.load()) out.exit_code = status->failure_code;
  if (progress && std::chrono::duration<double>(wall::now() - start_wall).count() > 2) {
    report(true);
    *progress << '\n';
  }
  // Machines that joined mid-run have server actors too, stopped as the others.
  for (size_t i = servers.size(); i < directory->size(); ++i)
    stop_actors.actors.push_back(caf::actor_cast<caf::actor>(directory->at(i)));
  stop_actors.run();

  if (out.error.empty() && status->finished.load()) {
    out.ok = true;
    out.exit_code = 0;
    out.summary = status->summary;
    out.summary.actor_activations = activations;
    out.summary.sim_wall_s = std::chrono::duration<double>(wall::now() - start_wall).count();
    // A run carried on after scheduler restarts began with its first serve, not this one.
    if (live && live->run_start_unix_us > 0) {
      auto since_us = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count() - live->run_start_unix_us;
      out.summary.sim_wall_s = std::max(out.summary.sim_wall_s, static_cast<double>(since_us) / 1e6);
    }
    out.summary.max_timer_lag_s = static_cast<double>(status->max_lag_us.load()) / 1e6;
  }
  return out;
}

} // namespace

void check_runnable(const config& c, const std::vector<job_spec>& jobs,
                    const std::function<std::string(const job_spec&)>& label) {
  auto plan = plan_cluster(c);
  for (auto& j : jobs) check_runnable(c, plan.setup, j, label(j));
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
