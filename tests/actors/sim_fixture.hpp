#pragma once
// A deterministic actor system (CAF's test coordinator) plus recording stand-ins for the
// scheduler and the recorder, for actor-protocol tests.
#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>

#include <memory>
#include <string>
#include <vector>

#include "actors/actor_env.hpp"

namespace aryl::test {

struct sim_fixture {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  caf::scheduler::test_coordinator* sched = nullptr;
  timebase tb;

  sim_fixture() {
    cfg.set("scheduler.policy", caf::atom("testing"));
    cfg.set("logger.console-verbosity", caf::atom("quiet"));
    sys = std::make_unique<caf::actor_system>(cfg);
    sys->await_actors_before_shutdown(false);
    sched = &dynamic_cast<caf::scheduler::test_coordinator&>(sys->scheduler());
    tb = timebase{sys->clock().now(), 1.0};
  }

  sim_time now() const { return tb.at(sched->clock().now()); }
  /// Delivers every message that is due, without advancing time.
  void drain() { sched->run(); }
  /// Jumps to the next timer and delivers what follows from it; false if none is pending.
  bool step() {
    if (!sched->has_pending_timeout()) return false;
    sched->trigger_timeout();
    sched->run();
    return true;
  }
};

/// What a stand-in scheduler received, with the simulation time it arrived.
struct seen {
  sim_time at;
  std::string what;  ///< "ack" | "finished" | "submit" | "loan" | "reclaim"
  uint32_t job = 0;
  uint64_t generation = 0;
  double work_done = 0;
  std::vector<int> servers = {};  ///< loan: the servers lent
  int count = 0;                  ///< reclaim: servers asked for
};

inline scheduler_actor::behavior_type recording_scheduler(scheduler_actor::pointer self,
                                                          std::shared_ptr<std::vector<seen>> log, timebase tb) {
  return {
      [=](submit_atom, job_spec& s) { log->push_back({tb.now(self), "submit", s.index, 0, 0}); },
      [=](submit_atom, std::vector<job_spec>& specs) {
        for (auto& s : specs) log->push_back({tb.now(self), "submit", s.index, 0, 0});
      },
      [=](ack_atom, const job_ack& a) { log->push_back({tb.now(self), "ack", a.job, a.generation, a.work_done}); },
      [=](finished_atom, uint32_t job, uint64_t g) { log->push_back({tb.now(self), "finished", job, g, 0}); },
      [=](round_atom) {},
      [=](scale_due_atom) {},
      [=](loan_atom, const std::vector<int>& ids) { log->push_back({tb.now(self), "loan", 0, 0, 0, ids}); },
      [=](reclaim_atom, int n, int64_t) { log->push_back({tb.now(self), "reclaim", 0, 0, 0, {}, n}); },
      [=](dump_atom) -> std::string { return "recording scheduler"; },
      [=](status_atom) -> cluster_status { return {}; },
      [=](admit_atom, job_spec&) -> int64_t { return -1; },
      [=](cancel_atom, uint32_t) -> std::string { return "recording scheduler"; },
      [=](jobctl_atom, const job_order&) -> node_answer { return {false, "recording scheduler"}; },
      [=](vet_atom, const job_spec&) -> std::string { return {}; },
      [=](drain_atom) {},
      [=](crash_atom, int, int64_t) {},
      [=](wcrash_atom, uint32_t) {},
      [=](lost_atom, int) {},
      [=](back_atom, int) {},
      [=](wfail_atom, uint32_t job) { log->push_back({tb.now(self), "wfail", job, 0, 0}); },
      [=](exits_atom, uint32_t job, const std::vector<worker_exit>&) {
        log->push_back({tb.now(self), "exits", job, 0, 0});
      },
      [=](limit_atom, uint32_t) {},
      [=](linkfault_atom, const link_fault&) {},
      [=](ckfault_atom, uint32_t, const checkpoint_fault&) {},
      [=](away_atom, int64_t) {},
      [=](infer_atom, const caf::actor_addr&) {},
      [=](awake_atom) {},
      [=](restore_atom, std::vector<saved_job>& rows) -> int { return static_cast<int>(rows.size()); },
      [=](node_atom, const node_order&) -> node_answer { return {false, "recording scheduler"}; },
      [=](join_atom, const node_join&, server_actor&) -> join_answer { return {-1, "recording scheduler"}; },
  };
}

struct recorded {
  std::vector<event_record> events;
  std::vector<job_record> jobs;
  std::vector<std::string> violations;
  std::vector<std::pair<std::string, int>> failures;  ///< (message, exit code)
  int slo_misses = 0;
};

inline recorder_actor::behavior_type recording_recorder(recorder_actor::pointer, std::shared_ptr<recorded> r) {
  return {
      [=](event_atom, const event_record& e) { r->events.push_back(e); },
      [=](roundlog_atom, const std::vector<event_record>& es, const cluster_snapshot&, const round_kind&) {
        r->events.insert(r->events.end(), es.begin(), es.end());
      },
      [=](ended_atom, const event_record& e, const job_record& j) {
        r->events.push_back(e);
        r->jobs.push_back(j);
      },
      [=](jobrec_atom, const job_record& j) { r->jobs.push_back(j); },
      [=](snapshot_atom, const cluster_snapshot&) {},
      [=](violation_atom, const std::string& s) { r->violations.push_back(s); },
      [=](slo_atom, int n) { r->slo_misses += n; },
      [=](serving_atom, int64_t, int) {},
      [=](need_atom, int) {},
      [=](failed_atom, const std::string& what, int code) { r->failures.emplace_back(what, code); },
      [=](lag_atom, int64_t) {},
      [=](expect_atom) {},
      [=](close_atom) {},
      [=](lostwork_atom, double, double) {},
      [=](rdone_atom, double, double) {},
      [=](qdone_atom, double, double) {},
      [=](measures_to_atom, const caf::actor&) {},
  };
}

} // namespace aryl::test
