// Fuzz target for the configuration (runtime/inputs/config.hpp), built twice: fuzz_config_yaml (the
// input is a YAML file for load_config_file) and fuzz_config_set (each input line is a --set
// key=value for apply_override). validate_config then runs on the result.
// Contract: input_error, or a config whose numbers are all finite (a setter that lets "nan" or
// "inf" through is a finding).
#include <cmath>
#include <string>

#include "runtime/inputs/config.hpp"
#include "tests/fuzz/fuzz_support.hpp"

#if !defined(ARYL_FUZZ_CONFIG_YAML) && !defined(ARYL_FUZZ_CONFIG_SET)
#error "define ARYL_FUZZ_CONFIG_YAML or ARYL_FUZZ_CONFIG_SET"
#endif

namespace {

void check_finite(const aryl::config& c) {
  const std::pair<const char*, double> numbers[] = {
      {"scheduler.migrate_min_gain_s", c.scheduler.migrate_min_gain_s},
      {"scheduler.long_job_s", c.scheduler.long_job_s},
      {"model.eff_exponent", c.eff_exponent},
      {"synthetic.load", c.synthetic_load},
      {"jobs.restart_overhead_s", c.restart_overhead_s},
      {"jobs.scale_overhead_s", c.scale_overhead_s},
      {"jobs.elastic_fraction", c.elastic_fraction},
      {"jobs.min_workers_fraction", c.min_workers_fraction},
      {"jobs.max_workers_factor", c.max_workers_factor},
      {"jobs.mispredict_fraction", c.mispredict_fraction},
      {"jobs.mispredict_error", c.mispredict_error},
      {"inference.peak_utilisation", c.inference_peak_utilisation},
      {"inference.headroom", c.inference_headroom},
      {"run.speedup", c.speedup},
      {"run.stall_limit_s", c.stall_limit_s},
      {"run.max_lag_s", c.max_lag_s},
  };
  for (const auto& [key, value] : numbers)
    aryl::fuzz::require(std::isfinite(value), std::string("config key ") + key + " accepted a non-finite value");
  for (double t : c.scheduler.las_thresholds)
    aryl::fuzz::require(std::isfinite(t), "config key scheduler.las_threshold_gpu_s accepted a non-finite value");
  for (const auto& [type, speed] : c.gpu_speed)
    aryl::fuzz::require(std::isfinite(speed) && speed > 0, "config key gpu_speed." + type + " accepted a non-finite value");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace aryl;
  const std::string_view text = fuzz::as_text(data, size);
  config c;
#ifdef ARYL_FUZZ_CONFIG_YAML
  static const fuzz::scratch_dir dir("config_yaml");
  const std::string path = dir.write("config.yaml", text);
  if (!fuzz::returns_or_input_error("load_config_file", [&] { load_config_file(c, path); })) return 0;
#else
  size_t start = 0;
  while (start < text.size()) {
    const size_t eol = std::min(text.find('\n', start), text.size());
    const std::string line(text.substr(start, eol - start));
    start = eol + 1;
    if (!fuzz::returns_or_input_error("apply_override", [&] { apply_override(c, line); })) return 0;
  }
#endif
  check_finite(c);
  fuzz::returns_or_input_error("validate_config", [&] { validate_config(c); });
  return 0;
}
