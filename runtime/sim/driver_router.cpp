// Live mode's router (worker_router): what the network thread asks of the run's actors.
#include <caf/all.hpp>
#include <fmt/format.h>

#include <chrono>
#include <future>

#include "actors/admit_refusal.hpp"
#include "runtime/inputs/job_checks.hpp"
#include "runtime/inputs/torchrun_command.hpp"
#include "runtime/sim/driver_parts.hpp"
#include "solvers/input_error.hpp"

namespace aryl::drive_parts {
namespace {

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
  check_runnable(c, s, j, [](const job_spec& job) { return fmt::format("job '{}'", job.name); });
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

/// Asks the scheduler from the driver's thread, for a caller on another that does not wait:
/// `answered` with its answer, or `unanswered` when none comes within 2 s.
template <class Answer, class... Args>
void ask_later(const std::shared_ptr<driver_tasks>& tasks, caf::actor_system& sys, const scheduler_actor& scheduler,
               std::function<void(Answer&)> answered, std::function<void()> unanswered, Args... args) {
  tasks->post([&sys, scheduler, answered, unanswered, args...] {
    sys.spawn([=](caf::event_based_actor* self, int) {
      self->request(scheduler, std::chrono::seconds(2), args...)
          .then([=](Answer& a) { answered(a); }, [=](caf::error&) { unanswered(); });
    }, 0);
  });
}

/// worker_router::submit: checked and asked on the driver's thread, so that the network
/// thread waits for neither.
void submit_from_client(const run_frame& f, const run_actors& a, job_spec job, std::function<void(submit_result)> reply) {
  const auto& plan = f.plan;
  try {
    // For the horizon check only: the scheduler stamps the job when it takes it.
    job.submit = f.tb.at(f.sys.clock().now());
    check_submitted(f.c, plan.setup, job);
  } catch (const input_error& e) {
    return reply(submit_result{-1, e.what(), {}});
  }
  if (auto trouble = f.live->journal ? f.live->journal->current_trouble() : std::string(); !trouble.empty())
    return reply(submit_result{-1, fmt::format("job '{}': the state file cannot be written ({}); submits "
                                               "are refused until it can, running jobs go on",
                                               job.name, trouble),
                               {}});
  // The floor the scheduler applies (floor_workers), said to the submitter.
  std::string note;
  if (job.elastic && plan.setup.planner.floor == elastic_floor::request && job.min_workers < job.gpus)
    note = fmt::format("runs on at least {} workers, its request: scheduler.elastic_floor=request raises "
                       "min-workers {} (set it to min for the minimum)",
                       floor_workers(job.min_workers, job.gpus, job.max_workers, plan.setup.planner), job.min_workers);
  auto outcome = [name = job.name, note](int64_t index) {
    if (index >= 0) return submit_result{index, {}, note};
    if (auto first = repeated_job(index)) return submit_result{*first, {}, {}, true};
    return submit_result{-1, fmt::format("job '{}': {}", name, to_string(refusal_of(index))), {}};
  };
  auto scheduler = a.scheduler;
  f.sys.spawn([=](caf::event_based_actor* self, int) {
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
}

/// worker_router::join: the machine's server actor is spawned on the driver's thread, as every
/// actor is, then offered to the scheduler.
void join_from_agent(const run_frame& f, const run_actors& a, node_join m, std::shared_ptr<node_link> link,
                     std::function<void(join_answer)> reply) {
  auto scheduler = a.scheduler;
  auto server = f.sys.spawn(server_behavior, m.server, m.gpus, static_cast<int>(server_mode::training), a.recorder, link);
  f.sys.spawn([=](caf::event_based_actor* self, int) {
    self->request(scheduler, std::chrono::seconds(2), join_atom::value, m, server)
        .then([=](join_answer& answer) {
                if (answer.id < 0) caf::anon_send_exit(server, caf::exit_reason::user_shutdown);
                reply(std::move(answer));
              },
              [=](caf::error&) {
                caf::anon_send_exit(server, caf::exit_reason::user_shutdown);
                reply({-1, "the scheduler did not answer"});
              });
  }, 0);
}

} // namespace

worker_router make_router(const run_frame& f, const run_actors& a, const std::shared_ptr<driver_tasks>& tasks) {
  auto& sys = f.sys;
  auto directory = a.directory;
  auto scheduler = a.scheduler;
  auto status = f.status;
  worker_router r;
  r.progress = [directory](int s, uint32_t job, uint32_t rank, double work) {
    caf::anon_send(directory->at(static_cast<size_t>(s)), wprogress_atom::value, job, rank, work);
  };
  r.exit = [directory](int s, uint32_t job, uint32_t rank, int code, int signal, const std::string& reason) {
    caf::anon_send(directory->at(static_cast<size_t>(s)), wexit_atom::value, job, worker_exit{rank, code, signal, reason});
  };
  r.lost = [scheduler](int s) { caf::anon_send(scheduler, lost_atom::value, s); };
  r.status = [tasks, &sys, scheduler, status] {
    auto s = ask<cluster_status>(*tasks, sys, scheduler, cluster_status{}, status_atom::value);
    s.reclaim_slo_misses = status->slo_misses.load();
    s.inference_needed = status->inference_needed.load();
    return s;
  };
  r.demand = [inference = a.inference](int servers) {
    if (inference) caf::anon_send(inference, push_atom::value, servers);
  };
  r.submit = [tasks, &f, &a](job_spec job, std::function<void(submit_result)> reply) {
    tasks->post([&f, &a, job = std::move(job), reply]() mutable { submit_from_client(f, a, std::move(job), reply); });
  };
  r.cancel = [tasks, &sys, scheduler](uint32_t job, std::function<void(std::string)> reply) {
    ask_later<std::string>(
        tasks, sys, scheduler, [reply](std::string& why) { reply(std::move(why)); },
        [reply, job] { reply(fmt::format("job {}: the scheduler did not answer", job)); }, cancel_atom::value, job);
  };
  r.back = [scheduler](int s) { caf::anon_send(scheduler, back_atom::value, s); };
  r.reconcile = [directory](int s, std::vector<uint32_t> jobs, std::vector<uint32_t> ranks, uint64_t launches) {
    caf::anon_send(directory->at(static_cast<size_t>(s)), reconcile_atom::value, std::move(jobs), std::move(ranks),
                   launches);
  };
  r.status_async = [tasks, &sys, scheduler, status](std::function<void(cluster_status)> reply) {
    ask_later<cluster_status>(
        tasks, sys, scheduler,
        [reply, status](cluster_status& s) {
          s.reclaim_slo_misses = status->slo_misses.load();
          s.inference_needed = status->inference_needed.load();
          reply(std::move(s));
        },
        [reply] { reply(cluster_status{}); }, status_atom::value);
  };
  r.join = [tasks, &f, &a](node_join m, std::shared_ptr<node_link> link, std::function<void(join_answer)> reply) {
    tasks->post([&f, &a, m, link, reply] { join_from_agent(f, a, m, link, reply); });
  };
  r.node = [tasks, &sys, scheduler](node_order o, std::function<void(node_answer)> reply) {
    ask_later<node_answer>(
        tasks, sys, scheduler, [reply](node_answer& answer) { reply(std::move(answer)); },
        [reply, server = o.server] { reply(node_answer{false, server + ": the scheduler did not answer"}); },
        node_atom::value, o);
  };
  r.audit = [journal = a.journal](std::string line) {
    if (journal) caf::anon_send(journal, jaudit_atom::value, std::move(line));
  };
  r.job = [tasks, &sys, scheduler](job_order o, std::function<void(node_answer)> reply) {
    ask_later<node_answer>(
        tasks, sys, scheduler, [reply](node_answer& answer) { reply(std::move(answer)); },
        [reply, job = o.job] { reply(node_answer{false, fmt::format("job {}: the scheduler did not answer", job)}); },
        jobctl_atom::value, o);
  };
  return r;
}

} // namespace aryl::drive_parts
