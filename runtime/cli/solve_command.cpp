#include "runtime/cli/solve_command.hpp"

#include <algorithm>
#include <cmath>
#include <istream>
#include <limits>
#include <map>
#include <ostream>
#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "solvers/mckp.hpp"
#include "solvers/placement.hpp"
#include "solvers/reclaim.hpp"
#include "solvers/plural.hpp"

namespace aryl {
namespace {

using json = nlohmann::json;
using ordered = nlohmann::ordered_json;

/// Malformed input; what() is "<path>: <problem>", one line.
struct bad_input : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw bad_input(path + ": " + what);
}

const json& field(const json& obj, const char* key, const std::string& path) {
  if (!obj.is_object()) bad(path.empty() ? "input" : path, "must be an object");
  auto it = obj.find(key);
  if (it == obj.end()) bad(path.empty() ? key : path + "." + key, "missing");
  return *it;
}

const json* optional_field(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

const json& array_of(const json& v, const std::string& path) {
  if (!v.is_array()) bad(path, "must be an array");
  return v;
}

/// An integer in [lo, hi]; integral floats such as 2.0 are accepted.
int integer(const json& v, const std::string& path, int lo, int hi = std::numeric_limits<int>::max()) {
  const std::string range = hi == std::numeric_limits<int>::max()
                                ? " >= " + std::to_string(lo)
                                : " in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  if (!v.is_number()) bad(path, "must be an integer" + range);
  double d = v.get<double>();
  if (std::floor(d) != d || d < lo || d > hi) bad(path, "must be an integer" + range);
  return static_cast<int>(d);
}

double number(const json& v, const std::string& path) {
  if (!v.is_number() || !std::isfinite(v.get<double>())) bad(path, "must be a finite number");
  return v.get<double>();
}

std::string identifier(const json& v, const std::string& path) {
  if (!v.is_string() || v.get<std::string>().empty()) bad(path, "must be a non-empty string");
  return v.get<std::string>();
}

std::string at(const std::string& base, size_t i) { return base + "[" + std::to_string(i) + "]"; }

/// Dense ints for string ids, in first-seen order (so "lowest id" = earliest in input).
struct id_table {
  std::unordered_map<std::string, int> index;
  std::vector<std::string> names;

  /// Adds a new id; false if it was already there.
  bool add(const std::string& name) {
    if (!index.emplace(name, static_cast<int>(names.size())).second) return false;
    names.push_back(name);
    return true;
  }
  int intern(const std::string& name) {
    add(name);
    return index.at(name);
  }
  int find(const std::string& name) const {
    auto it = index.find(name);
    return it == index.end() ? -1 : it->second;
  }
};

/// The exact DP keeps a table of classes x capacity cells; larger instances are refused
/// rather than allocated (2e7 cells take about 160 MB and a third of a second).
constexpr double max_mckp_cells = 2e7;
constexpr int max_mckp_gpus = 10'000'000;

ordered solve_mckp_json(const json& in) {
  mckp_input p;
  p.capacity = {integer(field(in, "capacity", ""), "capacity", 0, max_mckp_gpus)};
  id_table ids;
  const auto& classes = array_of(field(in, "classes", ""), "classes");
  for (size_t i = 0; i < classes.size(); ++i) {
    const std::string path = at("classes", i);
    std::string id = identifier(field(classes[i], "id", path), path + ".id");
    if (!ids.add(id)) bad(path + ".id", "\"" + id + "\" repeats");
    mckp_class c;
    const auto& items = array_of(field(classes[i], "items", path), path + ".items");
    for (size_t k = 0; k < items.size(); ++k) {
      const std::string ip = at(path + ".items", k);
      c.items.push_back({integer(field(items[k], "weight", ip), ip + ".weight", 1, max_mckp_gpus),
                         number(field(items[k], "value", ip), ip + ".value")});
    }
    p.classes.push_back(std::move(c));
  }
  // What the DP can use is bounded by the capacity and by the heaviest choice of every class.
  double heaviest_sum = 0;
  for (auto& c : p.classes) {
    int heaviest = 0;
    for (auto& it : c.items) heaviest = std::max(heaviest, it.weight);
    heaviest_sum += heaviest;
  }
  double cells = static_cast<double>(p.classes.size()) * std::min<double>(p.capacity[0], heaviest_sum);
  if (cells > max_mckp_cells)
    bad("classes", fmt::format("{} classes over {:.0f} usable GPUs need {:.3g} DP cells, more than the {:.0e} "
                               "this command takes",
                               p.classes.size(), std::min<double>(p.capacity[0], heaviest_sum), cells, max_mckp_cells));
  auto r = solve_mckp(p);
  ordered out;
  out["value"] = r.value;
  out["choices"] = ordered::object();
  for (size_t i = 0; i < r.choice.size(); ++i)
    out["choices"][ids.names[i]] = r.choice[i] < 0 ? ordered(nullptr) : ordered(r.choice[i]);
  return out;
}

ordered solve_reclaim_json(const json& in, bool exact) {
  reclaim_input p;
  id_table servers, jobs;
  const auto& loaned = array_of(field(in, "loaned_servers", ""), "loaned_servers");
  std::vector<long> room;
  for (size_t i = 0; i < loaned.size(); ++i) {
    const std::string path = at("loaned_servers", i);
    std::string id = identifier(field(loaned[i], "id", path), path + ".id");
    if (!servers.add(id)) bad(path + ".id", "\"" + id + "\" repeats");
    int gpus = integer(field(loaned[i], "gpus", path), path + ".gpus", 0);
    p.loaned.push_back({servers.find(id), gpus});
    room.push_back(gpus);
  }
  p.count = integer(field(in, "count", ""), "count", 0, static_cast<int>(loaned.size()));
  if (exact && loaned.size() > static_cast<size_t>(max_exact_reclaim_servers))
    bad("loaned_servers", "--method exact handles at most " + std::to_string(max_exact_reclaim_servers) +
                              " loaned servers (got " + std::to_string(loaned.size()) + "); use greedy");
  const auto& js = array_of(field(in, "jobs", ""), "jobs");
  for (size_t i = 0; i < js.size(); ++i) {
    const std::string path = at("jobs", i);
    std::string id = identifier(field(js[i], "id", path), path + ".id");
    if (!jobs.add(id)) bad(path + ".id", "\"" + id + "\" repeats");
    reclaim_job j;
    j.id = jobs.find(id);
    j.min_workers = integer(field(js[i], "min_workers", path), path + ".min_workers", 1);
    if (const json* g = optional_field(js[i], "gpus_per_worker"))
      j.gpus_per_worker = integer(*g, path + ".gpus_per_worker", 1);
    const auto& pl = field(js[i], "placement", path);
    if (!pl.is_object()) bad(path + ".placement", "must be an object of server id -> workers");
    for (auto it = pl.begin(); it != pl.end(); ++it) {
      const std::string wp = path + ".placement." + it.key();
      int workers = integer(it.value(), wp, 1);
      // Servers not loaned are training servers: new ids after the loaned ones.
      int server = servers.intern(it.key());
      if (static_cast<size_t>(server) < room.size()) {
        room[server] -= static_cast<long>(workers) * j.gpus_per_worker;
        if (room[server] < 0)
          bad(wp, "workers on loaned server \"" + it.key() + "\" need more than its " +
                      gpus_text(p.loaned[server].gpus));
      }
      j.placement.emplace_back(server, workers);
    }
    p.jobs.push_back(std::move(j));
  }
  auto r = exact ? reclaim_exact(p) : reclaim_greedy(p);
  ordered out;
  out["returned"] = ordered::array();
  for (int s : r.returned) out["returned"].push_back(servers.names[s]);
  out["preempted"] = ordered::array();
  for (int j : r.preempted) out["preempted"].push_back(jobs.names[j]);
  out["scaled_in"] = ordered::object();
  for (auto [j, w] : r.scaled_in) out["scaled_in"][jobs.names[j]] = w;
  return out;
}

ordered solve_place_json(const json& in) {
  const json& mode_v = field(in, "mode", "");
  if (!mode_v.is_string() || (mode_v != "count" && mode_v != "consolidated"))
    bad("mode", "must be \"count\" or \"consolidated\"");
  const auto mode = mode_v == "count" ? placement_mode::count : placement_mode::consolidated;
  id_table servers, types, reqs;
  std::vector<server_slot> slots;
  const auto& ss = array_of(field(in, "servers", ""), "servers");
  for (size_t i = 0; i < ss.size(); ++i) {
    const std::string path = at("servers", i);
    std::string id = identifier(field(ss[i], "id", path), path + ".id");
    if (!servers.add(id)) bad(path + ".id", "\"" + id + "\" repeats");
    int type = types.intern(identifier(field(ss[i], "gpu_type", path), path + ".gpu_type"));
    int gpus = integer(field(ss[i], "gpus", path), path + ".gpus", 0);
    int free = gpus;
    if (const json* f = optional_field(ss[i], "free_gpus")) free = integer(*f, path + ".free_gpus", 0, gpus);
    slots.push_back({servers.find(id), type, gpus, free});
  }
  std::vector<place_request> requests;
  const auto& rs = array_of(field(in, "requests", ""), "requests");
  for (size_t i = 0; i < rs.size(); ++i) {
    const std::string path = at("requests", i);
    std::string id = identifier(field(rs[i], "id", path), path + ".id");
    if (!reqs.add(id)) bad(path + ".id", "\"" + id + "\" repeats");
    place_request r;
    r.id = reqs.find(id);
    r.gpus = integer(field(rs[i], "gpus", path), path + ".gpus", 0);
    // A type no server has gets its own id: the request is simply unplaceable.
    if (const json* t = optional_field(rs[i], "gpu_type"))
      r.gpu_type = types.intern(identifier(*t, path + ".gpu_type"));
    if (const json* pf = optional_field(rs[i], "prefer")) {
      const auto& list = array_of(*pf, path + ".prefer");
      for (size_t k = 0; k < list.size(); ++k) {
        std::string s = identifier(list[k], at(path + ".prefer", k));
        if (servers.find(s) < 0) bad(at(path + ".prefer", k), "unknown server \"" + s + "\"");
        r.prefer.push_back(servers.find(s));
      }
    }
    requests.push_back(std::move(r));
  }
  auto result = place_bfd(mode, slots, requests);
  std::vector<const allocation*> by_request(requests.size(), nullptr);
  for (const auto& [id, a] : result.placed) by_request[id] = &a;
  ordered out;
  out["placed"] = ordered::object();
  for (size_t i = 0; i < requests.size(); ++i) {
    if (!by_request[i]) continue;
    ordered a = ordered::object();
    for (auto [server, gpus] : *by_request[i]) a[servers.names[server]] = gpus;
    out["placed"][reqs.names[i]] = std::move(a);
  }
  out["unplaced"] = ordered::array();
  for (int id : result.unplaced) out["unplaced"].push_back(reqs.names[id]);
  return out;
}

} // namespace

int run_solve_command(const std::string& problem, const std::string& method, std::istream& in,
                      std::ostream& out, std::ostream& err) {
  const std::string who = "aryl solve " + problem + ": ";
  if (problem != "mckp" && problem != "reclaim" && problem != "place") {
    err << "aryl solve: unknown problem \"" << problem << "\" (expected mckp, reclaim or place)\n";
    return 2;
  }
  const bool exact = problem == "reclaim" && method == "exact";
  if (problem == "reclaim" && !method.empty() && method != "greedy" && method != "exact") {
    err << who << "unknown method \"" << method << "\" (expected greedy or exact)\n";
    return 2;
  }
  json input;
  try {
    input = json::parse(in);
  } catch (const json::exception& e) {  // syntax, or a number beyond double (1e400)
    err << who << "input is not valid JSON: " << e.what() << '\n';
    return 2;
  }
  ordered answer;
  try {
    if (!input.is_object()) bad("input", "must be a JSON object");
    if (problem == "mckp")
      answer = solve_mckp_json(input);
    else if (problem == "reclaim")
      answer = solve_reclaim_json(input, exact);
    else
      answer = solve_place_json(input);
  } catch (const bad_input& e) {
    err << who << e.what() << '\n';
    return 2;
  } catch (const std::invalid_argument& e) {  // a solver's own validation
    err << who << e.what() << '\n';
    return 2;
  }
  out << answer.dump(2) << '\n';
  return 0;
}

} // namespace aryl
