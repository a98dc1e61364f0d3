#include "runtime/inputs/load_inputs.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "solvers/control_chars.hpp"
#include "solvers/input_error.hpp"
#include "runtime/inputs/job_attributes.hpp"
#include "runtime/inputs/synthetic_workload.hpp"
#include "runtime/inputs/trace_reader.hpp"

namespace aryl {

run_inputs load_inputs(const config& c, std::string* note) {
  run_inputs in;
  std::vector<bool> explicit_elastic;
  if (!c.trace_file.empty()) {
    trace_options o;
    o.format = c.trace_format;
    o.vc = c.trace_vc;
    o.from = c.trace_from;
    o.to = c.trace_to;
    o.skip_bad_rows = c.skip_bad_rows;
    auto t = read_trace(c.trace_file, o);
    if (t.jobs.empty()) throw input_error(c.trace_file + ": no jobs selected (check trace.vc, trace.from, trace.to)");
    if (note && t.bad_rows > 0)
      *note += fmt::format("{}: skipped {} malformed rows\n", escape_control(c.trace_file), t.bad_rows);
    in.jobs = std::move(t.jobs);
    explicit_elastic = std::move(t.explicit_elastic);
  } else {
    synthetic_options o;
    o.seed = c.seed;
    o.jobs = c.synthetic_jobs;
    o.cluster_gpus = c.training.servers * c.training.gpus_per_server;
    o.target_load = c.synthetic_load;
    in.jobs = generate_synthetic(o);
  }
  job_attribute_options a;
  a.elastic_fraction = c.elastic_fraction;
  a.min_workers_fraction = c.min_workers_fraction;
  a.max_workers_factor = c.max_workers_factor;
  a.mispredict_fraction = c.mispredict_fraction;
  a.mispredict_error = c.mispredict_error;
  a.unestimated_fraction = c.unestimated_fraction;
  a.seed = c.seed;
  assign_job_attributes(in.jobs, a, explicit_elastic.empty() ? nullptr : &explicit_elastic);

  if (c.inference.servers > 0) {
    if (c.inference_trace.empty()) {
      double span_days = in.jobs.back().submit.seconds() / 86400.0 + 1.0;
      in.demand = synthetic_demand(c.seed, c.inference.servers, span_days, c.inference_interval_s);
    } else if (c.inference_format == "servegen") {
      in.demand = read_servegen_demand(c.inference_trace, c.inference.servers, c.inference_peak_utilisation);
    } else {
      in.demand = read_demand_csv(c.inference_trace);
    }
  }
  std::vector<std::string> training;
  for (int i = 0; i < c.training.servers; ++i) training.push_back(fmt::format("t{}", i));
  auto all_servers = training;
  for (int i = 0; i < c.inference.servers; ++i) all_servers.push_back(fmt::format("i{}", i));
  if (!c.faults_file.empty()) in.faults = read_fault_plan(c.faults_file, all_servers);
  // Random faults are drawn inside the run; live, the testbed enacts faults from a file.
  if (c.random_faults.any() && c.mode != "simulated")
    throw input_error("faults.random.*: random faults run in simulated time only; live mode enacts a fault "
                      "plan file (--faults, scripts/live_faults.py)");
  if (c.random_faults.any()) {
    // Over the submit window and as long again: faults while the queue drains count too.
    double span_s = 2 * in.jobs.back().submit.seconds() + 86400.0;
    // Inference servers come after the training ones: each server has its own random stream.
    auto random = random_fault_plan(c.random_faults, c.seed, span_s,
                                    c.random_faults.inference_servers ? all_servers : training,
                                    static_cast<uint32_t>(in.jobs.size()),
                                    c.inference.servers);
    in.faults.insert(in.faults.end(), random.begin(), random.end());
  }
  std::stable_sort(in.faults.begin(), in.faults.end(), [](auto& a, auto& b) { return a.at < b.at; });
  // A lossy link draws each heartbeat's fate: bounded, so that a run stays quick.
  for (auto& e : in.faults)
    if (e.what == fault_event::kind::link && e.loss > 0 && e.loss < 1 && e.for_s / c.heartbeat_s > 1e7)
      throw input_error(fmt::format("{}: link: for {:g} s is more than 1e7 heartbeats of faults.heartbeat_s={:g}",
                                    e.source, e.for_s, c.heartbeat_s));
  return in;
}

} // namespace aryl
