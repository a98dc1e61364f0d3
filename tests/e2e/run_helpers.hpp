#pragma once
// Shared by the end-to-end tests: run a simulation into a temporary folder and read files.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/inputs/config.hpp"
#include "runtime/sim/driver.hpp"
#include "runtime/inputs/load_inputs.hpp"

namespace aryl::test {

/// A fresh temporary path, "aryl-test-PID-NAME": two test runs at once on one machine do not
/// share it. Every path of this process so named (callers may add to one) is removed when the
/// test program ends, unless ARYL_KEEP_TEST_DIRS is set, for a look after a failure.
inline std::string temp_dir(const std::string& name) {
  static const std::string prefix = "aryl-test-" + std::to_string(::getpid()) + "-";
  static struct remover {
    ~remover() {
      if (std::getenv("ARYL_KEEP_TEST_DIRS")) return;
      std::error_code ignored;
      std::vector<std::filesystem::path> ours;
      for (auto& e : std::filesystem::directory_iterator(std::filesystem::temp_directory_path(), ignored))
        if (e.path().filename().string().rfind(prefix, 0) == 0) ours.push_back(e.path());
      for (auto& p : ours) std::filesystem::remove_all(p, ignored);
    }
  } at_exit;
  auto p = std::filesystem::temp_directory_path() / (prefix + name);
  std::filesystem::remove_all(p);
  return p.string();
}

/// Writes `text` to a fresh temporary file named for `name` (unique per test); its path.
inline std::string write_temp_file(const std::string& name, const std::string& text) {
  auto path = temp_dir(name);
  std::ofstream(path) << text;
  return path;
}

/// The lines of `log` that contain `needle`.
inline std::vector<std::string> lines_with(const std::string& log, const std::string& needle) {
  std::vector<std::string> out;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);)
    if (line.find(needle) != std::string::npos) out.push_back(line);
  return out;
}

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline run_outcome run(config c) {
  c.progress = false;
  return run_simulation(c, load_inputs(c), nullptr);
}

/// The reference setup of ../shared/traces/README.md: Philly VC 11cb48, Oct-Nov 2017.
inline config philly_reference(int servers, const std::string& policy, const std::string& placement) {
  config c;
  c.trace_file = "../shared/traces/philly-sia/philly.csv";
  c.trace_format = "philly";
  c.trace_vc = "11cb48";
  c.trace_from = "2017-10-01";
  c.trace_to = "2017-12-01";
  c.training.servers = servers;
  c.inference.servers = 0;
  c.policy = policy;
  set_config_key(c, "placement", placement, "test");
  c.elastic_fraction = 0;
  c.restart_overhead_s = 0;
  return c;
}

} // namespace aryl::test
