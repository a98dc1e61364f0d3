// Fuzz target for `aryl solve` (runtime/cli/solve_command.hpp). The first input byte chooses the
// problem (byte % 4: 0 mckp, 1 reclaim greedy, 2 reclaim exact, 3 place; so the ASCII digits
// '0'..'3' read naturally in seed files), the rest is the JSON problem.
// Contract: run_solve_command returns 2 after one line on `err` and nothing on `out`, or returns
// 0 with an answer that keeps the documented promises (mckp within capacity and worth its stated
// value; reclaim returns exactly `count` loaned servers with the preemptions and scale-ins that
// follow, exact no worse than greedy; place within each server's free GPUs and type). Any
// exception, other exit code or broken promise is a finding.
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>

#include <nlohmann/json.hpp>

#include "runtime/cli/solve_command.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

using json = nlohmann::json;
using aryl::fuzz::require;

struct outcome {
  int rc = -1;
  std::string out, err;
};

outcome solve(const std::string& problem, const std::string& method, const std::string& input) {
  outcome o;
  std::istringstream in(input);
  std::ostringstream out, err;
  aryl::fuzz::returns_or_input_error("run_solve_command", [&] { o.rc = aryl::run_solve_command(problem, method, in, out, err); });
  o.out = out.str();
  o.err = err.str();
  const std::string who = "aryl solve " + problem + " " + method + ": ";
  if (o.rc == 2) {
    require(o.out.empty(), who + "wrote an answer and returned 2");
    require(!o.err.empty() && o.err.back() == '\n' && o.err.find('\n') == o.err.size() - 1,
            who + "error is not exactly one line: " + o.err);
    require(o.err.starts_with("aryl solve"), who + "error does not name the command: " + o.err);
  } else {
    require(o.rc == 0, who + "returned " + std::to_string(o.rc) + ": " + o.err);
    require(o.err.empty(), who + "returned 0 but wrote an error: " + o.err);
  }
  return o;
}

json parse_answer(const outcome& o) {
  json a = json::parse(o.out, nullptr, false);
  require(!a.is_discarded() && a.is_object(), "answer is not a JSON object: " + o.out);
  return a;
}

void check_mckp(const json& in, const json& a) {
  const double capacity = in["capacity"].get<double>();
  double weight = 0, value = 0, scale = 1;
  const json& choices = a.at("choices");
  require(choices.size() == in["classes"].size(), "mckp: not one choice per class");
  for (const json& c : in["classes"]) {
    const std::string id = c["id"].get<std::string>();
    require(choices.contains(id), "mckp: no choice for class " + id);
    const json& k = choices[id];
    if (k.is_null()) continue;
    require(k.is_number_integer() && k.get<long>() >= 0 && k.get<size_t>() < c["items"].size(),
            "mckp: choice of " + id + " is not an item index");
    const json& item = c["items"][k.get<size_t>()];
    weight += item["weight"].get<double>();
    value += item["value"].get<double>();
    scale += std::fabs(item["value"].get<double>());
  }
  require(weight <= capacity, "mckp: chosen weight " + std::to_string(weight) + " exceeds capacity");
  require(std::fabs(a.at("value").get<double>() - value) <= 1e-9 * scale, "mckp: value is not the sum of the choices");
}

