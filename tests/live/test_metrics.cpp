// The metrics of `aryl serve` (runtime/live/metrics): the exposition rendered from the
// scheduler's status, and what its HTTP endpoint answers.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "runtime/live/metrics.hpp"

using namespace aryl;

namespace {

cluster_status sample_status() {
  cluster_status s;
  s.jobs = {{3, "j3", true, 4, "", 0, 0, 0, "", -1, "", true, ""}, {5, "j5", false, 0, "", 0, 0, 0, "", -1, "", true, ""}, {6, "j6", false, 0, "", 0, 0, 0, "", -1, "", true, ""}};
  s.servers = {{"t0", "V100", 8, 4, false, "training", hold_state::up, ""}, {"i0", "T4", 8, 2, true, "loaned", hold_state::up, ""},
               {"i1", "T4", 8, 8, true, "serving", hold_state::up, ""}};
  s.jobs_finished = 7;
  s.jobs_failed = 1;
  s.jobs_cancelled = 2;
  s.reclaim_latency_s = {0.5, 12, 200};
  s.reclaim_slo_misses = 1;
  s.tenants = {{"", -1, 0, 0, 0, 0}, {"vc \"a\"", 8, 12, 4, 0, 2}, {"b", 8, 4, 0, 4, 0}};
  s.counts = {9, 3, 2, 5, 4};
  end_histogram a;
  a.tenant = "b";
  a.outcome = job_outcome::done;
  a.add(30, 400);     // waited 30 s, ended 400 s after its submit
  a.add(4000, 9000);
  end_histogram none;  // no tenant
  none.outcome = job_outcome::timeout;
  none.add(0, 100);
  s.ends = {a, none};
  return s;
}

live::front_counts sample_front() {
  live::front_counts f{8, 7};
  f.agents = {{"t0", true, 0.25}, {"i0", false, -1}};
  f.scheduler_restarts = 2;
  f.version = "0.14.0";
  return f;
}

} // namespace

TEST_CASE("metrics: the exposition counts jobs, GPUs by pool and use, servers by mode, reclaims") {
  auto text = live::render_metrics(sample_status(), {8, 7});
  for (auto* line : {"aryl_jobs{state=\"queued\"} 2", "aryl_jobs{state=\"running\"} 1",
                     "aryl_jobs_finished_total{outcome=\"done\"} 4", "aryl_jobs_finished_total{outcome=\"failed\"} 1",
                     "aryl_jobs_finished_total{outcome=\"cancelled\"} 2",
                     "aryl_gpus{pool=\"training\",gpu_type=\"V100\",use=\"busy\"} 4",
                     "aryl_gpus{pool=\"inference\",gpu_type=\"T4\",use=\"busy\"} 6",
                     // i1 serves inference: its GPUs are serving, not free for training.
                     "aryl_gpus{pool=\"inference\",gpu_type=\"T4\",use=\"free\"} 2",
                     "aryl_gpus{pool=\"inference\",gpu_type=\"T4\",use=\"serving\"} 8",
                     "aryl_servers{pool=\"inference\",mode=\"loaned\"} 1",
                     "aryl_reclaim_latency_seconds_bucket{le=\"1\"} 1",
                     "aryl_reclaim_latency_seconds_bucket{le=\"30\"} 2",
                     "aryl_reclaim_latency_seconds_bucket{le=\"+Inf\"} 3", "aryl_reclaim_latency_seconds_count 3",
                     "aryl_reclaim_slo_misses_total 1", "aryl_agents{state=\"connected\"} 7"})
    CHECK_MESSAGE(text.find(std::string(line) + "\n") != std::string::npos, line);
}

TEST_CASE("metrics: the inference demand is a gauge of servers needed, absent where no inference follows demand") {
  auto s = sample_status();
  s.inference_needed = 3;
  CHECK(live::render_metrics(s, {8, 7}).find("\naryl_inference_demand_servers 3\n") != std::string::npos);
  s.inference_needed = 0;
  CHECK(live::render_metrics(s, {8, 7}).find("\naryl_inference_demand_servers 0\n") != std::string::npos);
  CHECK(live::render_metrics(cluster_status{}, {2, 0}).find("aryl_inference_demand_servers") == std::string::npos);
}

