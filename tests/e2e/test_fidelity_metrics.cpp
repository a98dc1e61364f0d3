// What queuing alone does not show: per-job slowdown, time below requested speed, time on
// loaned servers, checked against the decisions in events.log on the small trace; and the
// effective config a run writes beside its outputs.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "runtime/outputs/effective_config.hpp"
#include "tests/e2e/run_helpers.hpp"

using namespace aryl;

namespace {

using row = std::map<std::string, std::string>;

std::vector<row> read_csv(const std::string& path) {
  std::istringstream in(test::slurp(path));
  std::string line;
  std::vector<std::string> header;
  std::vector<row> out;
  auto split = [](const std::string& l) {
    std::vector<std::string> f;
    std::stringstream ss(l);
    for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
    return f;
  };
  std::getline(in, line);
  header = split(line);
  while (std::getline(in, line)) {
    auto f = split(line);
    REQUIRE(f.size() == header.size());
    row r;
    for (size_t i = 0; i < f.size(); ++i) r[header[i]] = f[i];
    out.push_back(r);
  }
  return out;
}

double num(const row& r, const std::string& key) { return std::stod(r.at(key)); }

/// Every allocation events.log gives a job (start and rescale lines): per job index, a list of
/// (GPU type, [(server, workers)]).
struct allocation_seen {
  std::string type;
  std::vector<std::pair<std::string, int>> servers;
  int workers = 0;
};

std::map<int, std::vector<allocation_seen>> allocations(const std::string& events) {
  std::map<int, std::vector<allocation_seen>> out;
  static const std::regex line_re(R"(scheduler (start|rescale) job-(\d+) workers=(\d+) (\w+ )?\[([^\]]*)\])");
  static const std::regex slot_re(R"((\w+):(\d+))");
  for (std::sregex_iterator it(events.begin(), events.end(), line_re), end; it != end; ++it) {
    allocation_seen a;
    a.workers = std::stoi((*it)[3]);
    a.type = (*it)[4].matched ? std::string((*it)[4]).substr(0, (*it)[4].length() - 1) : "";
    std::string slots = (*it)[5];
    for (std::sregex_iterator s(slots.begin(), slots.end(), slot_re); s != end; ++s)
      a.servers.push_back({(*s)[1], std::stoi((*s)[2])});
    out[std::stoi((*it)[2])].push_back(a);
  }
  return out;
}

config small_run(const std::string& policy, int inference_servers) {
  config c;
  c.trace_file = "tests/e2e/data/small.csv";
  c.check_invariants = true;
  c.policy = policy;
  c.training.servers = 2;
  c.inference.servers = inference_servers;
  c.inference_trace = "tests/e2e/data/small_demand.csv";
  c.inference_interval_s = 30;
  c.inference_grace_s = 10;
  c.inference_headroom = 0;
  c.out_dir = test::temp_dir("fidelity-" + policy + "-" + std::to_string(inference_servers));
  // Extras on every free GPU, loaned ones included, and queued jobs on free loaned GPUs first:
  // the measures need jobs there.
  c.scheduler = myopic_scaling(c.scheduler);
  c.scheduler.free_gpus_first = true;
  return c;
}

/// Time a job held GPUs: JCT less every wait in the queue.
double held_s(const row& r) { return num(r, "jct_s") - num(r, "queued_s"); }

} // namespace

TEST_CASE("rigid jobs on one server run at requested speed and a job spanning two servers runs below it") {
  // Strict FIFO on 2 x 8 V100, no inference servers: every job of up to 8 GPUs sits on one
  // server at its requested size (slowdown = JCT / duration, nothing below speed); f (16 GPUs)
  // spans both servers and runs its whole time at cross_server_eff of its requested speed.
  auto c = small_run("fifo", 0);
  auto out = test::run(c);
  REQUIRE_MESSAGE(out.ok, out.error);
  auto jobs = read_csv(c.out_dir + "/jobs.csv");
  auto seen = allocations(test::slurp(c.out_dir + "/events.log"));
  REQUIRE(jobs.size() == 8);
  double sum = 0;
  int spanning = 0;
  for (auto& j : jobs) {
    int id = std::stoi(j.at("job"));
    REQUIRE(seen[id].size() == 1);  // rigid: one start, never rescaled or preempted
    auto& a = seen[id].front();
    CHECK(a.workers == std::stoi(j.at("gpus")));
    CHECK(num(j, "on_loaned_s") == 0);
    CHECK(num(j, "slowdown") == doctest::Approx(num(j, "jct_s") / num(j, "duration_s")).epsilon(1e-6));
    CHECK(num(j, "slowdown") >= 1.0);
    if (a.servers.size() == 1) {
      CHECK(num(j, "below_speed_s") == 0);
    } else {
      ++spanning;
      CHECK(num(j, "below_speed_s") == doctest::Approx(held_s(j)).epsilon(1e-6));
      CHECK(held_s(j) == doctest::Approx(num(j, "duration_s") / c.cross_server_eff).epsilon(1e-6));
    }
    sum += num(j, "slowdown");
  }
  CHECK(spanning == 1);
  CHECK(out.summary.mean_slowdown == doctest::Approx(sum / 8).epsilon(1e-6));
  CHECK(out.summary.loaned_gpu_hours == 0);
  CHECK(out.summary.serving_gpu_hours == 0);
  CHECK(out.summary.training_gpu_hours > 0);
}

