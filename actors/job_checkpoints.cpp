// The job actor in simulated time: its checkpoints, checkpoint faults and crashes, and the
// work a roll-back loses.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "actors/job_parts.hpp"

namespace aryl::job_detail {

double checkpoint_time(const checkpoint_settings& c, uint32_t job, uint64_t generation, int workers) {
  double base = c.fixed_s + c.per_gpu_s * workers;
  if (base <= 0 || c.jitter <= 0) return base;
  // splitmix64 of the seed, the job and the generation.
  uint64_t z = c.seed ^ (uint64_t{job} << 32) ^ generation;
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  double u = static_cast<double>(z >> 11) / 9007199254740992.0;  // [0, 1)
  return base * (1 + c.jitter * (2 * u - 1));
}

fault_stage stage_at(const job_ctx& c, sim_time now) {
  auto& st = c.st();
  auto& p = st.progress;
  double every = c.env->checkpoints.interval_s;
  if (!st.ckpt_fault) return fault_stage::none;
  if (every <= 0 || p.rate <= 0 || now <= p.since) return fault_stage::waiting;
  double periods = std::floor((now - p.since).seconds() / every);
  double k = std::floor(std::max(0.0, (st.ckpt_fault_armed - p.since).seconds()) / every) + 1;
  if (k > periods) return fault_stage::waiting;
  auto written = p.since + sim_time::from_seconds(k * every + st.ckpt_fault->slow_s);
  return k == periods && (st.ckpt_fault->fail || now < written) ? fault_stage::spoiling : fault_stage::past;
}

std::pair<double, bool> last_good(const job_ctx& c, sim_time now) {
  auto& st = c.st();
  auto& p = st.progress;
  double saved = std::max(st.ckpt_work, p.work_done);
  bool spoiled = false;
  double every = c.env->checkpoints.interval_s;
  if (every > 0 && now > p.since) {
    double periods = std::floor((now - p.since).seconds() / every);
    auto stage = stage_at(c, now);
    spoiled = stage == fault_stage::spoiling;
    if (spoiled) periods -= 1;
    if (spoiled || stage == fault_stage::past) st.ckpt_fault.reset();
    saved = std::max(saved, p.done_at(p.since + sim_time::from_seconds(periods * every)));
  }
  return {saved, spoiled};
}

void check_loss(const job_ctx& c, double done, double saved, bool spoiled, const char* how) {
  auto& st = c.st();
  double every = c.env->checkpoints.interval_s;
  if (c.env->check_invariants && every > 0 && done - saved > st.progress.rate * every * (spoiled ? 2 : 1) + 1e-6)
    c.self->send(c.env->recorder, violation_atom::value,
                 fmt::format("job {} lost {} work units {}, more than {} checkpoint interval(s)", st.spec.name,
                             done - saved, how, spoiled ? 2 : 1));
}

stop_cost stop_for(const job_ctx& c, const job_assignment& a, sim_time now, double before) {
  // Every reassignment restarts the workers from a checkpoint written now; the
  // acknowledgement (what a reclaim waits for) comes once it is written.
  auto& st = c.st();
  stop_cost out;
  auto [saved, spoiled] = last_good(c, now);
  auto fault = std::exchange(st.ckpt_fault, std::nullopt);  // one still waiting falls on this one
  if (a.workers < st.workers) out.stop_s = checkpoint_time(c.env->checkpoints, st.spec.index, st.generation, st.workers);
  if (fault && fault->fail) {
    // Not written: the workers restart from the checkpoint before, and the work since
    // is lost. A reclaim still gets its acknowledgement when the attempt ends.
    auto& p = st.progress;
    check_loss(c, before, saved, spoiled, "to a failed checkpoint");
    c.self->send(c.env->recorder, lostwork_atom::value, p.rate > 0 ? (before - saved) / p.rate * st.workers : 0.0,
                 -1.0);
    c.self->send(c.env->recorder, event_atom::value,
                 event_record{now.us, "job", "ckptfail",
                              fmt::format("job-{} work_done={:.1f} back_to={:.1f}", st.spec.index, before, saved),
                              "its checkpoint failed: it restarts from the one before"});
    p.settle(now);
    p.work_done = saved;
    st.ckpt_work = saved;
    out.rolled_back = true;
  } else {
    st.ckpt_work = before;
    if (fault) {  // slow: written later, and the new workers start from it later
      out.stop_s += fault->slow_s;
      out.late_s += fault->slow_s;
    }
  }
  return out;
}

void on_checkpoint_fault(const job_ctx& c, const checkpoint_fault& f) {
  auto& st = c.st();
  auto now = c.now();
  auto stage = stage_at(c, now);
  if (stage == fault_stage::waiting || stage == fault_stage::spoiling) return;  // one at a time
  st.ckpt_fault = f;
  st.ckpt_fault_armed = now;
}

void on_crash(const job_ctx& c, int server) {
  auto& st = c.st();
  // Live mode: real workers report their own exits.
  if (c.env->workers.follow_workers || st.workers == 0) return;
  if (server >= 0) st.dead_servers.insert(server);
  if (st.crashed) return;
  auto now = c.now();
  auto& p = st.progress;
  double done = p.done_at(now);
  auto [saved, spoiled] = last_good(c, now);
  check_loss(c, done, saved, spoiled, "in a crash");
  if (spoiled)
    c.self->send(c.env->recorder, event_atom::value,
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
  c.self->send(c.env->recorder, lostwork_atom::value, lost_gpu_s, -1.0);
  if (server < 0) c.self->send(c.scheduler(), wfail_atom::value, st.spec.index);
}

} // namespace aryl::job_detail
