// aryl command line: `aryl simulate ...` runs a simulation; `aryl solve ...` runs one solver
// on JSON input (for debugging a decision); `aryl serve`, `aryl agent` and `aryl worker` are
// live mode's scheduler, node agent and emulated worker.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <functional>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include "solvers/control_chars.hpp"
#include "runtime/sim/driver.hpp"
#include "runtime/outputs/config_reference.hpp"
#include "runtime/outputs/effective_config.hpp"
#include "solvers/input_error.hpp"
#include "runtime/inputs/job_checks.hpp"
#include "runtime/inputs/load_inputs.hpp"
#include "runtime/outputs/outputs.hpp"
#include "runtime/live/client_tokens.hpp"
#include "runtime/node/agent.hpp"
#include "runtime/live/client.hpp"
#include "runtime/live/client_config.hpp"
#include "runtime/live/client_status.hpp"
#include "runtime/live/status_view.hpp"
#include "runtime/live/sim_history.hpp"
#include "runtime/cli/history_command.hpp"
#include "runtime/live/client_nodes.hpp"
#include "runtime/node/gpu_detect.hpp"
#include "runtime/live/job_file.hpp"
#include "runtime/cli/log_stamp.hpp"
#include "runtime/live/serve.hpp"
#include "runtime/live/token.hpp"
#include "runtime/node/worker.hpp"
#include "runtime/cli/queue_commands.hpp"
#include "runtime/cli/solve_command.hpp"
#include "runtime/wire/tls_stream.hpp"

namespace {

struct simulate_flags {
  std::string config_file, trace, trace_format, policy, placement, out, mode, faults;
  std::string db;  ///< simulate --db: the jobs' history, as `aryl history` reads it
  // Unset unless given: then validated by the config key they set.
  std::string servers, gpus_per_server, seed, speedup;
  std::vector<std::string> sets;
  bool check_invariants = false, quiet = false;
};

aryl::config build_config(const simulate_flags& f) {
  aryl::config c;
  if (!f.config_file.empty()) aryl::load_config_file(c, f.config_file);
  auto set = [&](const char* key, const std::string& v, const char* flag) {
    if (!v.empty()) aryl::set_config_key(c, key, v, flag);
  };
  set("trace.file", f.trace, "--trace");
  set("trace.format", f.trace_format, "--trace-format");
  set("policy", f.policy, "--policy");
  set("placement", f.placement, "--placement");
  set("run.out", f.out, "--out");
  set("run.mode", f.mode, "--mode");
  set("cluster.training.servers", f.servers, "--servers");
  set("cluster.training.gpus_per_server", f.gpus_per_server, "--gpus-per-server");
  set("seed", f.seed, "--seed");
  set("run.speedup", f.speedup, "--speedup");
  set("faults.file", f.faults, "--faults");
  if (f.check_invariants) c.check_invariants = true;
  for (auto& s : f.sets) aryl::apply_override(c, s);
  aryl::validate_config(c);
  return c;
}

/// A simulation is one short process whose heap only grows, and the kernel's page faults were
/// 10-20% of a long run's time on a virtual machine: memory freed at the top of the heap is
/// kept for the next allocation instead of given back and faulted in again, and the heap's
/// next 256 MiB (reserved, touched only as used) ask for transparent huge pages, so a run
/// faults in 2 MiB at a time instead of 4 KiB. Where huge pages are off, only the keeping
/// remains.
void keep_heap() {
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  constexpr long chunk = 16L << 20, chunks = 16, huge = 2L << 20;
  auto* before = static_cast<char*>(sbrk(0));
  // Under the mmap threshold, so from the heap, which grows by them; freed, they stay.
  void* held[chunks];
  for (auto& h : held) h = malloc(chunk);
  for (auto* h : held) free(h);
  auto* after = static_cast<char*>(sbrk(0));
  auto* from = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(before) + huge - 1) & ~uintptr_t(huge - 1));
  if (after > from) madvise(from, static_cast<size_t>(after - from), MADV_HUGEPAGE);
}

