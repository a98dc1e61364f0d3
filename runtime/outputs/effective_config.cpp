#include "runtime/outputs/effective_config.hpp"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "solvers/input_error.hpp"

namespace aryl {

std::string effective_config_json(const config& c) {
  nlohmann::ordered_json j;
  auto& s = c.scheduler;
  j["policy"] = c.policy;
  j["placement"] = s.placement == placement_mode::count ? "count" : "consolidated";
  j["seed"] = c.seed;
  const policy_spec* policy = find_policy(c.policy);
  j["scheduler.backfill"] = policy ? backfills(*policy, s) : s.backfill.value_or(false);
  j["scheduler.migrate"] = s.migrate;
  j["scheduler.migrate_min_gain_s"] = s.migrate_min_gain_s;
  j["scheduler.free_gpus_first"] = s.free_gpus_first;
  j["scheduler.long_job_s"] = s.long_job_s;
  j["scheduler.scale_period_s"] = s.scale_period_s;
  j["scheduler.end_scale_period_s"] = s.end_scale_period_s;
  j["scheduler.scale_rounds"] = s.rounds == scale_rounds::every      ? "every"
                                : s.rounds == scale_rounds::capacity ? "capacity"
                                                                     : "arrivals";
  j["scheduler.elastic_floor"] = s.floor == elastic_floor::min ? "min" : "request";
  j["scheduler.scale_horizon"] = s.horizon == scale_horizon::end ? "end" : "hold";
  j["scheduler.rescale_margin_s"] = s.rescale_margin_s;
  j["scheduler.rescale_cooldown_s"] = s.rescale_cooldown_s;
  j["scheduler.min_extra_efficiency"] = s.min_extra_efficiency;
  j["scheduler.move_with_size"] = s.move_with_size;
  j["scheduler.base_room_to_grow"] = s.base_room_to_grow;
  j["scheduler.consolidate"] = s.consolidate;
  j["scheduler.reserve_after_s"] = s.reserve_after_s;
  j["scheduler.reserve_stretch"] = s.reserve_stretch;
  j["scheduler.reserve_stretch_min_s"] = s.reserve_stretch_min_s;
  j["scheduler.shadow_backfill"] = s.shadow_backfill;
  j["scheduler.preempt_ratio"] = s.preempt_ratio;
  j["scheduler.max_preemptions"] = s.max_preemptions;
  j["scheduler.preempt_for_speed"] = s.preempt_for_speed;
  j["scheduler.hold_prior_s"] = s.hold_prior_s;
  j["scheduler.hold_halflife_s"] = s.hold_halflife_s;
  j["scheduler.inelastic_on_loaned"] = s.inelastic_on_loaned;
  j["scheduler.reclaim"] = c.reclaim_method;
  // The key sets one threshold; a config holding more came from code, not from keys.
  if (!s.las_thresholds.empty()) j["scheduler.las_threshold_gpu_s"] = s.las_thresholds.front();
  j["scheduler.unestimated_prior_s"] = s.unestimated_prior_s;
  for (auto [name, cl] : {std::pair{"training", &c.training}, std::pair{"inference", &c.inference}}) {
    auto prefix = std::string("cluster.") + name;
    j[prefix + ".servers"] = cl->servers;
    j[prefix + ".gpus_per_server"] = cl->gpus_per_server;
    j[prefix + ".gpu_type"] = cl->gpu_type;
  }
  for (auto& [type, speed] : c.gpu_speed) j["gpu_speed." + type] = speed;
  j["model.eff_exponent"] = c.eff_exponent;
  j["model.cross_server_eff"] = c.cross_server_eff;
  j["trace.file"] = c.trace_file;
  j["trace.format"] = c.trace_format;
  j["trace.vc"] = c.trace_vc;
  j["trace.from"] = c.trace_from;
  j["trace.to"] = c.trace_to;
  j["trace.skip_bad_rows"] = c.skip_bad_rows;
  j["synthetic.jobs"] = c.synthetic_jobs;
  j["synthetic.load"] = c.synthetic_load;
  j["jobs.restart_overhead_s"] = c.restart_overhead_s;
  j["jobs.scale_overhead_s"] = c.scale_overhead_s;
  j["jobs.elastic_fraction"] = c.elastic_fraction;
  j["jobs.min_workers_fraction"] = c.min_workers_fraction;
  j["jobs.max_workers_factor"] = c.max_workers_factor;
  j["jobs.mispredict_fraction"] = c.mispredict_fraction;
  j["jobs.mispredict_error"] = c.mispredict_error;
  j["jobs.unestimated_fraction"] = c.unestimated_fraction;
  j["tenants.from_demand"] = c.tenants_from_demand;
  j["tenants.borrow"] = c.tenants_borrow;
  j["tenants.lend"] = c.tenants_lend;
  j["tenants.fair_share"] = c.tenants_fair_share;
  j["tenants.halflife_s"] = c.tenants_halflife_s;
  j["tenants.reclaim_grace_s"] = c.tenants_reclaim_grace_s;
  j["priorities.aging_s"] = c.priorities_aging_s;
  j["priorities.max_preemptions"] = c.priorities_max_preemptions;
  for (auto& [name, t] : c.tenants) {
    auto prefix = "tenants." + name;
    if (t.quota >= 0) j[prefix + ".quota"] = t.quota;
    if (t.weight > 0) j[prefix + ".weight"] = t.weight;
    if (t.borrow >= 0) j[prefix + ".borrow"] = t.borrow == 1;
    if (t.lend >= 0) j[prefix + ".lend"] = t.lend == 1;
    if (!t.users.empty()) j[prefix + ".users"] = t.users;
    if (t.max_priority) j[prefix + ".max_priority"] = *t.max_priority;
  }
  j["jobs.checkpoint_interval_s"] = c.checkpoint_interval_s;
  j["jobs.checkpoint_s"] = c.checkpoint_s;
  j["jobs.checkpoint_per_gpu_s"] = c.checkpoint_per_gpu_s;
  j["jobs.checkpoint_jitter"] = c.checkpoint_jitter;
  j["faults.file"] = c.faults_file;
  j["faults.heartbeat_s"] = c.heartbeat_s;
  j["faults.missed_heartbeats"] = c.missed_heartbeats;
  j["faults.max_retries"] = c.max_retries;
  j["faults.random.server_crash_per_day"] = c.random_faults.server_crash_per_day;
  j["faults.random.mean_down_s"] = c.random_faults.mean_down_s;
  j["faults.random.permanent_fraction"] = c.random_faults.permanent_fraction;
  j["faults.random.inference_servers"] = c.random_faults.inference_servers;
  j["faults.random.worker_crash_per_day"] = c.random_faults.worker_crash_per_day;
  j["faults.random.surge_per_day"] = c.random_faults.surge_per_day;
  j["faults.random.disconnect_per_day"] = c.random_faults.disconnect_per_day;
  j["faults.random.mean_disconnect_s"] = c.random_faults.mean_disconnect_s;
  j["faults.random.link_per_day"] = c.random_faults.link_per_day;
  j["faults.random.mean_link_s"] = c.random_faults.mean_link_s;
  j["faults.random.link_delay_s"] = c.random_faults.link_delay_s;
  j["faults.random.link_loss"] = c.random_faults.link_loss;
  j["faults.random.checkpoint_fail_per_day"] = c.random_faults.checkpoint_fail_per_day;
  j["faults.random.checkpoint_slow_per_day"] = c.random_faults.checkpoint_slow_per_day;
  j["faults.random.mean_checkpoint_slow_s"] = c.random_faults.mean_checkpoint_slow_s;
  j["faults.random.scheduler_crash_per_day"] = c.random_faults.scheduler_crash_per_day;
  j["faults.random.mean_scheduler_down_s"] = c.random_faults.mean_scheduler_down_s;
  j["inference.trace"] = c.inference_trace;
  j["inference.format"] = c.inference_format;
  j["inference.peak_utilisation"] = c.inference_peak_utilisation;
  j["inference.interval_s"] = c.inference_interval_s;
  j["inference.headroom"] = c.inference_headroom;
  j["inference.grace_s"] = c.inference_grace_s;
  j["run.mode"] = c.mode;
  j["run.speedup"] = c.speedup;
  j["run.check_invariants"] = c.check_invariants;
  j["run.progress"] = c.progress;
  j["run.stall_limit_s"] = c.stall_limit_s;
  j["run.max_lag_s"] = c.max_lag_s;
  j["run.out"] = c.out_dir;
  std::string argv;
  for (auto& w : c.worker_command) argv += (argv.empty() ? "" : " ") + w;
  j["live.worker_command"] = argv;
  j["live.state_compact_every"] = c.state_compact_every;
  j["live.hello_timeout_s"] = c.hello_timeout_s;
  j["live.max_connections"] = c.max_connections;
  j["live.max_before_hello"] = c.max_before_hello;
  j["live.max_before_hello_per_address"] = c.max_before_hello_per_address;
  j["live.pre_hello_closes_per_s"] = c.pre_hello_closes_per_s;
  j["live.default_estimate_s"] = c.default_estimate_s;
  j["live.max_active_submits"] = c.max_active_submits;
  j["live.max_active_submits_per_address"] = c.max_active_submits_per_address;
  j["live.max_submit_bytes"] = c.max_submit_bytes;
  j["live.submits_per_s"] = c.submits_per_s;
  j["live.allow_root_jobs"] = c.allow_root_jobs;
  j["live.master_port_first"] = c.master_port_first;
  j["live.master_port_count"] = c.master_port_count;
  j["live.rdzv_endpoint"] = c.rdzv_endpoint;
  j["live.rdzv_last_call_s"] = c.rdzv_last_call_s;
  return j.dump(2);
}

void write_effective_config(const config& c, const std::string& path) {
  std::ofstream out(path);
  out << effective_config_json(c) << '\n';
  out.close();
  if (!out) throw input_error(path + ": cannot write: " + std::strerror(errno));
}

} // namespace aryl
