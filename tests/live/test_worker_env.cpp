// A worker's environment from an allow-list (runtime/node/worker_env.hpp): what of the agent's
// environment, of aryl's and of the launch's reaches a worker, and the --pass-env patterns an
// agent refuses at the start.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "runtime/node/worker_env.hpp"
#include "tests/live/fake_scheduler.hpp"

using namespace aryl::live;
using namespace aryl::live::test;
namespace wire = aryl::wire;

namespace {

bool has(const std::vector<std::string>& env, const std::string& entry) {
  return std::find(env.begin(), env.end(), entry) != env.end();
}

/// True when some entry sets `name`.
bool sets(const std::vector<std::string>& env, const std::string& name) {
  return std::any_of(env.begin(), env.end(), [&](const std::string& kv) { return kv.starts_with(name + "="); });
}

const std::vector<std::string> agent_env = {
    "PATH=/usr/bin:/bin", "LANG=C.UTF-8", "LC_ALL=C", "HOME=/root", "USER=root", "SHELL=/bin/bash",
    "NCCL_DEBUG=INFO", "CUDA_HOME=/usr/local/cuda", "ASAN_OPTIONS=detect_leaks=1", "OMP_NUM_THREADS=4",
    "SECRET_API_KEY=hunter2", "MYAPP_MODE=fast", "MYAPP_LEVEL=3", "SSH_AUTH_SOCK=/tmp/ssh-x/agent.1",
    "ARYL_TOKEN_FILE=/etc/aryl/token", "ARYL_TOKEN=s3cret", "ARYL_ADDR=10.0.0.1:7070", "ARYL_TLS_CA=/etc/aryl/ca.pem",
    "ARYL_TLS_CERT=/etc/aryl/agent.pem", "ARYL_TLS_KEY=/etc/aryl/agent.key", "ARYL_CONFIG=/etc/aryl/client.yaml",
    "ARYL_AGENT=stale@/old", "NOT_A_PAIR"};

wire::launch a_launch() {
  wire::launch l;
  l.job_id = 9;
  l.rank = 2;
  l.world_size = 4;
  l.gpus = {0, 2};
  l.rendezvous = "file:///ckpt/job-9/rendezvous-1";
  l.work_s = 12.5;
  l.rate = 0.75;
  return l;
}

const worker_context plain_context{"node-a@/var/lib/aryl", "/ckpt/job-9", std::nullopt};

} // namespace

TEST_CASE("live worker env: the agent's variables reach a worker only on the allow-list, and none of its ARYL_* ones") {
  const auto env = build_worker_environment(agent_env, {}, a_launch(), plain_context).env;
  for (const char* kept : {"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "LC_ALL=C", "HOME=/root", "USER=root",
                           "SHELL=/bin/bash", "NCCL_DEBUG=INFO", "CUDA_HOME=/usr/local/cuda",
                           "ASAN_OPTIONS=detect_leaks=1", "OMP_NUM_THREADS=4"})
    CHECK_MESSAGE(has(env, kept), kept);
  for (const char* dropped : {"SECRET_API_KEY", "MYAPP_MODE", "SSH_AUTH_SOCK", "ARYL_TOKEN_FILE", "ARYL_TOKEN",
                              "ARYL_ADDR", "ARYL_TLS_CA", "ARYL_TLS_CERT", "ARYL_TLS_KEY", "ARYL_CONFIG", "NOT_A_PAIR"})
    CHECK_MESSAGE(!sets(env, dropped), dropped);
  // The agent's marker is its own value for this agent, not one inherited.
  CHECK(has(env, "ARYL_AGENT=node-a@/var/lib/aryl"));
  CHECK(std::is_sorted(env.begin(), env.end()));
}

TEST_CASE("live worker env: --pass-env adds names and prefixes of the agent's environment, never an ARYL_* one") {
  const auto env =
      build_worker_environment(agent_env, {"MYAPP_*", "SECRET_API_KEY", "ARYL_TOKEN_FILE"}, a_launch(), plain_context)
          .env;
  CHECK(has(env, "MYAPP_MODE=fast"));
  CHECK(has(env, "MYAPP_LEVEL=3"));
  CHECK(has(env, "SECRET_API_KEY=hunter2"));
  CHECK_FALSE(sets(env, "SSH_AUTH_SOCK"));
  // Even a pattern the start would refuse passes nothing of aryl's.
  CHECK_FALSE(sets(env, "ARYL_TOKEN_FILE"));
}