TEST_CASE("on_loaned_s is positive exactly for jobs the events log places on an inference server") {
  // aryl on 2 x 8 V100 + 1 x 8 T4 lent while demand is 0 and reclaimed at t=90: the jobs that
  // get i0 hold it for a while; nobody else may report time on a loaned server.
  auto c = small_run("aryl", 1);
  auto out = test::run(c);
  REQUIRE_MESSAGE(out.ok, out.error);
  auto jobs = read_csv(c.out_dir + "/jobs.csv");
  auto seen = allocations(test::slurp(c.out_dir + "/events.log"));
  REQUIRE(jobs.size() == 8);
  int on_loaned = 0;
  double loaned_gpu_s = 0, below_gpu_s_lower_bound = 0;
  for (auto& j : jobs) {
    int id = std::stoi(j.at("job"));
    int gpus = std::stoi(j.at("gpus"));
    bool inference = false, slower = false, sped_up = false;
    for (auto& a : seen[id]) {
      for (auto& [server, w] : a.servers) inference |= server[0] == 'i';
      slower |= inference || a.type == "T4" || a.workers < gpus || a.servers.size() > 1;
      sped_up |= a.workers > gpus;
    }
    INFO("job " << id);
    CHECK((num(j, "on_loaned_s") > 0) == inference);
    CHECK(num(j, "on_loaned_s") <= held_s(j) + 1e-6);
    CHECK(num(j, "below_speed_s") <= held_s(j) + 1e-6);
    // Any allocation slower than the request is time below speed; only more workers than
    // requested can make a job beat its trace duration.
    if (slower) CHECK(num(j, "below_speed_s") > 0);
    if (!sped_up) CHECK(num(j, "slowdown") >= 1.0);
    if (!slower && std::stoi(j.at("preemptions")) == 0 && seen[id].size() == 1)
      CHECK(num(j, "below_speed_s") == 0);
    on_loaned += inference;
    loaned_gpu_s += inference ? num(j, "on_loaned_s") : 0;
    below_gpu_s_lower_bound += num(j, "below_speed_s");  // at least one GPU all that time
  }
  CHECK(on_loaned > 0);
  CHECK(out.summary.loaned_gpu_hours > 0);
  CHECK(out.summary.loaned_gpu_hours <= loaned_gpu_s * 8 / 3600 + 1e-9);
  CHECK(out.summary.below_speed_gpu_hours >= below_gpu_s_lower_bound / 3600 - 1e-9);
  std::vector<double> slowdowns;
  for (auto& j : jobs) slowdowns.push_back(num(j, "slowdown"));
  std::sort(slowdowns.begin(), slowdowns.end());
  // numpy.percentile(slowdowns, 95) of the 8 jobs: 0.65 of the way from the 7th to the 8th.
  REQUIRE(slowdowns.size() == 8);
  CHECK(out.summary.p95_slowdown == doctest::Approx(slowdowns[6] + 0.65 * (slowdowns[7] - slowdowns[6])).epsilon(1e-6));
}

TEST_CASE("the effective config names every key and gives back the config it came from") {
  config c;
  c.policy = "las";
  c.scheduler.backfill = true;
  c.scheduler.placement = placement_mode::count;
  c.training = {48, 4, "A100", {}};
  c.cross_server_eff = 0.5;
  c.gpu_speed["H100"] = 3.0;
  c.trace_from = "2017-11-01";
  c.elastic_fraction = 0.25;
  c.inference_interval_s = 60;
  c.worker_command = {"python3", "train.py"};
  c.checkpoint_s = 12;
  c.max_retries = 5;
  auto j = nlohmann::json::parse(effective_config_json(c));
  for (auto& key : config_key_names())
    if (key.find('<') == std::string::npos) CHECK_MESSAGE(j.contains(key), key);
  config back;
  for (auto& [key, value] : j.items())
    set_config_key(back, key, value.is_string() ? value.get<std::string>() : value.dump(), "config.json");
  // Compared through the JSON itself: every key is in it (checked above), so equal JSON is an
  // equal config.
  CHECK(nlohmann::json::parse(effective_config_json(back)) == j);
}
