#include "actors/job.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <utility>

#include "actors/end_run_on_exception.hpp"
#include "actors/job_parts.hpp"

namespace aryl {
namespace job_detail {
namespace {

/// Arms the job's completion timer for `at`.
void arm_tick(const job_ctx& c, sim_time at) {
  auto& st = c.st();
  st.ticking = true;
  st.tick_at = at;
  c.self->delayed_send(c.self, c.env->tb.span(at - c.now()), tick_atom::value);
}

/// A crashed job's new assignment: the GPU time its held workers lost while it could not
/// progress, and whether it runs again (none of its servers still dead).
void reassign_crashed(const job_ctx& c, const job_assignment& a, sim_time now) {
  auto& st = c.st();
  c.self->send(c.env->recorder, lostwork_atom::value, (now - st.crashed_at).seconds() * st.workers, -1.0);
  st.crashed_at = now;
  bool still_dead = false;
  for (int sid : a.servers) still_dead |= st.dead_servers.count(sid) > 0;
  if (!still_dead) {
    st.crashed = false;
    st.dead_servers.clear();
  }
}

/// assign(a) in simulated time: settles progress to now, pays the stop's checkpoint and the
/// overhead, moves the completion time and acknowledges once the stopped workers'
/// checkpoint is written.
void assign_simulated(const job_ctx& c, const job_assignment& a) {
  auto& st = c.st();
  auto& env = *c.env;
  auto now = c.now();
  double before = st.progress.done_at(now);
  bool was_crashed = st.crashed;
  stop_cost stop;
  stop.late_s = a.link_delay_s;  // before the new workers start
  if (st.crashed) {
    reassign_crashed(c, a, now);
  } else if (st.workers > 0) {
    auto cost = stop_for(c, a, now, before);
    stop.stop_s = cost.stop_s;
    stop.late_s += cost.late_s;
    stop.rolled_back = cost.rolled_back;
  }
  if (st.recovering && !st.crashed && a.workers > 0) {
    st.recovering = false;
    c.self->send(env.recorder, lostwork_atom::value, 0.0, (now - st.recover_from).seconds());
  }
  double rate = st.crashed ? 0.0 : work_rate(env.model, st.spec.gpus, a.workers, servers_spanned(a), a.type_speed);
  st.progress.change_rate(now, rate, a.workers > 0 ? a.overhead_s + stop.late_s : 0.0);
  st.generation = a.generation;
  st.workers = a.workers;
  if (env.check_invariants && !was_crashed && !stop.rolled_back && st.progress.work_done + 1e-6 < before)
    c.self->send(env.recorder, violation_atom::value,
                 fmt::format("job {} lost progress: {} -> {}", st.spec.name, before, st.progress.work_done));
  if (a.workers > 0 && !st.crashed) {
    auto at = st.progress.finish_time(st.spec.duration_s);
    if (at >= sim_time::horizon())
      throw input_error(fmt::format("job {} ({}) would finish after the simulation horizon of {:.0f} s "
                                    "at {} workers; check its duration and the GPU speeds",
                                    st.spec.index, st.spec.name, sim_time::horizon().seconds(), a.workers));
    st.due = at;
    if (!st.ticking || at < st.tick_at) arm_tick(c, at);
  }
  // A slow link: the stop reaches the workers late, and their answer comes back late.
  if (stop.stop_s > 0) st.ckpt_until = now + sim_time::from_seconds(a.link_delay_s + stop.stop_s);
  // No assignment is acknowledged before the stopped workers' checkpoint is written:
  // until then they still hold their GPUs.
  auto ack_at = std::max(st.ckpt_until, now + sim_time::from_seconds(a.link_delay_s));
  if (!a.ack) return;
  if (ack_at > now)
    c.self->delayed_send(c.self, env.tb.span(ack_at - now), ckpt_atom::value, a.generation, st.progress.work_done);
  else
    c.ack(a.generation);
}

/// tick: the completion timer. Fired early (completion was pushed back since it was armed), it
/// re-arms for the completion time; at it, the job reports `finished` and quits.
void on_tick(const job_ctx& c) {
  auto& st = c.st();
  auto now = c.now();
  if (st.ticking && now >= st.tick_at) st.ticking = false;  // the earliest timer fired
  if (st.workers == 0 || st.crashed) return;
  if (now < st.due) {
    if (!st.ticking) arm_tick(c, st.due);
    return;
  }
  if (now > st.due) c.self->send(c.env->recorder, lag_atom::value, (now - st.due).us);
  st.progress.settle(now);
  c.self->send(c.scheduler(), finished_atom::value, st.spec.index, st.generation);
  c.self->quit();
}

} // namespace
} // namespace job_detail

job_actor::behavior_type job_behavior(job_actor::stateful_pointer<job_state> self, job_spec spec,
                                      job_env env) {
  return job_behavior_shared(self, std::move(spec), std::make_shared<const job_env>(std::move(env)));
}

job_actor::behavior_type job_behavior_shared(job_actor::stateful_pointer<job_state> self, job_spec&& spec,
                                             std::shared_ptr<const job_env> env) {
  using namespace job_detail;
  self->state.env = std::move(env);
  const job_ctx c{self, self->state.env.get()};
  end_run_on_exception(self, c.env->recorder);
  self->state.spec = std::move(spec);
  auto& workers = c.env->workers;
  if (workers.follow_workers && workers.node_per_server)
    self->state.torchrun =
        workers.node_per_server(self->state.spec.command.empty() ? workers.command : self->state.spec.command);
  return {
      [c](assign_atom, const job_assignment& a) {
        if (c.env->workers.follow_workers) assign_workers(c, a);
        else assign_simulated(c, a);
      },
      [c](ckpt_atom, uint64_t generation, double work_done) {
        c.self->send(c.scheduler(), ack_atom::value, job_ack{c.st().spec.index, generation, work_done});
      },
      [c](ckfault_atom, const checkpoint_fault& f) { on_checkpoint_fault(c, f); },
      [c](crash_atom, int server) { on_crash(c, server); },
      [c](tick_atom) { on_tick(c); },
      [c](wprogress_atom, uint32_t rank, double work_done) { on_worker_progress(c, rank, work_done); },
      [c](adopt_atom, const job_assignment& a) { adopt_workers(c, a); },
      [c](wexit_atom, const worker_exit& e) { on_worker_exit(c, e); },
  };
}

} // namespace aryl
