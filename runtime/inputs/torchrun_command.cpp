#include "runtime/inputs/torchrun_command.hpp"

#include <algorithm>
#include <array>
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

/// One of torchrun's options as written: its name, its value, and the words it took.
struct option {
  std::string_view key, value;
  size_t first = 0, end = 0;
};

/// torchrun's options of `argv` from `i`, up to the script (the first word that is no
/// option's value); `script` is set to where it starts.
std::vector<option> options_of(const std::vector<std::string>& argv, size_t i, size_t& script) {
  std::vector<option> out;
  for (; i < argv.size(); ++i) {
    std::string_view a = argv[i];
    if (a == "--" || !a.starts_with("-")) break;
    option o{a, {}, i, i + 1};
    if (auto eq = a.find('='); eq != std::string_view::npos) {
      o.key = a.substr(0, eq);
      o.value = a.substr(eq + 1);
    } else if (a == "--standalone" || a == "--no-python" || a == "--no_python" || a == "--run-path" ||
               a == "--run_path" || a == "-m" || a == "--module") {
    } else if (i + 1 < argv.size()) {
      o.value = argv[++i];
      o.end = i + 1;
    }
    out.push_back(o);
  }
  script = i;
  return out;
}

/// The options aryl sets for each node, in both spellings torchrun accepts.
bool aryl_sets(std::string_view key) {
  static constexpr std::array<std::string_view, 14> owned{
      "nnodes", "nproc_per_node", "rdzv_backend", "rdzv_endpoint", "rdzv_id", "rdzv_conf", "standalone",
      "max_restarts", "monitor_interval", "node_rank", "master_addr", "master_port", "redirects", "tee"};
  if (key == "-r" || key == "-t") return true;  // --redirects, --tee
  if (!key.starts_with("--")) return false;
  std::string k(key.substr(2));
  std::replace(k.begin(), k.end(), '-', '_');
  return std::find(owned.begin(), owned.end(), k) != owned.end();
}

} // namespace

bool is_torchrun(const std::vector<std::string>& argv) { return torchrun_options(argv) != 0; }

std::string torchrun_problem(const job_spec& j) {
  size_t i = torchrun_options(j.command);
  if (i == 0) return {};
  std::optional<std::string> nnodes, nproc;
  size_t script = 0;
  for (auto& o : options_of(j.command, i, script)) {
    if (o.key == "--nnodes") nnodes = std::string(o.value);
    if (o.key == "--nproc-per-node" || o.key == "--nproc_per_node") nproc = std::string(o.value);
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

std::vector<std::string> torchrun_node_command(const std::vector<std::string>& argv, const torchrun_node& n) {
  size_t i = torchrun_options(argv);
  if (i == 0) return argv;
  std::vector<std::string> out(argv.begin(), argv.begin() + static_cast<long>(i));
  size_t script = 0;
  for (auto& o : options_of(argv, i, script))
    if (!aryl_sets(o.key)) out.insert(out.end(), argv.begin() + static_cast<long>(o.first), argv.begin() + static_cast<long>(o.end));
  std::string conf = "last_call_timeout=" + std::to_string(n.last_call_s);
  if (n.store_outside) conf = "is_host=false," + conf;
  for (auto s : {"--nnodes=1:" + std::to_string(n.max_nodes), "--nproc_per_node=" + std::to_string(n.nproc),
                 std::string("--rdzv_backend=c10d"), "--rdzv_endpoint=" + n.endpoint, "--rdzv_id=" + n.rdzv_id,
                 "--rdzv_conf=" + conf, "--max_restarts=" + std::to_string(n.max_restarts),
                 std::string("--monitor_interval=1"), std::string("--redirects=1"), std::string("--tee=1")})
    out.push_back(std::move(s));
  out.insert(out.end(), argv.begin() + static_cast<long>(script), argv.end());
  return out;
}

} // namespace aryl
