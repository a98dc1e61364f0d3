// The table of config keys: one entry per key (a family, one per kind of member), in the
// effective config's order. A new key is one entry here and its config member; parsing,
// config.json and docs/config.md follow (tests/runtime/test_config_keys.cpp checks the page).
#include "runtime/inputs/config_keys.hpp"

#include <fmt/format.h>

#include <cmath>

#include "runtime/inputs/config_key_kinds.hpp"
#include "runtime/inputs/config_key_special.hpp"

namespace aryl {
namespace {

using namespace config_kinds;
#define F ARYL_CONFIG_FIELD

std::vector<config_key> scheduler_keys() {
  return {
      policy_key(),
      with_flag(choice("placement", F(scheduler.placement),
                       std::vector<std::pair<std::string, placement_mode>>{{"count", placement_mode::count},
                                                                            {"consolidated", placement_mode::consolidated}},
                       "where a job's workers go: any free GPUs (count, Tiresias'), or a job that fits one server on "
                       "one, larger ones on whole free servers (consolidated)"),
                "--placement"),
      seed_key(),
      backfill_key(),
      boolean("scheduler.migrate", F(scheduler.migrate),
              "move elastic jobs off slower GPU types (loaned servers) onto faster free ones when the move pays for "
              "its restart"),
      seconds("scheduler.migrate_min_gain_s", F(scheduler.migrate_min_gain_s), 0,
              "a move must shorten the job's predicted remaining time by more than this"),
      boolean("scheduler.free_gpus_first", F(scheduler.free_gpus_first),
              "place base demand on free GPUs of any type before shrinking elastic jobs' extra workers"),
      seconds("scheduler.long_job_s", F(scheduler.long_job_s), 0,
              "elastic jobs predicted to run at least this long start only on their fastest GPU type when its "
              "servers can hold them; 0: off (docs/elastic.md, \"Long jobs on their fastest type\")"),
      seconds("scheduler.scale_period_s", F(scheduler.scale_period_s), 0,
              "re-plan elastic sizes and moves at most this often, the rounds between only starting queued jobs; "
              "0: every round (docs/round.md, \"Scale period\")"),
      number("scheduler.scale_budget_per_s", F(scheduler.scale_budget_per_s), 0, 1e9,
             {"1/s", "the scale budget's refill: running elastic jobs a full round may value per simulated second, "
                     "a round it cannot pay for being local until it can; 0: no budget (docs/round.md, \"Scale budget\")"}),
      number("scheduler.scale_budget_burst", F(scheduler.scale_budget_burst), 1, 1e9,
             {"", "the scale budget's bucket, in job valuations: the most full rounds may value at once after a quiet "
                  "spell (docs/round.md, \"Scale budget\")"}),
      seconds("scheduler.end_scale_period_s", F(scheduler.end_scale_period_s), 0,
              "while jobs queue, a job's end re-plans sizes at most this long after the last full round "
              "(docs/round.md, \"Ends under a queue\")"),
      choice("scheduler.scale_rounds", F(scheduler.rounds),
             std::vector<std::pair<std::string, scale_rounds>>{{"every", scale_rounds::every},
                                                                {"capacity", scale_rounds::capacity},
                                                                {"arrivals", scale_rounds::arrivals}},
             "which rounds re-plan elastic sizes (docs/round.md, \"Scale rounds\")"),
      choice("scheduler.elastic_floor", F(scheduler.floor),
             std::vector<std::pair<std::string, elastic_floor>>{{"request", elastic_floor::request},
                                                                 {"min", elastic_floor::min}},
             "the fewest workers an elastic job runs with: its request, or its minimum as in the paper "
             "(docs/elastic.md, \"The floor of an elastic job\")"),
      choice("scheduler.scale_horizon", F(scheduler.horizon),
             std::vector<std::pair<std::string, scale_horizon>>{{"hold", scale_horizon::hold},
                                                                 {"end", scale_horizon::end}},
             "an extra worker is worth the JCT it saves over the time the job is expected to keep it (hold), or "
             "until the job ends (end) (docs/elastic.md, \"What a change of size must pay\")"),
      seconds("scheduler.rescale_margin_s", F(scheduler.rescale_margin_s), 0,
              "a change of an elastic job's size must gain this much predicted JCT beyond its full cost"),
      seconds("scheduler.rescale_cooldown_s", F(scheduler.rescale_cooldown_s), 0,
              "after its allocation changes, a job keeps its size this long unless queued base demand, a reclaim "
              "or a fault takes its GPUs"),
      share("scheduler.min_extra_efficiency", F(scheduler.min_extra_efficiency),
            "a size is offered only if each of its GPUs does at least this share of the work a GPU does at the "
            "job's minimum"),
      boolean("scheduler.move_with_size", F(scheduler.move_with_size),
              "an elastic job above its minimum moves with its size when the faster free GPUs hold it, not at its "
              "minimum"),
      boolean("scheduler.base_room_to_grow", F(scheduler.base_room_to_grow),
              "an elastic job's base that fits one server goes on the tightest server with room for its maximum, "
              "so that it grows on its server"),
      boolean("scheduler.consolidate", F(scheduler.consolidate),
              "a running elastic job spread over more servers than it needs moves onto fewer when the rate it "
              "gains over its expected hold pays for the change"),
      seconds("scheduler.reserve_after_s", F(scheduler.reserve_after_s), 0,
              "a job queued this long goes first, with the servers that free soonest held for it; 0: off "
              "(docs/preemption.md, \"Backfill\")"),
      number("scheduler.reserve_stretch", F(scheduler.reserve_stretch), 0, 1e6,
             {"x", "a job queued at least this many times its predicted run also goes first with servers held for "
                   "it, and may stop jobs already stopped max_preemptions times; 0: off (docs/preemption.md, "
                   "\"Starved jobs\")"}),
      seconds("scheduler.reserve_stretch_min_s", F(scheduler.reserve_stretch_min_s), 0,
              "... once it has queued at least this long"),
      boolean("scheduler.shadow_backfill", F(scheduler.shadow_backfill),
              "while servers are held so, a queued job predicted to end before they would hold the waiting job "
              "may start on them (EASY's shadow time)"),
      number("scheduler.preempt_ratio", F(scheduler.preempt_ratio), 0, 1e6,
             {"x", "a queued job whose base fits nowhere may preempt jobs without extra workers whose predicted "
                   "remaining time exceeds this many times its run plus their restart and checkpoint; 0: off "
                   "(docs/preemption.md, \"Preemption for short jobs\")"}),
      integer("scheduler.max_preemptions", F(scheduler.max_preemptions), 0, 1000000,
              {"", "a job already preempted this many times for queued jobs is not preempted so again"}),
      boolean("scheduler.preempt_for_speed", F(scheduler.preempt_for_speed),
              "a queued job whose base fits only on a slower GPU type (loaned servers) may preempt on its fastest "
              "type, by preempt_ratio's rule, when it saves more than its victims lose"),
      seconds("scheduler.hold_prior_s", F(scheduler.hold_prior_s), 1,
              "the prior mean of the holding-time estimate (how long a job keeps a size) before any observation"),
      seconds("scheduler.hold_halflife_s", F(scheduler.hold_halflife_s), 0,
              "the half-life of the holding-time estimate's observations; 0: they never age"),
      boolean("scheduler.inelastic_on_loaned", F(scheduler.inelastic_on_loaned),
              "inelastic jobs may run on loaned inference servers (off: a reclaim scales a job in rather than "
              "preempting it)"),
      choice("scheduler.reclaim", F(reclaim_method),
             std::vector<std::pair<std::string, std::string>>{{"greedy", "greedy"}, {"exact", "exact"}},
             "how a reclaim picks the loaned servers to return: greedy, or exact branch and bound (at most 20 "
             "inference servers) (docs/loaning.md)"),
      las_threshold_key(),
      seconds("scheduler.unestimated_prior_s", F(scheduler.unestimated_prior_s), 1,
              "the run expected of a job without an estimate before any job of its tenant and cluster ended "
              "(docs/round.md, \"Jobs without an estimate\")"),
  };
}

std::vector<config_key> cluster_keys() {
  return {
      with_flag(integer("cluster.training.servers", F(training.servers), 0, max_servers,
                        {"servers", "training servers (t0..)"}),
                "--servers"),
      with_flag(integer("cluster.training.gpus_per_server", F(training.gpus_per_server), 1, max_gpus_per_server,
                        {"GPUs", "GPUs of each training server"}),
                "--gpus-per-server"),
      text("cluster.training.gpu_type", F(training.gpu_type), "a type with a `gpu_speed` entry",
           "the training servers' GPU type"),
      integer("cluster.inference.servers", F(inference.servers), 0, max_servers,
              {"servers", "inference servers (i0..), lent to training while inference demand leaves them idle"}),
      integer("cluster.inference.gpus_per_server", F(inference.gpus_per_server), 1, max_gpus_per_server,
              {"GPUs", "GPUs of each inference server"}),
      text("cluster.inference.gpu_type", F(inference.gpu_type), "a type with a `gpu_speed` entry",
           "the inference servers' GPU type"),
      gpu_speed_key(),
      number("model.eff_exponent", F(eff_exponent), -1, 0,
             {"", "per-worker efficiency of a job on w workers: w^eff_exponent (docs/throughput_model.md)"}),
      number("model.cross_server_eff", F(cross_server_eff), 0.01, 1,
             {"", "per-worker efficiency of a job spanning 2+ servers; 1: no cross-server cost "
                  "(docs/throughput_model.md, \"Locality\")"}),
  };
}

std::vector<config_key> workload_keys() {
  return {
      with_flag(text("trace.file", F(trace_file), "path", "the training trace; empty: the built-in synthetic workload"),
                "--trace"),
      with_flag(choice("trace.format", F(trace_format),
                       std::vector<std::pair<std::string, std::string>>{{"canonical", "canonical"}, {"philly", "philly"}},
                       "the trace's format (docs/workload.md)"),
                "--trace-format"),
      text("trace.vc", F(trace_vc), "text", "philly: the virtual cluster whose jobs are kept; empty: all"),
      text("trace.from", F(trace_from), "`YYYY-MM-DD`", "philly: the first submit date kept, time 0; empty: the first job's"),
      text("trace.to", F(trace_to), "`YYYY-MM-DD`", "philly: the end date, exclusive; empty: after the last job"),
      boolean("trace.skip_bad_rows", F(skip_bad_rows), "count and report malformed trace rows instead of stopping"),
      integer("synthetic.jobs", F(synthetic_jobs), 1, max_synthetic_jobs,
              {"jobs", "jobs of the built-in synthetic workload, a Philly-like mix (docs/workload.md)"}),
      number("synthetic.load", F(synthetic_load), 0.01, 100,
             {"", "the synthetic workload's offered load on the training cluster (its window follows from it)"}),
      number("jobs.restart_overhead_s", F(restart_overhead_s), 0, max_overhead_s,
             {"s", "no progress for this long after a restart (a preemption, a move to another GPU type)"}),
      number("jobs.scale_overhead_s", F(scale_overhead_s), 0, max_overhead_s,
             {"s", "no progress for this long after any other change of a job's workers"}),
      share("jobs.elastic_fraction", F(elastic_fraction), "share of jobs made elastic (seeded)"),
      share("jobs.min_workers_fraction", F(min_workers_fraction),
            "an elastic job's minimum: max(1, floor(n x this)) of its n requested workers"),
      number("jobs.max_workers_factor", F(max_workers_factor), 1, 64,
             {"x", "an elastic job's maximum: ceil(n x this) of its n requested workers"}),
      share("jobs.mispredict_fraction", F(mispredict_fraction),
            "share of jobs whose predicted work is off (seeded); the scheduler sees predictions only"),
      number("jobs.mispredict_error", F(mispredict_error), 0, 0.99,
             {"", "... off by a uniform factor within +-this"}),
      share("jobs.unestimated_fraction", F(unestimated_fraction),
            "share of jobs that come without a duration estimate (seeded)"),
  };
}

std::vector<config_key> tenancy_keys() {
  return {
      boolean("tenants.from_demand", F(tenants_from_demand),
              "every tenant of the trace gets a quota in proportion to its jobs' GPU-seconds"),
      boolean("tenants.borrow", F(tenants_borrow), "a tenant may run base demand beyond its quota on idle quota"),
      boolean("tenants.lend", F(tenants_lend), "a tenant's idle quota runs others' jobs until its own jobs need it back"),
      boolean("tenants.fair_share", F(tenants_fair_share), "across tenants, lowest decayed usage over weight first"),
      seconds("tenants.halflife_s", F(tenants_halflife_s), 0, "the half-life of a tenant's usage; 0: it never decays"),
      seconds("tenants.reclaim_grace_s", F(tenants_reclaim_grace_s), 0, "a quota reclaim later than this is counted late"),
      seconds("priorities.aging_s", F(priorities_aging_s), 0,
              "a queued job's class rises by one per this much waiting; 0: never (docs/tenants.md, \"Priorities\")"),
      integer("priorities.max_preemptions", F(priorities_max_preemptions), 0, 1000000,
              {"", "a job is stopped for a higher class at most this many times; 0: classes order the queue but "
                   "never preempt"}),
  };
}

std::vector<config_key> checkpoint_and_fault_keys() {
  return {
      seconds("jobs.checkpoint_interval_s", F(checkpoint_interval_s), 0,
              "a job checkpoints every this much of its run; a crash loses the work since; 0: no periodic "
              "checkpoints"),
      number("jobs.checkpoint_s", F(checkpoint_s), 0, max_overhead_s,
             {"s", "a stop (preemption, scale-in, reclaim) writes a checkpoint taking this long ..."}),
      number("jobs.checkpoint_per_gpu_s", F(checkpoint_per_gpu_s), 0, max_overhead_s, {"s", "... plus this per worker"}),
      share("jobs.checkpoint_jitter", F(checkpoint_jitter), "... within +-this share of it (seeded)"),
      with_flag(text("faults.file", F(faults_file), "path",
                     "a fault plan (docs/faults.md); live: serve enacts its surges, scripts/live_faults.py its crashes"),
                "--faults"),
      number("faults.heartbeat_s", F(heartbeat_s), 0.001, 86400,
             {"s", "agents' heartbeat period; live: with missed_heartbeats, the agents' detection grace (docs/live.md)"}),
      integer("faults.missed_heartbeats", F(missed_heartbeats), 1, 1000,
              {"", "a server is lost after this many missed heartbeats; live: grace = heartbeat_s x this / speedup, "
                   "at least 5 s"}),
      integer("faults.max_retries", F(max_retries), 0, 1000,
              {"", "restarts after failures before a job ends as failed (a job's own max_retries wins)"}),
  };
}

std::vector<config_key> run_keys() {
  return {
      text("inference.trace", F(inference_trace), "path",
           "inference demand over time; empty: a seeded synthetic daily cycle (docs/workload.md)"),
      choice("inference.format", F(inference_format),
             std::vector<std::pair<std::string, std::string>>{{"canonical", "canonical"}, {"servegen", "servegen"}},
             "the demand's format: servers needed (t_s,servers_needed), or request rates (servegen)"),
      share("inference.peak_utilisation", F(inference_peak_utilisation),
            "servegen: the share of the inference servers the demand's peak needs"),
      integer("inference.interval_s", F(inference_interval_s), 1, max_period_s,
              {"s", "how often the inference actor recomputes the servers it needs (docs/loaning.md)"}),
      number("inference.headroom", F(inference_headroom), 0, 100, {"", "servers needed = ceil(demand x (1 + this))"}),
      integer("inference.grace_s", F(inference_grace_s), 0, max_period_s,
              {"s", "a reclaim's deadline: lent servers are due back this long after inference asks"}),
      with_flag(choice("run.mode", F(mode),
                       std::vector<std::pair<std::string, std::string>>{{"simulated", "simulated"},
                                                                         {"wallclock", "wallclock"}},
                       "simulated time (deterministic), or the same actors on the wall clock"),
                "--mode"),
      with_flag(number("run.speedup", F(speedup), 1e-3, max_speedup,
                       {"x", "wall clock: simulated seconds per real second"}),
                "--speedup"),
      with_flag(boolean("run.check_invariants", F(check_invariants),
                        "check the cluster's invariants on every event; a violation stops the run"),
                "--check-invariants"),
      boolean("run.progress", F(progress), "a progress line now and then on long runs"),
      seconds("run.stall_limit_s", F(stall_limit_s), 1,
              "stop with a state dump when no job runs, none is left to submit and no job moved for this long"),
      seconds("run.max_lag_s", F(max_lag_s), 0,
              "wall clock: warn when a job's completion timer fires this much later (simulated s) than due"),
      with_flag(text("run.out", F(out_dir), "folder", "where the outputs go"), "--out"),
  };
}

std::vector<config_key> live_keys() {
  return {
      worker_command_key(),
      integer("live.state_compact_every", F(state_compact_every), 0, 1000000,
              {"jobs", "serve --state: ended jobs between two compactions of the journal; 0: only when serve starts "
                       "(docs/live.md, \"Scheduler restart\")"}),
      number("live.hello_timeout_s", F(hello_timeout_s), 0.1, 3600,
             {"s", "serve: a peer must complete hello this long after connecting, or is closed"}),
      integer("live.max_connections", F(max_connections), 1, 1000000,
              {"", "serve: connections of any kind (lowered to what RLIMIT_NOFILE leaves); at it an idle one is "
                   "evicted or a newcomer refused (docs/protocol.md, \"Connections\")"}),
      integer("live.max_before_hello", F(max_before_hello), 1, 1000000,
              {"", "serve: connections that sent bytes but no hello yet"}),
      integer("live.max_before_hello_per_address", F(max_before_hello_per_address), 1, 1000000,
              {"", "serve: the same, from one peer address"}),
      number("live.pre_hello_closes_per_s", F(pre_hello_closes_per_s), 0.1, 1e6,
             {"per s", "serve: closes before hello per peer address and second; past them such a connection is "
                       "silenced (held idle), not closed (docs/protocol.md, \"Connections\")"}),
      seconds("live.default_estimate_s", F(default_estimate_s), 1,
              "serve: the run-time estimate of a submitted job that gives none; such a job is marked unpredicted"),
      integer("live.max_active_submits", F(max_active_submits), 1, 10000000,
              {"jobs", "serve: clients' jobs queued or running, in all; a submit past it is refused naming the key"}),
      integer("live.max_active_submits_per_address", F(max_active_submits_per_address), 1, 10000000,
              {"jobs", "serve: the same, from one client address"}),
      integer("live.max_submit_bytes", F(max_submit_bytes), 64, 1000000,
              {"bytes", "serve: bytes of a submit's name, command and tenant"}),
      number("live.submits_per_s", F(submits_per_s), 0.01, 1e6,
             {"per s", "serve: submits a second per client address, in bursts of up to twice that"}),
      boolean("live.allow_root_jobs", F(allow_root_jobs),
              "serve --identities: an identity named root may submit (its jobs run as root only where the agent "
              "allows it too; docs/security.md)"),
      integer("live.master_port_first", F(master_port_first), 1024, 65535,
              {"", "serve: a launch's MASTER_PORT is the lowest port from here not held on its rank 0's machine ..."}),
      integer("live.master_port_count", F(master_port_count), 1, 10000, {"ports", "... among this many ports"}),
      rdzv_endpoint_key(),
      integer("live.rdzv_last_call_s", F(rdzv_last_call_s), 1, 3600,
              {"s", "serve: how long a torchrun job's formed quorum of nodes waits for more (last_call_timeout)"}),
  };
}

#undef F

std::vector<config_key> every_key() {
  std::vector<config_key> out;
  for (auto part : {scheduler_keys(), cluster_keys(), workload_keys(), tenancy_keys(), tenant_keys(),
                    checkpoint_and_fault_keys(), random_fault_keys(), run_keys(), live_keys()})
    for (auto& k : part) out.push_back(std::move(k));
  return out;
}

} // namespace

const std::vector<config_key>& config_keys() {
  static const std::vector<config_key> table = every_key();
  return table;
}

std::string config_number_text(double v) {
  if (v != std::floor(v) || std::fabs(v) >= 1e18) return fmt::format("{:g}", v);
  auto i = static_cast<int64_t>(v);
  int zeros = 0;
  int64_t lead = i;
  for (; lead != 0 && lead % 10 == 0; lead /= 10) ++zeros;
  if (zeros >= 6 && (lead == 1 || lead == -1)) return fmt::format("{}1e{}", lead < 0 ? "-" : "", zeros);
  return std::to_string(i);
}

const config_key* find_config_key(const std::string& key) {
  for (auto& k : config_keys())
    if (k.matches ? k.matches(key) : k.name == key) return &k;
  return nullptr;
}

} // namespace aryl
