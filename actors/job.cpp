#include "actors/job.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

#include "actors/end_run_on_exception.hpp"

namespace aryl {
namespace {

/// A stop's checkpoint time: fixed + per worker, within +-jitter, the same for the same job,
/// generation and seed (splitmix64 of the three).
double checkpoint_time(const checkpoint_settings& c, uint32_t job, uint64_t generation, int workers) {
  double base = c.fixed_s + c.per_gpu_s * workers;
  if (base <= 0 || c.jitter <= 0) return base;
  uint64_t z = c.seed ^ (uint64_t{job} << 32) ^ generation;
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  double u = static_cast<double>(z >> 11) / 9007199254740992.0;  // [0, 1)
  return base * (1 + c.jitter * (2 * u - 1));
}

} // namespace

job_actor::behavior_type job_behavior(job_actor::stateful_pointer<job_state> self, job_spec spec,
                                      job_env env_in) {
  // Shared, not copied: every handler below captures it, and a job starts for each of
  // thousands of trace rows.
  auto env = std::make_shared<const job_env>(std::move(env_in));
  end_run_on_exception(self, env->recorder);
  self->state.spec = std::move(spec);
  auto scheduler = [=] { return caf::actor_cast<scheduler_actor>(env->scheduler); };
  auto arm_tick = [=](sim_time at) {
    auto& st = self->state;
    st.ticking = true;
    st.tick_at = at;
    self->delayed_send(self, env->tb.span(at - env->tb.now(self)), tick_atom::value);
  };
  // Where an armed checkpoint fault stands at `now`: waiting for its checkpoint (the job's
  // next, from when it was armed), spoiling the periodic checkpoint it fell on (which is the
  // latest, and failed or not written yet), or past (that checkpoint no longer matters).
  enum class fault_stage { none, waiting, spoiling, past };
  auto stage_at = [=](sim_time now) {
    auto& st = self->state;
    auto& p = st.progress;
    double every = env->checkpoints.interval_s;
    if (!st.ckpt_fault) return fault_stage::none;
    if (every <= 0 || p.rate <= 0 || now <= p.since) return fault_stage::waiting;
    double periods = std::floor((now - p.since).seconds() / every);
    double k = std::floor(std::max(0.0, (st.ckpt_fault_armed - p.since).seconds()) / every) + 1;
    if (k > periods) return fault_stage::waiting;
    auto written = p.since + sim_time::from_seconds(k * every + st.ckpt_fault->slow_s);
    return k == periods && (st.ckpt_fault->fail || now < written) ? fault_stage::spoiling : fault_stage::past;
  };
  // The work saved by the latest good checkpoint at `now` (the stop's at the start of this
  // run, or a periodic one), and whether a checkpoint fault spoiled the latest periodic one.
  // The run ends here (a crash or a reassignment): a fault whose checkpoint came is spent.
  auto last_good = [=](sim_time now) {
    auto& st = self->state;
    auto& p = st.progress;
    double saved = std::max(st.ckpt_work, p.work_done);
    bool spoiled = false;
    double every = env->checkpoints.interval_s;
    if (every > 0 && now > p.since) {
      double periods = std::floor((now - p.since).seconds() / every);
      auto stage = stage_at(now);
      spoiled = stage == fault_stage::spoiling;
      if (spoiled) periods -= 1;
      if (spoiled || stage == fault_stage::past) st.ckpt_fault.reset();
      saved = std::max(saved, p.done_at(p.since + sim_time::from_seconds(periods * every)));
    }
    return std::pair{saved, spoiled};
  };
  // Invariant: a roll-back loses at most one checkpoint interval of work, two when the
  // checkpoint in between was spoiled.
  auto check_loss = [=](double done, double saved, bool spoiled, const char* how) {
    auto& st = self->state;
    double every = env->checkpoints.interval_s;
    if (env->check_invariants && every > 0 && done - saved > st.progress.rate * every * (spoiled ? 2 : 1) + 1e-6)
      self->send(env->recorder, violation_atom::value,
                 fmt::format("job {} lost {} work units {}, more than {} checkpoint interval(s)", st.spec.name,
                             done - saved, how, spoiled ? 2 : 1));
  };
  // Live mode: what every launch of `a` takes on, workers or torchrun nodes: its generation and
  // size, and the end of a recovery it ends.
  auto take_assignment = [=](const job_assignment& a) {
    auto& st = self->state;
    st.generation = a.generation;
    st.workers = a.workers;
    st.stopping = false;
    st.exits.clear();
    if (st.recovering && a.workers > 0) {
      st.recovering = false;
      self->send(env->recorder, lostwork_atom::value, 0.0, (env->tb.now(self) - st.recover_from).seconds());
    }
  };
  // Live mode: launches the workers of `a` (none for a preemption) and acknowledges it if asked.
  auto launch = [=](const job_assignment& a) {
    auto& st = self->state;
    take_assignment(a);
    uint32_t rank = 0;
    double rate = work_rate(env->model, st.spec.gpus, a.workers, servers_spanned(a), a.type_speed) * env->workers.speedup;
    for (size_t i = 0; i < a.servers.size(); ++i) {
      launch_request r{st.spec.index, st.spec.name, a.generation, rank, a.server_workers[i],
                       static_cast<uint32_t>(a.workers),
                       st.spec.duration_s, rate,
                       a.overhead_s / env->workers.speedup,
                       st.spec.command.empty() ? env->workers.command : st.spec.command, st.decided_unix_ns,
                       st.spec.user, a.servers.front(), static_cast<uint32_t>(i),
                       static_cast<uint32_t>(a.servers.size()), st.spec.array_job, st.spec.array_task,
                       st.spec.array_count};
      for (int w = 0; w < a.server_workers[i]; ++w) st.live_ranks.insert(rank++);
      self->send(env->servers->at(static_cast<size_t>(a.servers[i])), launch_atom::value, std::move(r));
    }
    if (a.ack) self->send(scheduler(), ack_atom::value, job_ack{st.spec.index, a.generation, st.progress.work_done});
  };
  // Live mode, a torchrun job: starts a node on each server of `a` in `start` (all: a fresh
  // start, with a rendezvous of its own), under the server's slot.
  auto launch_nodes = [=](const job_assignment& a, const std::set<int>& start, bool fresh) {
    auto& st = self->state;
    if (fresh) {
      st.node_slot.clear();
      st.node_share.clear();
      st.rdzv_epoch = a.generation;
      st.rdzv_server = a.servers.empty() ? -1 : a.servers.front();
    }
    take_assignment(a);
    double rate = work_rate(env->model, st.spec.gpus, a.workers, servers_spanned(a), a.type_speed) * env->workers.speedup;
    std::map<int, int> share;
    for (size_t i = 0; i < a.servers.size(); ++i) share[a.servers[i]] += a.server_workers[i];
    st.node_share = share;
    for (auto& [sid, workers] : share) {
      if (!start.count(sid)) continue;
      auto slot = st.node_slot.find(sid);
      if (slot == st.node_slot.end()) {
        uint32_t free = 0;
        auto taken = [&](uint32_t k) {
          if (st.live_ranks.count(k) || st.leaving.count(k)) return true;
          for (auto& [s2, k2] : st.node_slot)
            if (k2 == k) return true;
          return false;
        };
        while (taken(free)) ++free;
        slot = st.node_slot.emplace(sid, free).first;
      }
      launch_request r{st.spec.index, st.spec.name, a.generation, slot->second, workers,
                       static_cast<uint32_t>(a.workers), st.spec.duration_s, rate,
                       a.overhead_s / env->workers.speedup,
                       st.spec.command.empty() ? env->workers.command : st.spec.command, st.decided_unix_ns,
                       st.spec.user, st.rdzv_server, static_cast<uint32_t>(std::distance(share.begin(), share.find(sid))),
                       static_cast<uint32_t>(share.size()), st.spec.array_job, st.spec.array_task,
                       st.spec.array_count, true, static_cast<uint32_t>(st.spec.max_workers), st.rdzv_epoch};
      st.live_ranks.insert(slot->second);
      self->send(env->servers->at(static_cast<size_t>(sid)), launch_atom::value, std::move(r));
    }
  };
  // Live mode, a torchrun job's new assignment: the nodes whose server keeps its share run on
  // (TorchElastic restarts their workers when the group changes); the others are started,
  // restarted or, where the job leaves a server, stopped by their servers. With none kept it
  // starts afresh once the old nodes have exited.
  auto assign_nodes = [=](const job_assignment& a) {
    auto& st = self->state;
    std::map<int, int> share;
    for (size_t i = 0; i < a.servers.size(); ++i) share[a.servers[i]] += a.server_workers[i];
    std::set<int> kept, start;
    for (auto& [sid, slot] : st.node_slot) {
      auto it = share.find(sid);
      if (it != share.end() && st.live_ranks.count(slot) && it->second == st.node_share[sid]) kept.insert(sid);
    }
    for (auto& [sid, w] : share)
      if (!kept.count(sid)) start.insert(sid);
    if (kept.empty()) {
      for (auto slot : st.live_ranks) st.leaving.insert(slot);
      st.live_ranks.clear();
      if (st.leaving.empty()) launch_nodes(a, start, true);
      else st.next = a;  // started once the old nodes have exited
      if (a.ack && st.leaving.empty()) self->send(scheduler(), ack_atom::value, job_ack{st.spec.index, a.generation, st.progress.work_done});
      else if (a.ack) st.ack_when_left = a.generation;
      return;
    }
    // A node on a server the job leaves goes; one whose share changes is relaunched under its
    // slot (the agent stops the older generation first, whose exit is not reported).
    for (auto it = st.node_slot.begin(); it != st.node_slot.end();) {
      if (share.count(it->first)) {
        ++it;
        continue;
      }
      if (st.live_ranks.erase(it->second)) st.leaving.insert(it->second);
      it = st.node_slot.erase(it);
    }
    launch_nodes(a, start, false);
    if (!a.ack) return;
    if (st.leaving.empty()) self->send(scheduler(), ack_atom::value, job_ack{st.spec.index, a.generation, st.progress.work_done});
    else st.ack_when_left = a.generation;
  };
  // A torchrun node stopped by a rescale has exited: once all have, a fresh start waiting for
  // them goes ahead and an assignment waiting for them is acknowledged.
  auto node_left = [=](uint32_t slot) {
    auto& st = self->state;
    if (!st.leaving.erase(slot) || !st.leaving.empty()) return;
    if (st.next && st.live_ranks.empty()) {
      auto a = std::move(*st.next);
      st.next.reset();
      std::set<int> all(a.servers.begin(), a.servers.end());
      launch_nodes(a, all, true);
    }
    if (auto g = std::exchange(st.ack_when_left, std::nullopt))
      self->send(scheduler(), ack_atom::value, job_ack{st.spec.index, *g, st.progress.work_done});
  };
  if (env->workers.follow_workers && env->workers.node_per_server)
    self->state.torchrun =
        env->workers.node_per_server(self->state.spec.command.empty() ? env->workers.command : self->state.spec.command);
  return {
      [=](assign_atom, const job_assignment& a) {
        auto& st = self->state;
        if (env->workers.follow_workers) {
          // Wall clock, for the decision-to-launch latency a worker can measure; not a decision.
          st.decided_unix_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count();
          if (st.torchrun) assign_nodes(a);
          else if (st.live_ranks.empty()) launch(a);
          else st.next = a;  // launched once the current workers have exited
          return;
        }
        auto now = env->tb.now(self);
        double before = st.progress.done_at(now);
        bool was_crashed = st.crashed;
        bool rolled_back = false;
        double stop_s = 0;
        double late_s = a.link_delay_s;  // before the new workers start
        if (st.crashed) {
          // Workers held while the job could not progress are lost GPU time too.
          self->send(env->recorder, lostwork_atom::value, (now - st.crashed_at).seconds() * st.workers, -1.0);
          st.crashed_at = now;
          bool still_dead = false;
          for (int sid : a.servers) still_dead |= st.dead_servers.count(sid) > 0;
          if (!still_dead) {
            st.crashed = false;
            st.dead_servers.clear();
          }
        } else if (st.workers > 0) {
          // Every reassignment restarts the workers from a checkpoint written now; the
          // acknowledgement (what a reclaim waits for) comes once it is written.
          auto [saved, spoiled] = last_good(now);
          auto fault = std::exchange(st.ckpt_fault, std::nullopt);  // one still waiting falls on this one
          if (a.workers < st.workers) stop_s = checkpoint_time(env->checkpoints, st.spec.index, st.generation, st.workers);
          if (fault && fault->fail) {
            // Not written: the workers restart from the checkpoint before, and the work since
            // is lost. A reclaim still gets its acknowledgement when the attempt ends.
            auto& p = st.progress;
            check_loss(before, saved, spoiled, "to a failed checkpoint");
            self->send(env->recorder, lostwork_atom::value, p.rate > 0 ? (before - saved) / p.rate * st.workers : 0.0,
                       -1.0);
            self->send(env->recorder, event_atom::value,
                       event_record{now.us, "job", "ckptfail",
                                    fmt::format("job-{} work_done={:.1f} back_to={:.1f}", st.spec.index, before, saved),
                                    "its checkpoint failed: it restarts from the one before"});
            p.settle(now);
            p.work_done = saved;
            st.ckpt_work = saved;
            rolled_back = true;
          } else {
            st.ckpt_work = before;
            if (fault) {  // slow: written later, and the new workers start from it later
              stop_s += fault->slow_s;
              late_s += fault->slow_s;
            }
          }
        }
        if (st.recovering && !st.crashed && a.workers > 0) {
          st.recovering = false;
          self->send(env->recorder, lostwork_atom::value, 0.0, (now - st.recover_from).seconds());
        }
        double rate = st.crashed ? 0.0 : work_rate(env->model, st.spec.gpus, a.workers, servers_spanned(a), a.type_speed);
        st.progress.change_rate(now, rate, a.workers > 0 ? a.overhead_s + late_s : 0.0);
        st.generation = a.generation;
        st.workers = a.workers;
        if (env->check_invariants && !was_crashed && !rolled_back && st.progress.work_done + 1e-6 < before)
          self->send(env->recorder, violation_atom::value,
                     fmt::format("job {} lost progress: {} -> {}", st.spec.name, before, st.progress.work_done));
        if (a.workers > 0 && !st.crashed) {
          auto at = st.progress.finish_time(st.spec.duration_s);
          if (at >= sim_time::horizon())
            throw input_error(fmt::format("job {} ({}) would finish after the simulation horizon of {:.0f} s "
                                          "at {} workers; check its duration and the GPU speeds",
                                          st.spec.index, st.spec.name, sim_time::horizon().seconds(), a.workers));
          st.due = at;
          if (!st.ticking || at < st.tick_at) arm_tick(at);
        }
        // A slow link: the stop reaches the workers late, and their answer comes back late.
        if (stop_s > 0) st.ckpt_until = now + sim_time::from_seconds(a.link_delay_s + stop_s);
        // No assignment is acknowledged before the stopped workers' checkpoint is written:
        // until then they still hold their GPUs.
        auto ack_at = std::max(st.ckpt_until, now + sim_time::from_seconds(a.link_delay_s));
        if (!a.ack) return;
        if (ack_at > now)
          self->delayed_send(self, env->tb.span(ack_at - now), ckpt_atom::value, a.generation,
                             st.progress.work_done);
        else
          self->send(scheduler(), ack_atom::value, job_ack{st.spec.index, a.generation, st.progress.work_done});
      },
      [=](ckpt_atom, uint64_t generation, double work_done) {
        self->send(scheduler(), ack_atom::value, job_ack{self->state.spec.index, generation, work_done});
      },
      [=](ckfault_atom, const checkpoint_fault& f) {
        auto& st = self->state;
        auto now = env->tb.now(self);
        auto stage = stage_at(now);
        if (stage == fault_stage::waiting || stage == fault_stage::spoiling) return;  // one at a time
        st.ckpt_fault = f;
        st.ckpt_fault_armed = now;
      },
      [=](crash_atom, int server) {
        auto& st = self->state;
        // Live mode: real workers report their own exits.
        if (env->workers.follow_workers || st.workers == 0) return;
        if (server >= 0) st.dead_servers.insert(server);
        if (st.crashed) return;
        auto now = env->tb.now(self);
        auto& p = st.progress;
        double done = p.done_at(now);
        auto [saved, spoiled] = last_good(now);
        check_loss(done, saved, spoiled, "in a crash");
        if (spoiled)
          self->send(env->recorder, event_atom::value,
                     event_record{now.us, "job", "ckptfail",
                                  fmt::format("job-{} work_done={:.1f} back_to={:.1f}", st.spec.index, done, saved),
                                  "its latest checkpoint failed or was not written yet: back to the one before"});
        double lost_gpu_s = p.rate > 0 ? (done - saved) / p.rate * st.workers : 0.0;
        p.work_done = saved;
        p.rate = 0;
        p.since = now;
        st.ckpt_work = saved;
        st.crashed = true;
        st.crashed_at = now;
        if (!st.recovering) {
          st.recovering = true;
          st.recover_from = now;
        }
        self->send(env->recorder, lostwork_atom::value, lost_gpu_s, -1.0);
        if (server < 0) self->send(scheduler(), wfail_atom::value, st.spec.index);
      },
      [=](tick_atom) {
        auto& st = self->state;
        auto now = env->tb.now(self);
        if (st.ticking && now >= st.tick_at) st.ticking = false;  // the earliest timer fired
        if (st.workers == 0 || st.crashed) return;
        if (now < st.due) {  // completion was pushed back since this timer was armed
          if (!st.ticking) arm_tick(st.due);
          return;
        }
        if (now > st.due) self->send(env->recorder, lag_atom::value, (now - st.due).us);
        st.progress.settle(now);
        self->send(scheduler(), finished_atom::value, st.spec.index, st.generation);
        self->quit();
      },
      [=](wprogress_atom, uint32_t rank, double work_done) {
        auto& st = self->state;
        if (rank != 0 || st.next) return;
        st.progress.work_done = work_done;
        if (env->journal) self->send(env->journal, jprogress_atom::value, st.spec.index, work_done);
      },
      [=](adopt_atom, const job_assignment& a) {
        // Nothing to launch: the workers run already, and report from now on.
        auto& st = self->state;
        st.generation = a.generation;
        st.workers = a.workers;
        st.stopping = false;
        for (uint32_t r = 0; r < static_cast<uint32_t>(a.workers); ++r) st.live_ranks.insert(r);
      },
      [=](wexit_atom, const worker_exit& e) {
        auto& st = self->state;
        const auto rank = e.rank;
        const int code = e.code, signal = e.signal;
        if (st.torchrun && st.leaving.count(rank)) return node_left(rank);
        if (!st.live_ranks.erase(rank)) return;
        if (code == worker_lost_code && !st.recovering) {  // its machine was lost
          st.recovering = true;
          st.recover_from = env->tb.now(self);
        }
        if (st.next || st.stopping) {  // stopped by the scheduler: any exit status is expected
          if (st.next && st.live_ranks.empty()) {
            auto a = std::move(*st.next);
            st.next.reset();
            launch(a);
          }
          return;
        }
        if (code != 0 || signal != 0) {
          // A worker died on its own: as after a simulated worker crash, the scheduler
          // reassigns the job (bounded retries); the new workers resume from the checkpoint,
          // and the removal stops this launch's others, whose exits are then expected.
          st.stopping = true;
          if (!st.recovering) {
            st.recovering = true;
            st.recover_from = env->tb.now(self);
          }
          st.exits.push_back(e);
          self->send(scheduler(), exits_atom::value, st.spec.index, std::exchange(st.exits, {}));
          self->send(scheduler(), wfail_atom::value, st.spec.index);
          return;
        }
        st.exits.push_back(e);
        if (!st.live_ranks.empty()) return;
        self->send(scheduler(), exits_atom::value, st.spec.index, std::exchange(st.exits, {}));
        st.progress.work_done = st.spec.duration_s;
        self->send(scheduler(), finished_atom::value, st.spec.index, st.generation);
        self->quit();
      },
  };
}

} // namespace aryl
