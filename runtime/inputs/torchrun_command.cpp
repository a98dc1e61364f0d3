#include "runtime/inputs/torchrun_command.hpp"

#include <charconv>
#include <optional>
#include <string_view>

namespace aryl {
namespace {

std::optional<long> count_of(std::string_view s) {
  long v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 1 || v > 1'000'000) return std::nullopt;
  return v;
}

/// Where torchrun's own options start in `argv`, or 0: not a torchrun launch.
size_t torchrun_options(const std::vector<std::string>& argv) {
  if (argv.empty()) return 0;
  std::string_view program = argv[0];
  if (auto slash = program.rfind('/'); slash != std::string_view::npos) program.remove_prefix(slash + 1);
  if (program == "torchrun") return 1;
  for (size_t i = 1; i + 1 < argv.size(); ++i)
    if (argv[i] == "-m") return argv[i + 1] == "torch.distributed.run" ? i + 2 : 0;
  return 0;
}

} // namespace

std::string torchrun_problem(const job_spec& j) {
  size_t i = torchrun_options(j.command);
  if (i == 0) return {};
  std::optional<std::string> nnodes, nproc;
  // Its options end at the script (the first word that is no option's value).
  for (; i < j.command.size(); ++i) {
    std::string_view a = j.command[i];
    if (a == "--" || !a.starts_with("-")) break;
    std::string_view key = a, value;
    if (auto eq = a.find('='); eq != std::string_view::npos) {
      key = a.substr(0, eq);
      value = a.substr(eq + 1);
    } else if (key == "--standalone" || key == "--no-python" || key == "--no_python" || key == "--run-path" ||
               key == "--run_path" || key == "-m" || key == "--module") {
      continue;
    } else if (i + 1 < j.command.size()) {
      value = j.command[++i];
    }
    if (key == "--nnodes") nnodes = std::string(value);
    if (key == "--nproc-per-node" || key == "--nproc_per_node") nproc = std::string(value);
  }
  if (!nnodes) return {};
  std::string_view n = *nnodes;
  auto colon = n.find(':');
  auto lo = count_of(n.substr(0, colon));
  auto hi = colon == std::string_view::npos ? lo : count_of(n.substr(colon + 1));
  if (!lo || !hi || *lo > *hi)
    return "its torchrun command's --nnodes '" + *nnodes + "' is not N or MIN:MAX (whole numbers, MIN <= MAX)";
  long per = 1;
  if (nproc) {
    auto p = count_of(*nproc);
    if (!p) return {};  // gpu, auto, cpu: torchrun counts them on the machine
    per = *p;
  }
  const long want_lo = *lo * per, want_hi = *hi * per;
  if (want_lo == j.min_workers && want_hi == j.max_workers) return {};
  auto range = [](long a, long b) { return a == b ? std::to_string(a) : std::to_string(a) + ".." + std::to_string(b); };
  return "its torchrun command runs " + range(*lo, *hi) + " node(s) x " + std::to_string(per) +
         " process(es) (--nnodes, --nproc-per-node) = " + range(want_lo, want_hi) + " workers, but the job has " +
         range(j.min_workers, j.max_workers) + " (its min and max workers)";
}

} // namespace aryl