TEST_CASE("metrics: per tenant, quota, GPUs in use, borrowed and lent, and queued jobs, with names escaped") {
  auto text = live::render_metrics(sample_status(), {8, 7});
  for (auto* line : {"aryl_tenant_gpus{tenant=\"vc \\\"a\\\"\",kind=\"quota\"} 8",
                     "aryl_tenant_gpus{tenant=\"vc \\\"a\\\"\",kind=\"borrowed\"} 4",
                     "aryl_tenant_gpus{tenant=\"b\",kind=\"in_use\"} 4", "aryl_tenant_gpus{tenant=\"b\",kind=\"lent\"} 4",
                     "aryl_tenant_queued_jobs{tenant=\"vc \\\"a\\\"\"} 2"})
    CHECK_MESSAGE(text.find(std::string(line) + "\n") != std::string::npos, line);
}

TEST_CASE("metrics: jobs without a tenant have series without a tenant label, and no quota means no quota series") {
  auto text = live::render_metrics(sample_status(), {8, 7});
  for (auto* line : {"aryl_tenant_gpus{kind=\"in_use\"} 0", "aryl_tenant_gpus{kind=\"borrowed\"} 0",
                     "aryl_tenant_queued_jobs 0"})
    CHECK_MESSAGE(text.find(std::string(line) + "\n") != std::string::npos, line);
  CHECK(text.find("tenant=\"\"") == std::string::npos);
  CHECK(text.find("aryl_tenant_gpus{kind=\"quota\"}") == std::string::npos);
  CHECK(text.find(" -1\n") == std::string::npos);
  CHECK(text.find("no series for a tenant without one") != std::string::npos);  // said in HELP
}

TEST_CASE("metrics: every series exists from the start at zero, before any job or server is known") {
  // An empty status is what serve renders while it waits for its agents.
  auto text = live::render_metrics(cluster_status{}, {2, 0});
  for (auto* line : {"aryl_jobs{state=\"queued\"} 0", "aryl_jobs{state=\"running\"} 0",
                     "aryl_jobs_finished_total{outcome=\"done\"} 0", "aryl_jobs_finished_total{outcome=\"failed\"} 0",
                     "aryl_jobs_finished_total{outcome=\"cancelled\"} 0",
                     "aryl_servers{pool=\"training\",mode=\"training\"} 0",
                     "aryl_servers{pool=\"inference\",mode=\"loaned\"} 0", "aryl_servers{pool=\"inference\",mode=\"down\"} 0",
                     "aryl_reclaim_latency_seconds_count 0", "aryl_reclaim_slo_misses_total 0",
                     "aryl_round_latency_seconds_count 0", "aryl_agents{state=\"connected\"} 0"})
    CHECK_MESSAGE(text.find(std::string(line) + "\n") != std::string::npos, line);
  // A GPU type once seen has every use, lost included, while none is lost.
  auto seen = live::render_metrics(sample_status(), {8, 7});
  CHECK(seen.find("aryl_gpus{pool=\"training\",gpu_type=\"V100\",use=\"lost\"} 0\n") != std::string::npos);
}

