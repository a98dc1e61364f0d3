// Fuzz target for the training-trace readers (runtime/inputs/trace_reader.hpp), built twice:
// fuzz_trace_canonical and fuzz_trace_philly (ARYL_FUZZ_TRACE_FORMAT). The input is the CSV file,
// optionally preceded by one line "#!key=value;..." setting trace_options (format, vc, from, to,
// skip); without it the file is read twice, failing on and skipping bad rows. A loaded trace
// then goes through assign_job_attributes. Contract: input_error or a trace_load that keeps the
// promises of trace_reader.hpp.
#include <cmath>
#include <string>
#include <vector>

#include "runtime/inputs/job_attributes.hpp"
#include "runtime/inputs/trace_reader.hpp"
#include "tests/fuzz/fuzz_support.hpp"

#ifndef ARYL_FUZZ_TRACE_FORMAT
#error "define ARYL_FUZZ_TRACE_FORMAT (canonical or philly)"
#endif

namespace {

using namespace aryl;
using aryl::fuzz::require;

/// The promises of read_trace and assign_job_attributes about each job.
void check_jobs(const std::vector<job_spec>& jobs, bool attributes_assigned) {
  for (size_t i = 0; i < jobs.size(); ++i) {
    const job_spec& j = jobs[i];
    const std::string at = "job " + std::to_string(i) + " '" + j.name + "': ";
    require(j.index == i, at + "index is not its position");
    require(j.submit.us >= 0, at + "negative submit time");
    require(i == 0 || jobs[i - 1].submit <= j.submit, at + "jobs not sorted by submit time");
    require(j.gpus >= 1, at + "gpus < 1");
    require(std::isfinite(j.duration_s) && j.duration_s > 0, at + "duration not finite and > 0");
    require(j.min_workers >= 1 && j.min_workers <= j.max_workers, at + "min_workers not in [1, max_workers]");
    if (j.elastic)
      require(j.min_workers <= j.gpus && j.gpus <= j.max_workers, at + "gpus outside [min_workers, max_workers]");
    else
      require(j.min_workers == j.gpus && j.max_workers == j.gpus, at + "inelastic job with min/max != gpus");
    if (attributes_assigned)
      require(std::isfinite(j.predict_factor) && j.predict_factor > 0, at + "predict_factor not finite and > 0");
  }
}

void read_and_check(const std::string& path, const trace_options& o, uint64_t seed) {
  trace_load t;
  if (!fuzz::returns_or_input_error("read_trace", [&] { t = read_trace(path, o); })) return;
  require(t.explicit_elastic.size() == t.jobs.size(), "explicit_elastic has one flag per job");
  require(o.skip_bad_rows || t.bad_rows == 0, "bad_rows counted without skip_bad_rows");
  check_jobs(t.jobs, false);
  job_attribute_options a;
  a.elastic_fraction = 0.5;
  a.mispredict_fraction = 0.5;
  a.seed = seed;
  fuzz::returns_or_input_error("assign_job_attributes",
                               [&] { assign_job_attributes(t.jobs, a, &t.explicit_elastic); });
  check_jobs(t.jobs, true);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const fuzz::scratch_dir dir("trace_" ARYL_FUZZ_TRACE_FORMAT);
  std::string_view text = fuzz::as_text(data, size);
  trace_options o;
  o.format = ARYL_FUZZ_TRACE_FORMAT;
  bool both = true;
  if (text.starts_with("#!")) {
    const size_t eol = text.find('\n');
    std::string_view opts = text.substr(2, eol == std::string_view::npos ? text.npos : eol - 2);
    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
    both = false;
    while (!opts.empty()) {
      const size_t semi = opts.find(';');
      const std::string_view kv = opts.substr(0, semi);
      opts = semi == std::string_view::npos ? std::string_view{} : opts.substr(semi + 1);
      const size_t eq = kv.find('=');
      if (eq == std::string_view::npos) continue;
      const std::string_view k = kv.substr(0, eq);
      const std::string v(kv.substr(eq + 1));
      if (k == "format") o.format = v;
      else if (k == "vc") o.vc = v;
      else if (k == "from") o.from = v;
      else if (k == "to") o.to = v;
      else if (k == "skip") o.skip_bad_rows = v == "1";
    }
  }
  const std::string path = dir.write("trace.csv", text);
  read_and_check(path, o, size);
  if (both) {
    o.skip_bad_rows = true;
    read_and_check(path, o, size);
  }
  return 0;
}