/// (preempted jobs, GPUs of preempted jobs, workers scaled in) of the answer, after checking that
/// its preemptions and scale-ins are what returning its servers implies.
std::tuple<long, double, double> check_reclaim(const json& in, const json& a) {
  std::set<std::string> loaned;
  for (const json& s : in["loaned_servers"]) loaned.insert(s["id"].get<std::string>());
  std::set<std::string> returned;
  for (const json& s : a.at("returned")) {
    require(loaned.count(s.get<std::string>()) == 1, "reclaim: returned a server that is not loaned");
    require(returned.insert(s.get<std::string>()).second, "reclaim: returned a server twice");
  }
  require(static_cast<double>(returned.size()) == in["count"].get<double>(), "reclaim: did not return count servers");
  std::set<std::string> preempted;
  for (const json& j : a.at("preempted")) preempted.insert(j.get<std::string>());
  const json& scaled = a.at("scaled_in");
  long n_preempted = 0;
  double preempted_gpus = 0, scaled_workers = 0;
  for (const json& j : in["jobs"]) {
    const std::string id = j["id"].get<std::string>();
    const double per_worker = j.contains("gpus_per_worker") && !j["gpus_per_worker"].is_null()
                                  ? j["gpus_per_worker"].get<double>() : 1;
    double total = 0, lost = 0;
    for (auto it = j["placement"].begin(); it != j["placement"].end(); ++it) {
      total += it.value().get<double>();
      if (returned.count(it.key())) lost += it.value().get<double>();
    }
    const bool preempt = lost > 0 && total - lost < j["min_workers"].get<double>();
    require(preempted.count(id) == (preempt ? 1u : 0u), "reclaim: job " + id + " preempted wrongly");
    require(scaled.contains(id) == (!preempt && lost > 0), "reclaim: job " + id + " scaled in wrongly");
    if (scaled.contains(id)) require(scaled[id].get<double>() == lost, "reclaim: job " + id + " scaled in by the wrong count");
    if (preempt) {
      ++n_preempted;
      preempted_gpus += total * per_worker;
    } else {
      scaled_workers += lost;
    }
  }
  require(preempted.size() == static_cast<size_t>(n_preempted), "reclaim: preempted an unknown job");
  return {n_preempted, preempted_gpus, scaled_workers};
}

void check_place(const json& in, const json& a) {
  struct server {
    std::string type;
    double free;
  };
  std::map<std::string, server> servers;
  for (const json& s : in["servers"]) {
    const double gpus = s["gpus"].get<double>();
    const bool has_free = s.contains("free_gpus") && !s["free_gpus"].is_null();
    servers[s["id"].get<std::string>()] = {s["gpu_type"].get<std::string>(), has_free ? s["free_gpus"].get<double>() : gpus};
  }
  const json& placed = a.at("placed");
  std::set<std::string> unplaced;
  for (const json& r : a.at("unplaced")) unplaced.insert(r.get<std::string>());
  for (const json& r : in["requests"]) {
    const std::string id = r["id"].get<std::string>();
    require(placed.contains(id) != (unplaced.count(id) == 1), "place: request " + id + " not exactly once placed or unplaced");
    if (!placed.contains(id)) continue;
    double sum = 0;
    for (auto it = placed[id].begin(); it != placed[id].end(); ++it) {
      require(servers.count(it.key()) == 1, "place: request " + id + " on an unknown server");
      const double g = it.value().get<double>();
      require(g > 0, "place: request " + id + " has a non-positive share");
      server& s = servers[it.key()];
      if (r.contains("gpu_type") && !r["gpu_type"].is_null())
        require(s.type == r["gpu_type"].get<std::string>(), "place: request " + id + " on the wrong GPU type");
      s.free -= g;
      require(s.free >= 0, "place: server " + it.key() + " given more than its free GPUs");
      sum += g;
    }
    require(sum == r["gpus"].get<double>(), "place: request " + id + " placed with the wrong GPU count");
  }
  require(placed.size() + unplaced.size() == in["requests"].size(), "place: answer names unknown requests");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string input(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0: {
      const outcome o = solve("mckp", "", input);
      if (o.rc == 0) check_mckp(json::parse(input), parse_answer(o));
      break;
    }
    case 1:
    case 2: {
      const bool exact = data[0] % 4 == 2;
      const outcome o = solve("reclaim", exact ? "exact" : "greedy", input);
      if (o.rc != 0) break;
      const auto cost = check_reclaim(json::parse(input), parse_answer(o));
      if (exact) {
        const outcome g = solve("reclaim", "greedy", input);
        require(g.rc == 0, "reclaim: greedy rejects what exact accepts: " + g.err);
        require(cost <= check_reclaim(json::parse(input), parse_answer(g)), "reclaim: exact costs more than greedy");
      }
      break;
    }
    default: {
      const outcome o = solve("place", "", input);
      if (o.rc == 0) check_place(json::parse(input), parse_answer(o));
      break;
    }
  }
  return 0;
}