TEST_CASE("metrics: decisions, loans, ended jobs' waits and JCTs by tenant and outcome, agents, restarts and the "
          "build") {
  auto text = live::render_metrics(sample_status(), sample_front());
  for (auto* line : {"aryl_decisions_total{kind=\"start\"} 9", "aryl_decisions_total{kind=\"preempt\"} 3",
                     "aryl_decisions_total{kind=\"scale_in\"} 2", "aryl_decisions_total{kind=\"scale_out\"} 5",
                     "aryl_loans_total 4",
                     // 30 s is under the first bound (60 s), 4,000 s in the 7,200 s bucket.
                     "aryl_queue_wait_seconds_bucket{tenant=\"b\",outcome=\"done\",le=\"60\"} 1",
                     "aryl_queue_wait_seconds_bucket{tenant=\"b\",outcome=\"done\",le=\"3600\"} 1",
                     "aryl_queue_wait_seconds_bucket{tenant=\"b\",outcome=\"done\",le=\"7200\"} 2",
                     "aryl_queue_wait_seconds_bucket{tenant=\"b\",outcome=\"done\",le=\"+Inf\"} 2",
                     "aryl_queue_wait_seconds_sum{tenant=\"b\",outcome=\"done\"} 4030",
                     "aryl_queue_wait_seconds_count{tenant=\"b\",outcome=\"done\"} 2",
                     "aryl_jct_seconds_bucket{tenant=\"b\",outcome=\"done\",le=\"300\"} 0",
                     "aryl_jct_seconds_bucket{tenant=\"b\",outcome=\"done\",le=\"900\"} 1",
                     "aryl_jct_seconds_bucket{tenant=\"b\",outcome=\"done\",le=\"14400\"} 2",
                     "aryl_jct_seconds_bucket{outcome=\"timeout\",le=\"300\"} 1",
                     "aryl_agent_up{server=\"t0\"} 1", "aryl_agent_up{server=\"i0\"} 0",
                     "aryl_agent_heartbeat_age_seconds{server=\"t0\"} 0.250", "aryl_scheduler_restarts 2",
                     "aryl_build_info{version=\"0.14.0\"} 1"})
    CHECK_MESSAGE(text.find(std::string(line) + "\n") != std::string::npos, line);
  // A disconnected agent has no heartbeat age, not a -1.
  CHECK(text.find("aryl_agent_heartbeat_age_seconds{server=\"i0\"}") == std::string::npos);
}

TEST_CASE("metrics: promtool accepts the exposition, before the run and during it") {
  // Debian's prometheus package (scripts/setup.sh) ships promtool, the format's own checker.
  REQUIRE_MESSAGE(std::system("command -v promtool > /dev/null") == 0, "promtool missing: run scripts/setup.sh");
  auto path = std::string("/tmp/aryl-metrics-test.txt");
  std::ofstream(path) << live::render_metrics(sample_status(), sample_front());
  CHECK(std::system(("promtool check metrics < " + path).c_str()) == 0);
  std::ofstream(path) << live::render_metrics(cluster_status{}, {8, 0});
  CHECK(std::system(("promtool check metrics < " + path).c_str()) == 0);
}

TEST_CASE("metrics: GET /metrics answers the exposition, or 503 with the reason logged, and GET /healthz the health "
          "check, anything else 404") {
  std::ostringstream log;
  std::atomic<bool> running{false}, stuck{false};
  live::metrics_endpoint m(
      "127.0.0.1", 0,
      [&] {
        return stuck ? live::health{false, "the scheduler did not answer within 1.5 s"}
                     : live::health{true, "aryl_jobs_finished_total 3\n"};
      },
      log,
      [&] { return running ? live::health{true, "ok: run in progress"} : live::health{false, "no run in progress"}; });
  auto get = [&](const std::string& target) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(m.port());
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    std::string req = "GET " + target + " HTTP/1.1\r\nHost: localhost\r\n\r\n";
    REQUIRE(::send(fd, req.data(), req.size(), 0) == static_cast<ssize_t>(req.size()));
    std::string answer;
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) answer.append(buf, static_cast<size_t>(n));
    close(fd);
    return answer;
  };
  auto ok = get("/metrics");
  CHECK(ok.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(ok.find("text/plain; version=0.0.4") != std::string::npos);
  CHECK(ok.find("\r\n\r\naryl_jobs_finished_total 3\n") != std::string::npos);
  CHECK(get("/").rfind("HTTP/1.1 404", 0) == 0);
  auto waiting = get("/healthz");
  CHECK_MESSAGE(waiting.rfind("HTTP/1.1 503", 0) == 0, waiting);
  CHECK(waiting.find("\r\n\r\nno run in progress\n") != std::string::npos);
  running = true;
  auto healthy = get("/healthz");
  CHECK_MESSAGE(healthy.rfind("HTTP/1.1 200", 0) == 0, healthy);
  CHECK(healthy.find("\r\n\r\nok: run in progress\n") != std::string::npos);
  stuck = true;
  auto late = get("/metrics");
  CHECK_MESSAGE(late.rfind("HTTP/1.1 503", 0) == 0, late);
  CHECK(late.find("\r\n\r\nthe scheduler did not answer within 1.5 s\n") != std::string::npos);
  CHECK(log.str() == "[serve] GET /metrics answered 503: the scheduler did not answer within 1.5 s\n");
}