int simulate(const simulate_flags& f) {
  keep_heap();
  auto c = build_config(f);
  std::string note;
  auto inputs = aryl::load_inputs(c, &note);
  if (!note.empty()) std::cerr << note;
  // --db: the records jobs.csv is made of, kept for the history table once the run is over.
  std::vector<aryl::job_record> records;
  std::vector<std::string> users;
  std::function<void(const aryl::job_record&)> on_job;
  if (!f.db.empty()) {
    aryl::live::check_simulation_db(f.db);
    for (auto& j : inputs.jobs) users.push_back(j.user);
    on_job = [&records](const aryl::job_record& r) { records.push_back(r); };
  }
  auto out = aryl::run_simulation(c, std::move(inputs), f.quiet || !c.progress ? nullptr : &std::cerr, nullptr,
                                  std::move(on_job));
  // Beside the outputs, so that whatever reads them takes the parameters from the run itself.
  aryl::write_effective_config(c, c.out_dir + "/config.json");
  if (!out.ok) {
    std::cerr << "aryl: " << (out.exit_code == 3 ? "run stopped: " : "") << out.error << '\n';
    return out.exit_code;
  }
  if (!out.warning.empty()) std::cerr << "aryl: warning: " << out.warning << '\n';
  if (!f.db.empty()) aryl::live::write_simulation_db(f.db, records, users);
  if (!f.quiet) aryl::print_summary_table(std::cout, out.summary);
  std::cout << "outputs in " << c.out_dir << "/\n";
  return 0;
}