TEST_CASE("live worker env: a --pass-env pattern is a name or a prefix with '*', and one that matches ARYL_ names is refused") {
  for (const char* fine : {"MYAPP_MODE", "MYAPP_*", "_X", "x1", "ARYL", "ARYLX_*", "NCCL_*"})
    CHECK_MESSAGE(pass_env_refusal(fine).empty(), fine);
  for (const char* aryl : {"ARYL_TOKEN_FILE", "ARYL_*", "ARYL_TLS_*", "ARYL*", "AR*", "A*", "*"}) {
    const auto why = pass_env_refusal(aryl);
    CHECK_MESSAGE(why.find("ARYL_* variables (its token, address and TLS files) never reach a worker") !=
                      std::string::npos,
                  aryl);
    CHECK(why.starts_with("--pass-env '" + std::string(aryl) + "'"));
  }
  for (const char* bad : {"", "1X", "MY-VAR", "A B", "X**", "*X", "X=1"})
    CHECK_MESSAGE(pass_env_refusal(bad).find("not a variable name") != std::string::npos, bad);
}

TEST_CASE("live worker env: aryl's variables are set, the launch's env over them, but never a credential name") {
  auto l = a_launch();
  l.env = {{"EXTRA", "yes"},          {"CUDA_VISIBLE_DEVICES", "7"}, {"ARYL_JOB_NAME", "train"},
           {"ARYL_TOKEN_FILE", "/x"}, {"ARYL_TOKENS", "y"},          {"ARYL_ADDR", "evil:1"},
           {"ARYL_TLS_CA", "/ca"},    {"PATH=/evil:", "z"},         {"", "empty"}};
  const auto out = build_worker_environment(agent_env, {}, l, plain_context);
  for (const char* entry : {"ARYL_JOB_ID=9", "ARYL_RANK=2", "ARYL_WORLD_SIZE=4", "ARYL_CHECKPOINT_DIR=/ckpt/job-9",
                            "ARYL_RENDEZVOUS=file:///ckpt/job-9/rendezvous-1", "ARYL_WORK_S=12.5", "ARYL_RATE=0.75",
                            "EXTRA=yes", "CUDA_VISIBLE_DEVICES=7", "ARYL_JOB_NAME=train", "PATH=/usr/bin:/bin"})
    CHECK_MESSAGE(has(out.env, entry), entry);
  for (const char* name : {"ARYL_TOKEN_FILE", "ARYL_TOKENS", "ARYL_ADDR", "ARYL_TLS_CA"})
    CHECK_MESSAGE(!sets(out.env, name), name);
  CHECK(out.refused ==
        std::vector<std::string>{"", "ARYL_ADDR", "ARYL_TLS_CA", "ARYL_TOKENS", "ARYL_TOKEN_FILE", "PATH=/evil:"});
  // Without the launch's override, CUDA_VISIBLE_DEVICES lists its GPUs; without work_s and rate
  // there is no ARYL_WORK_S nor ARYL_RATE.
  auto bare = a_launch();
  bare.work_s.reset();
  bare.rate.reset();
  const auto env = build_worker_environment({}, {}, bare, plain_context).env;
  CHECK(has(env, "CUDA_VISIBLE_DEVICES=0,2"));
  CHECK_FALSE(sets(env, "ARYL_WORK_S"));
  CHECK_FALSE(sets(env, "ARYL_RATE"));
}

TEST_CASE("live worker env: a worker run as a user gets HOME, USER, LOGNAME and SHELL from its account, not the agent's") {
  worker_context ctx = plain_context;
  ctx.account = worker_account{"alice", "/home/alice", "/bin/zsh"};
  const auto env = build_worker_environment(agent_env, {}, a_launch(), ctx).env;
  for (const char* entry : {"HOME=/home/alice", "USER=alice", "LOGNAME=alice", "SHELL=/bin/zsh"})
    CHECK_MESSAGE(has(env, entry), entry);
  CHECK_FALSE(has(env, "HOME=/root"));
}

TEST_CASE("live agent: a --pass-env that would pass an ARYL_ variable stops the start with 2, naming it") {
  fake_scheduler s;
  scratch_dir dir;
  agent_options o;
  o.port = s.port();
  o.name = "node-a";
  o.work_dir = (dir.path() / "agent").string();
  o.pass_env = {"NCCL_*", "ARYL_TOKEN_FILE"};
  agent_runner agent(o);
  CHECK(agent.ended_by_itself());
  CHECK(agent.stop() == 2);
  CHECK(agent.log().find("invalid options: --pass-env 'ARYL_TOKEN_FILE': the agent's ARYL_* variables") !=
        std::string::npos);
}