/// The flags that say what to run and how: simulate's, and serve's (whose clock is the wall's).
void add_workload_flags(CLI::App* a, simulate_flags& f) {
  a->add_option("--config", f.config_file, "YAML config file");
  a->add_option("--trace", f.trace, "training job trace (CSV)");
  a->add_option("--trace-format", f.trace_format, "canonical | philly");
  a->add_option("--policy", f.policy, "fifo | sjf | srtf | las | baseline | loan-only | elastic-only | aryl");
  a->add_option("--placement", f.placement, "count | consolidated");
  a->add_option("--servers", f.servers, "training servers");
  a->add_option("--gpus-per-server", f.gpus_per_server, "GPUs per training server");
  a->add_option("--seed", f.seed, "random seed");
  a->add_option("--out", f.out, "output folder (default out/)");
  a->add_option("--speedup", f.speedup, "wall clock: simulated seconds per real second");
  a->add_option("--set", f.sets, "override a config key: key=value (repeatable)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

std::atomic<bool> stop_requested{false};

extern "C" void request_stop(int) { stop_requested.store(true); }

/// A name for logs and tables: refused with a control character, naming the flag.
void check_name(const std::string& flag, const std::string& name) {
  if (aryl::find_control(name) != std::string::npos)
    throw aryl::input_error(flag + ": '" + name + "' holds " + aryl::describe_control(name));
}

/// `note`: a line for the agent's log before it starts (what was detected of the machine).
int agent(aryl::live::agent_options o, const std::string& token_file, const std::string& pool,
          const std::string& note) {
  check_name("agent: --name", o.name);
  if (pool != "training" && pool != "inference")
    throw aryl::input_error("agent: --pool: '" + pool + "' is not one of training|inference");
  if (!token_file.empty()) o.token = aryl::live::read_token_file(token_file);
  o.pool = pool == "training" ? aryl::wire::pool_kind::training : aryl::wire::pool_kind::inference;
  std::signal(SIGTERM, request_stop);
  std::signal(SIGINT, request_stop);
  aryl::live::stamped_log stamped(std::cerr.rdbuf());
  std::ostream log(&stamped);
  if (!note.empty()) log << note << '\n';
  return aryl::live::run_agent(o, stop_requested, log);
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"aryl: an elastic cluster scheduler for deep learning, with capacity loaning"};
  // A flag given twice takes its last value, as --set does.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("aryl ") + ARYL_VERSION, "print aryl's version and exit");

  simulate_flags sf;
  auto* sim = app.add_subcommand("simulate", "simulate a workload (the built-in synthetic one by default)");
  add_workload_flags(sim, sf);
  sim->add_option("--mode", sf.mode, "simulated | wallclock");
  sim->add_flag("--check-invariants", sf.check_invariants, "check cluster invariants on every event");
  sim->add_option("--faults", sf.faults, "a fault plan (YAML, docs/faults.md)");
  sim->add_flag("--quiet", sf.quiet, "no summary table or progress");
  sim->add_option("--db", sf.db,
                  "also write every job to this database's history table, for `aryl history --db FILE` (a "
                  "simulation's database there is replaced; the run decides the same)");

  simulate_flags cf;  // config takes the flags that make a run's config
  bool config_markdown = false;
  auto* config_cmd = app.add_subcommand(
      "config", "print the effective config of these settings (JSON, as a run's config.json), or every key's table");
  add_workload_flags(config_cmd, cf);
  config_cmd->add_flag("--markdown", config_markdown,
                       "print the table of every config key (type, default, range, unit, description) in Markdown, "
                       "as docs/config.md holds it");

  std::string problem, method = "greedy", in_file;
  auto* solve = app.add_subcommand("solve", "run one solver on JSON input, print JSON");
  solve->add_option("problem", problem, "mckp | reclaim | place")->required();
  solve->add_option("--method", method, "reclaim: greedy | exact");
  solve->add_option("--in", in_file, "input file (default: standard input)");

  simulate_flags vf;  // serve takes the simulate flags that say what to run
  aryl::live::serve_options so;
  auto* serve = app.add_subcommand("serve", "live mode: schedule a workload on node agents' machines");
  add_workload_flags(serve, vf);
  serve->add_option("--faults", vf.faults,
                    "a fault plan (YAML): surges enacted here, crashes by scripts/live_faults.py (docs/live.md)");
  serve->add_option("--bind", so.bind, "address to listen on (default 127.0.0.1; another needs TLS or --insecure)");
  serve->add_option("--tls-cert", so.tls_cert_file, "TLS: this PEM certificate chain for agents and clients");
  serve->add_option("--tls-key", so.tls_key_file, "TLS: the certificate's PEM private key");
  serve->add_option("--tls-ca", so.tls_ca_file, "TLS: agents and clients must present a certificate of this PEM CA");
  serve->add_flag("--insecure", so.insecure, "listen in plain text on a non-loopback --bind");
  serve->add_option("--port", so.port, "port (default 0: the OS chooses)");
  serve->add_option("--port-file", so.port_file, "write the port here once listening");
  serve->add_option("--token-file", so.token_file,
                    "cluster-token mode, loopback only: every peer presenting this file's token may do everything");
  serve->add_option("--identities", so.identities_file,
                    "a credential and role per user, node and operator (docs/security.md; `aryl token` manages it)");
  serve->add_flag("--metrics-auth", so.metrics_auth,
                  "/metrics and /healthz answer only a reader's or an admin's bearer token (needs --identities)");
  serve->add_flag("--metrics-tls", so.metrics_tls, "/metrics and /healthz over HTTPS with the --tls-cert certificate");
  serve->add_option("--agent-wait", so.agent_wait_s, "seconds to wait for every agent (default 60)");
  serve->add_option("--work-dir", so.work_dir, "folder for the jobs' checkpoints (default live/)");
  serve->add_option("--state", so.state_file,
                    "journal the run in this SQLite file; an existing one's run is carried on after a restart");
  serve->add_option("--stop-grace", so.stop_grace_s, "seconds from SIGTERM to SIGKILL for stopped workers");
  serve->add_option("--metrics-port", so.metrics_port, "serve Prometheus metrics on this port (0: the OS chooses)");
  serve->add_option("--metrics-bind", so.metrics_bind, "address for metrics (default 127.0.0.1)");
  serve->add_option("--metrics-port-file", so.metrics_port_file, "write the metrics port here");
  serve->add_flag("--until-stopped", so.until_stopped,
                  "serve until SIGINT or SIGTERM, not only until every known job is done");
  serve->add_option("--join", so.join,
                    "a live inventory: the cluster is the first N agents to register, as they describe their "
                    "machines (default 0: the config's t0.., i0..)");
  serve->add_flag("--no-workload", so.no_workload, "start with no jobs: only `aryl submit` brings them (implies --until-stopped)");

  aryl::live::agent_options ao;
  std::string agent_token, agent_pool = "training";
  auto* agent_cmd = app.add_subcommand("agent", "live mode: the node agent of one machine");
  std::string agent_host;
  agent_cmd->add_option("--host", agent_host, "scheduler address (default 127.0.0.1, or ARYL_ADDR's host)");
  agent_cmd->add_option("--port", ao.port, "scheduler port (default: ARYL_ADDR=HOST:PORT)");
  agent_cmd->add_option("--token-file", agent_token,
                        "file holding the token: the cluster token, or this node's (default: ARYL_TOKEN_FILE)");
  std::string agent_tls_ca, agent_tls_cert, agent_tls_key;
  agent_cmd->add_option("--tls-ca", agent_tls_ca, "TLS: verify serve against this PEM CA (default: ARYL_TLS_CA)");
  agent_cmd->add_option("--tls-cert", agent_tls_cert, "TLS: present this certificate (default: ARYL_TLS_CERT)");
  agent_cmd->add_option("--tls-key", agent_tls_key, "TLS: its private key (default: ARYL_TLS_KEY)");
  agent_cmd->add_flag("--insecure", ao.insecure, "without TLS, send the token in plain text to a non-loopback address too");
  agent_cmd->add_option("--name", ao.name, "this machine's server name (as in the scheduler's config)")->required();
  agent_cmd->add_option("--gpu-type", ao.gpu_type, "GPU type (default: nvidia-smi's, else V100)");
  agent_cmd->add_option("--gpus", ao.gpus, "GPUs (default: nvidia-smi's count, else 8)");
  agent_cmd->add_option("--pool", agent_pool, "training | inference");
  agent_cmd->add_option("--address", ao.address,
                        "where other machines reach this one's workers: MASTER_ADDR of jobs whose rank 0 runs here "
                        "(default: the address serve sees it connect from)");
  agent_cmd->add_option("--work-dir", ao.work_dir, "folder for worker logs")->required();
  agent_cmd->add_option("--heartbeat", ao.heartbeat_s, "seconds between heartbeats (default 1)");
  agent_cmd->add_option("--fence-after", ao.fence_after_s,
                        "stop the workers when nothing is heard from the scheduler for this many seconds "
                        "(default 0: never; keep it plus the stop grace under serve's detection grace)");
  agent_cmd->add_option("--give-up-after", ao.give_up_after_s,
                        "stop (exit 3) after this many seconds without being registered with the scheduler "
                        "(default 0: keep reconnecting)");
  agent_cmd->add_option("--pass-env", ao.pass_env,
                        "also give workers this variable of the agent's environment (NAME, or PREFIX*; repeatable; "
                        "never an ARYL_* one)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  agent_cmd->add_flag("--allow-root-jobs", ao.allow_root_jobs, "run a launch that names a user of uid 0 (as root)");

  app.add_subcommand("worker", "live mode: an emulated training worker, configured by ARYL_* variables");

  aryl::live::client_options co;
  std::string client_token;
  uint32_t demand_servers = 0;
  std::string client_host;
  auto client_flags = [&](CLI::App* c) {
    c->add_option("--host", client_host, "scheduler address (default 127.0.0.1, or ARYL_ADDR's host)");
    c->add_option("--port", co.port, "scheduler port (default: ARYL_ADDR=HOST:PORT)");
    c->add_option("--token-file", client_token,
                  "file holding the token: the cluster token, or your identity's (default: ARYL_TOKEN_FILE)");
    c->add_option("--tls-ca", co.tls_ca_file, "TLS: verify serve against this PEM CA (default: ARYL_TLS_CA)");
    c->add_option("--tls-cert", co.tls_cert_file, "TLS: present this certificate (default: ARYL_TLS_CERT)");
    c->add_option("--tls-key", co.tls_key_file, "TLS: its private key (default: ARYL_TLS_KEY)");
    c->add_flag("--insecure", co.insecure, "without TLS, send the token in plain text to a non-loopback address too");
  };
  aryl::live::status_flags stf;
  auto* status_cmd = app.add_subcommand("status", "live mode: queued and running jobs, servers and loans (as squeue)");
  client_flags(status_cmd);
  status_cmd->add_flag("--json", stf.json, "one JSON object instead of tables (the jobs the other flags keep)");
  status_cmd->add_flag("--all", stf.all, "ended jobs too, with their outcome");
  status_cmd->add_flag("--array,-r", stf.expand_arrays,
                       "one row per array task (as squeue --array); by default the table folds each array into one "
                       "row, JOB_[TASKS] (--json always lists every task)");
  auto list_flag = [&](const char* name, std::vector<std::string>& to, const char* what) {
    status_cmd->add_option(name, to, what)->delimiter(',')->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  };
  list_flag("--user", stf.users,
            "only jobs these users submitted (comma list; users are known only when serve runs with --identities: "
            "without them no job matches)");
  list_flag("--tenant", stf.tenants, "only jobs of these tenants, and only their rows of the tenant table (comma list)");
  list_flag("--server", stf.servers,
            "only jobs with workers on these servers, and only their rows of the server table (comma list)");
  status_cmd->add_option("--state", stf.states,
                         "only jobs in these states: queued, running, done, failed, cancelled, or Slurm's PD, R, CD, "
                         "F, CA (comma list; an ended state asks for ended jobs, as --all)");
  status_cmd->add_option("--sort", stf.sort, "order jobs by this column (a --format name); a leading - for descending");
  status_cmd->add_option("--format", stf.format,
                         "only the job table, in these columns (comma list): " + aryl::live::column_names());
  double status_watch = 0;
  status_cmd->add_option("--watch", status_watch, "print again every N seconds (fractions allowed) until SIGINT or SIGTERM");
  std::string logs_job;
  uint32_t logs_rank = 0;
  bool logs_follow = false;
  auto* logs_cmd = app.add_subcommand("logs", "live mode: a job's worker output, fetched from its agent");
  client_flags(logs_cmd);
  logs_cmd->add_option("job", logs_job, "job id (JOB_TASK: a task of an array)")->required();
  logs_cmd->add_option("--rank", logs_rank, "which worker (default 0)");
  logs_cmd->add_flag("--follow,-f", logs_follow, "keep printing what it writes while the job runs");
  std::vector<std::string> show_what;
  bool show_json = false;
  auto* show_cmd = app.add_subcommand(
      "show", "live mode: `show JOB`: one job's spec, allocation history and outcome (as scontrol show job); "
              "`show node NAME`: a server's size, state, hold, agent and the jobs and ranks on it");
  client_flags(show_cmd);
  show_cmd->add_option("what", show_what, "JOB (a job id; JOB_TASK: a task of an array), or: node NAME")->required()->expected(1, 2);
  show_cmd->add_flag("--json", show_json, "one JSON object instead of text");
  auto* demand_cmd = app.add_subcommand(
      "demand", "live mode: set the inference demand from now on; serve keeps ceil(N x (1 + inference.headroom)) "
                "inference servers serving (headroom 0.1 by default: 10% more, at most every inference server)");
  client_flags(demand_cmd);
  demand_cmd
      ->add_option("servers", demand_servers,
                   "inference servers needed, before serve adds inference.headroom (0.1 by default: 10%)")
      ->required();

  aryl::wire::submit job;
  std::string job_file;
  auto* submit_cmd = app.add_subcommand("submit", "live mode: submit a training job; prints its id");
  client_flags(submit_cmd);
  submit_cmd->add_option("--file", job_file, "the job in YAML or JSON (flags given too override its keys)");
  auto* name_opt = submit_cmd->add_option("--name", job.name, "job name");
  auto* gpus_opt = submit_cmd->add_option("--gpus", job.gpus, "requested workers, one GPU each (default 1)");
  auto* min_opt = submit_cmd->add_option("--min-workers", job.min_workers, "fewest workers (default: --gpus)");
  auto* max_opt = submit_cmd->add_option("--max-workers", job.max_workers, "most workers (default: --gpus)");
  double job_duration = 0;
  auto* dur_opt = submit_cmd->add_option("--duration", job_duration,
                                         "expected run time at --gpus workers, seconds (default: the scheduler's "
                                         "live.default_estimate_s, and the job is marked unpredicted)");
  std::string job_gpu_type;
  auto* type_opt = submit_cmd->add_option("--gpu-type", job_gpu_type, "required GPU type (default: any)");
  std::string job_tenant;
  auto* tenant_opt = submit_cmd->add_option("--tenant", job_tenant, "who the job runs for (a configured tenant where tenants are configured; default: none)");
  int job_priority = 0;
  auto* priority_opt = submit_cmd->add_option("--priority", job_priority, "the job's class: higher goes first and may preempt lower (default 0)");
  std::string job_time_limit;
  auto* limit_opt = submit_cmd->add_option(
      "--time-limit", job_time_limit,
      "at this much running time the workers get SIGTERM, SIGKILL after serve's --stop-grace, and the job ends "
      "timeout: seconds (90), M:SS, H:MM:SS, D-H:MM:SS (as Slurm's --time, but a bare number is seconds) or 30s, "
      "10m, 2h, 1d (default: none)");
  uint32_t job_retries = 0;
  auto* retries_opt = submit_cmd->add_option(
      "--max-retries", job_retries,
      "times a failed job (a worker exiting non-zero, its machine lost) is run again before it ends failed "
      "(default: the scheduler's faults.max_retries)");
  std::string job_after, job_array;
  auto* after_opt = submit_cmd->add_option(
      "--after", job_after,
      "start only once these jobs ended: JOB[:ok|any|notok][,JOB...] (Slurm's afterok, afterany, afternotok; ok by "
      "default; an array's id: each of its tasks). A job whose dependency can never be met ends "
      "dependency_never_met");
  auto* array_opt = submit_cmd->add_option(
      "--array", job_array,
      "an array of tasks: ids 0-99, 1,3,5-7 or 0-15:4, and %K for at most K queued or running at once (0-99%10); "
      "each task gets ARYL_ARRAY_TASK_ID; prints the array's id");
  bool job_hold = false;
  submit_cmd->add_flag("--hold", job_hold, "held from the start: not started until `aryl release`");
  std::string job_key;
  auto* key_opt = submit_cmd->add_option(
      "--key", job_key,
      "a key of yours (1-256 bytes): a submit of yours with the same key prints the first one's id and takes no "
      "second job, so a submit whose answer was lost can be repeated safely");
  std::vector<std::string> job_command;
  submit_cmd->add_option("command", job_command, "worker argv after -- (default: the configured worker)");
  std::string cancel_job;
  auto* cancel_cmd = app.add_subcommand("cancel", "live mode: cancel a queued or running job, an array, or one task");
  client_flags(cancel_cmd);
  cancel_cmd
      ->add_option("job", cancel_job,
                   "job id (as `aryl submit` printed it): an array's id cancels each of its tasks, JOB_TASK one task")
      ->required();
  aryl::cli::queue_commands queue_cmds;
  aryl::cli::add_queue_commands(app, queue_cmds, client_flags);
  // An operator's orders about a training server (docs/live.md, "Draining a server").
  aryl::wire::node_request node_order;
  std::string node_reason;
  bool node_now = false;
  auto* cordon_cmd = app.add_subcommand("cordon", "live mode: no new work on a server; its jobs run on");
  auto* drain_cmd = app.add_subcommand("drain", "live mode: no new work on a server; it is drained once its jobs end");
  auto* resume_cmd = app.add_subcommand("resume", "live mode: a cordoned or drained server takes work again");
  for (auto* c : {cordon_cmd, drain_cmd, resume_cmd}) {
    client_flags(c);
    c->add_option("server", node_order.server, "the server's name, as `aryl status` lists it")->required();
    if (c != resume_cmd) c->add_option("--reason", node_reason, "why, shown in `aryl status` and logged");
  }
  drain_cmd->add_flag("--now", node_now, "stop its jobs now (they checkpoint) and queue them again elsewhere");
  // An admin's identities (docs/security.md, "Enrolling").
  aryl::wire::token_request token_order;
  std::string token_role, token_gpu_type, token_pool, token_store;
  bool token_cert = false;
  auto* token_cmd = app.add_subcommand("token", "live mode: create, revoke or list identities (admin)");
  token_cmd->require_subcommand(1);
  auto* token_create = token_cmd->add_subcommand("create", "a new identity; prints its token once");
  auto* token_revoke = token_cmd->add_subcommand("revoke", "refuse an identity from its next request on");
  auto* token_list = token_cmd->add_subcommand("list", "every identity: name, role, credential kind, enrolment");
  for (auto* c : {token_create, token_revoke, token_list}) {
    client_flags(c);
    c->add_option("--identities", token_store,
                  "change this identities file directly instead of asking serve (with serve stopped: the first admin)");
  }
  for (auto* c : {token_create, token_revoke}) c->add_option("name", token_order.name, "the identity's name")->required();
  token_create->add_option("--role", token_role, "admin | user | agent | reader")->required();
  token_create->add_option("--gpu-type", token_gpu_type, "agent: the GPU type its node must register with");
  token_create->add_option("--pool", token_pool, "agent: the pool its node must register in (training | inference)");
  token_create->add_flag("--cert", token_cert,
                         "with --identities: no token; the identity presents a TLS client certificate whose CN is its name");

  aryl::cli::history_flags hf;
  auto* history_cmd = aryl::cli::add_history_command(app, hf);
  client_flags(history_cmd);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  // The scheduler's address, token and CA of a client command: flags, else the environment,
  // else the client config file.
  aryl::live::env_lookup environment = [](const char* v) { return std::getenv(v); };
  auto connect_to = [&](CLI::App* cmd) {
    std::optional<uint16_t> port;
    if (cmd->count("--port") > 0) port = co.port;
    auto file = aryl::live::find_client_config(environment);
    auto lookup = aryl::live::with_client_config(environment, file);
    for (auto [var, field] : {std::pair{"ARYL_TLS_CA", &co.tls_ca_file}, std::pair{"ARYL_TLS_CERT", &co.tls_cert_file},
                              std::pair{"ARYL_TLS_KEY", &co.tls_key_file}})
      if (const char* v = lookup(var); v && field->empty()) *field = v;
    if (co.tls_ca_file.empty() && !(co.tls_cert_file.empty() && co.tls_key_file.empty()))
      throw aryl::input_error(cmd->get_name() + ": --tls-cert and --tls-key are for TLS: give --tls-ca (or ARYL_TLS_CA) too");
    auto e = aryl::live::resolve_endpoint(cmd->get_name(), client_host, port, client_token, lookup,
                                          !co.tls_cert_file.empty());
    co.host = e.host;
    co.port = e.port;
    if (!e.token_file.empty()) co.token = aryl::live::read_token_file(e.token_file);
  };
  try {
    if (*sim) return simulate(sf);
    if (*config_cmd) {
      if (config_markdown) std::cout << aryl::config_keys_markdown();
      else std::cout << aryl::effective_config_json(build_config(cf)) << '\n';
      return 0;
    }
    if (*history_cmd) {
      auto now = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch());
      if (!hf.file.empty())
        for (auto* flag : {"--host", "--port", "--token-file", "--tls-ca", "--tls-cert", "--tls-key"})
          if (history_cmd->count(flag) > 0)
            throw aryl::input_error(fmt::format("history: {} is for asking serve; --state/--db reads the file "
                                                "instead: give one or the other",
                                                flag));
      return aryl::cli::run_history(hf, now.count(), std::cout, [&] {
        connect_to(history_cmd);
        return co;
      });
    }
    if (*serve) {
      aryl::live::stamped_log stamped(std::cerr.rdbuf());
      std::ostream log(&stamped);
      return aryl::live::run_serve(build_config(vf), so, std::cout, log);
    }
    if (*agent_cmd) {
      std::optional<uint16_t> port;
      if (agent_cmd->count("--port") > 0) port = ao.port;
      for (auto [var, field] : {std::pair{"ARYL_TLS_CA", &agent_tls_ca}, std::pair{"ARYL_TLS_CERT", &agent_tls_cert},
                                std::pair{"ARYL_TLS_KEY", &agent_tls_key}})
        if (const char* v = std::getenv(var); v && *v && field->empty()) *field = v;
      auto e = aryl::live::resolve_endpoint("agent", agent_host, port, agent_token,
                                            [](const char* v) { return std::getenv(v); }, !agent_tls_cert.empty());
      ao.host = e.host;
      ao.port = e.port;
      if (agent_tls_ca.empty() && !(agent_tls_cert.empty() && agent_tls_key.empty()))
        throw aryl::input_error("agent: --tls-cert and --tls-key are for TLS: give --tls-ca (or ARYL_TLS_CA) too");
      if (!agent_tls_ca.empty()) ao.tls = aryl::net::tls_client_context(agent_tls_ca, agent_tls_cert, agent_tls_key);
      // What the flags do not say, the machine does, where nvidia-smi is installed.
      bool typed = agent_cmd->count("--gpu-type") > 0, counted = agent_cmd->count("--gpus") > 0;
      std::string note;
      if (!typed || !counted)
        if (auto found = aryl::live::detect_gpus()) {
          if (!typed) ao.gpu_type = found->gpu_type;
          if (!counted) ao.gpus = found->count;
          note = fmt::format("agent {}: nvidia-smi lists {} x {}; registering {} x {}", ao.name, found->count,
                             found->gpu_type, ao.gpus, ao.gpu_type);
        }
      return agent(ao, e.token_file, agent_pool, note);
    }
    if (app.got_subcommand("worker")) return aryl::live::run_worker(std::cerr);
    if (*submit_cmd) {
      // The file first, then the flags given on the command line over it.
      aryl::wire::submit from_flags = job;
      job = aryl::wire::submit{};
      job.min_workers = job.max_workers = 0;  // unless given: the requested size
      if (!job_file.empty()) aryl::live::read_job_file(job_file, job);
      if (*name_opt) check_name("submit: --name", from_flags.name);
      if (*name_opt) job.name = from_flags.name;
      if (*gpus_opt) job.gpus = from_flags.gpus;
      if (*min_opt) job.min_workers = from_flags.min_workers;
      if (*max_opt) job.max_workers = from_flags.max_workers;
      if (*dur_opt) job.expected_duration_s = job_duration;
      if (*type_opt) check_name("submit: --gpu-type", job_gpu_type);
      if (*type_opt) job.gpu_type = job_gpu_type;
      if (*tenant_opt) check_name("submit: --tenant", job_tenant);
      if (*tenant_opt) job.tenant = job_tenant;
      if (*priority_opt) job.priority = job_priority;
      if (*limit_opt) job.time_limit_s = aryl::live::time_limit_of("submit: --time-limit", job_time_limit);
      if (*retries_opt) job.max_retries = job_retries;
      if (*after_opt) check_name("submit: --after", job_after);
      if (*after_opt) job.after = job_after;
      if (*array_opt) check_name("submit: --array", job_array);
      if (*array_opt) job.array = job_array;
      if (job_hold) job.hold = true;
      if (*key_opt) {
        if (auto why = aryl::submit_key_problem(job_key); !why.empty()) throw aryl::input_error("submit: --key: " + why);
        job.key = job_key;
      }
      if (!job_command.empty()) job.command = job_command;
      if ((*min_opt && from_flags.min_workers == 0) || (*max_opt && from_flags.max_workers == 0))
        throw aryl::input_error("submit: --min-workers and --max-workers must be at least 1");
      if (job.min_workers == 0) job.min_workers = job.gpus;
      if (job.max_workers == 0) job.max_workers = job.gpus;
      connect_to(submit_cmd);
      auto reply = aryl::live::ask(co, job, true);
      auto* ok = std::get_if<aryl::wire::submit_ok>(&*reply);
      if (!ok) throw aryl::input_error("submit: the scheduler answered '" + std::string(aryl::wire::type_of(*reply)) + "'");
      std::cout << ok->job_id << '\n';
      if (ok->note) std::cerr << "aryl: job " << ok->job_id << ": " << aryl::escape_control(*ok->note) << '\n';
      return 0;
    }
    if (*cancel_cmd) {
      auto ref = aryl::cli::parse_job_ref("cancel", cancel_job);
      connect_to(cancel_cmd);
      std::cout << (ref.task ? aryl::cli::cancel_task(co, ref) : aryl::live::cancel(co, ref.job)) << '\n';
      return 0;
    }
    if (aryl::cli::run_queue_commands(queue_cmds, connect_to, co, std::cout)) return 0;
    for (auto* c : {cordon_cmd, drain_cmd, resume_cmd}) {
      if (!*c) continue;
      node_order.action = c->get_name();
      if (!node_reason.empty()) check_name(node_order.action + ": --reason", node_reason);
      if (!node_reason.empty()) node_order.reason = node_reason;
      if (node_now) node_order.now = true;
      connect_to(c);
      std::cout << aryl::live::order_node(co, node_order) << '\n';
      return 0;
    }
    if (*token_cmd) {
      auto* c = *token_create ? token_create : *token_revoke ? token_revoke : token_list;
      token_order.action = c->get_name();
      if (!token_role.empty()) token_order.role = token_role;
      if (!token_gpu_type.empty()) token_order.gpu_type = token_gpu_type;
      if (!token_pool.empty()) token_order.pool = token_pool;
      if (!token_store.empty()) {
        std::cout << aryl::live::change_identities(token_store, token_order, token_cert);
        return 0;
      }
      if (token_cert) throw aryl::input_error("token create --cert: give --identities FILE (serve makes tokens only)");
      connect_to(c);
      auto reply = aryl::live::ask(co, token_order, true);
      auto* r = std::get_if<aryl::wire::token_reply>(&*reply);
      if (!r) throw aryl::input_error("token: the scheduler answered '" + std::string(aryl::wire::type_of(*reply)) + "'");
      std::istringstream lines(r->text);  // a line per identity
      for (std::string line; std::getline(lines, line);) std::cout << aryl::escape_control(line) << '\n';
      if (r->token) std::cout << *r->token << '\n';
      return 0;
    }
    if (*logs_cmd) {
      auto ref = aryl::cli::parse_job_ref("logs", logs_job);
      connect_to(logs_cmd);
      aryl::live::logs(co, ref.job, ref.task, logs_rank, logs_follow, std::cout);
      return 0;
    }
    if (*show_cmd && show_what.front() == "node") {
      if (show_what.size() != 2) throw aryl::input_error("show node: give the server's name (`aryl show node t0`)");
      connect_to(show_cmd);
      auto reply = aryl::live::ask(co, aryl::wire::show_node_request{show_what[1]}, true);
      auto* s = std::get_if<aryl::wire::show_node_reply>(&*reply);
      if (!s) throw aryl::input_error("show node: the scheduler answered '" + std::string(aryl::wire::type_of(*reply)) + "'");
      if (show_json) std::cout << aryl::live::show_node_json(*s) << '\n';
      else aryl::live::print_show_node(std::cout, *s);
      return 0;
    }
    if (*show_cmd) {
      if (show_what.size() != 1)
        throw aryl::input_error("show: give a job id (JOB, or JOB_TASK of an array), or node NAME");
      auto ref = aryl::cli::parse_job_ref("show", show_what.front());
      connect_to(show_cmd);
      auto reply = aryl::live::ask(co, aryl::wire::show_request{ref.job, ref.task}, true);
      auto* s = std::get_if<aryl::wire::show_reply>(&*reply);
      if (!s) throw aryl::input_error("show: the scheduler answered '" + std::string(aryl::wire::type_of(*reply)) + "'");
      if (show_json) std::cout << aryl::live::show_json(*s) << '\n';
      else aryl::live::print_show(std::cout, *s);
      return 0;
    }
    if (*status_cmd || *demand_cmd) {
      connect_to(*demand_cmd ? demand_cmd : status_cmd);
      if (*demand_cmd) {
        aryl::live::ask(co, aryl::wire::demand{demand_servers}, false);
        return 0;
      }
      if (status_cmd->count("--watch") > 0) stf.watch_s = status_watch;
      std::signal(SIGTERM, request_stop);
      std::signal(SIGINT, request_stop);
      aryl::live::run_status(co, stf, std::cout, stop_requested);
      return 0;
    }
    if (!in_file.empty()) {
      std::error_code ec;
      if (std::filesystem::is_directory(in_file, ec)) throw aryl::input_error(in_file + ": is a directory, not a JSON file");
      std::ifstream in(in_file);
      if (!in) throw aryl::input_error(in_file + ": cannot open");
      return aryl::run_solve_command(problem, method, in, std::cout, std::cerr);
    }
    return aryl::run_solve_command(problem, method, std::cin, std::cout, std::cerr);
  } catch (const aryl::input_error& e) {
    std::cerr << "aryl: " << e.what() << '\n';
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "aryl: internal error: " << aryl::escape_control(e.what()) << '\n';
    return 4;
  }
}
