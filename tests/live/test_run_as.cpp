// Whose jobs an agent may start as whom (runtime/node/run_as.hpp), the folders it gives them,
// and an agent running launches that name a user. The whole path as root with real users is
// tests/live/test_live_run_as.py.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <variant>

#include "runtime/node/run_as.hpp"
#include "tests/live/fake_scheduler.hpp"

using namespace aryl::live;
using namespace aryl::live::test;
namespace wire = aryl::wire;
namespace fs = std::filesystem;

namespace {
unix_account account(const std::string& name, uid_t uid) { return {name, uid, uid, {uid}, "/home/" + name, "/bin/sh"}; }
} // namespace

TEST_CASE("live run as: a root agent runs a job as any user of the node but root, and root only with allow_root_jobs") {
  const agent_self root{0, "root", false};
  auto plan = plan_run_as("alice", account("alice", 1001), root);
  REQUIRE(std::holds_alternative<run_as_plan>(plan));
  CHECK(std::get<run_as_plan>(plan).change_credentials);
  CHECK(std::get<run_as_plan>(plan).account.uid == 1001);

  plan = plan_run_as("ghost", std::nullopt, root);
  REQUIRE(std::holds_alternative<std::string>(plan));
  CHECK(std::get<std::string>(plan) == "no user 'ghost' on this node");

  // Another name of uid 0 is root too.
  for (const char* name : {"root", "toor"}) {
    plan = plan_run_as(name, account(name, 0), root);
    REQUIRE(std::holds_alternative<std::string>(plan));
    CHECK(std::get<std::string>(plan) == "jobs as root are refused on this node: agent --allow-root-jobs allows them");
  }
  plan = plan_run_as("root", account("root", 0), agent_self{0, "root", true});
  REQUIRE(std::holds_alternative<run_as_plan>(plan));
  CHECK(std::get<run_as_plan>(plan).change_credentials);
}

TEST_CASE("live run as: a user name that could make a path is refused, whatever the node's databases say") {
  for (const char* name : {"", ".", "..", "../etc", "a/b"}) {
    const auto plan = plan_run_as(name, account(name, 1001), agent_self{0, "root", false});
    REQUIRE(std::holds_alternative<std::string>(plan));
    CHECK(std::get<std::string>(plan) == "'" + std::string(name) + "' is not a user name");
  }
}

TEST_CASE("live run as: an agent that is not root runs jobs only as its own user, and says whose it was asked for") {
  const agent_self bob{1000, "bob", true};
  auto plan = plan_run_as("bob", account("bob", 1000), bob);
  REQUIRE(std::holds_alternative<run_as_plan>(plan));
  CHECK_FALSE(std::get<run_as_plan>(plan).change_credentials);
  CHECK(std::get<run_as_plan>(plan).account.home == "/home/bob");

  const std::string refusal = "this agent runs as 'bob', not root, and starts jobs only as 'bob', not as 'alice'";
  plan = plan_run_as("alice", account("alice", 1001), bob);
  REQUIRE(std::holds_alternative<std::string>(plan));
  CHECK(std::get<std::string>(plan) == refusal);
  plan = plan_run_as("alice", std::nullopt, bob);
  REQUIRE(std::holds_alternative<std::string>(plan));
  CHECK(std::get<std::string>(plan) == refusal);
  plan = plan_run_as("root", account("root", 0), bob);
  REQUIRE(std::holds_alternative<std::string>(plan));
}

TEST_CASE("live run as: accounts are found by name and uid with their groups, and a missing one is none") {
  const auto root = find_account("root");
  REQUIRE(root);
  CHECK(root->uid == 0);
  CHECK(root->home == "/root");
  CHECK(std::find(root->groups.begin(), root->groups.end(), root->gid) != root->groups.end());
  const auto me = find_account(::geteuid());
  REQUIRE(me);
  CHECK(find_account(me->name)->uid == ::geteuid());
  CHECK_FALSE(find_account("arylt-no-such-user-0"));
}

TEST_CASE("live run as: a job's folder is made mode 0700 for its user, never through a symbolic link in its place") {
  scratch_dir dir;
  const uid_t me = ::geteuid();
  const gid_t my_gid = ::getegid();
  const auto made = prepare_job_dirs(dir.path() / "agent", 4, dir.path() / "ckpt" / "job-4", unix_account{"me", me, my_gid, {}, "", ""});
  REQUIRE(std::holds_alternative<fs::path>(made));
  CHECK(std::get<fs::path>(made) == dir.path() / "agent" / "jobs" / "me" / "4");
  struct stat st {};
  for (const auto& p : {std::get<fs::path>(made), dir.path() / "ckpt" / "job-4"}) {
    REQUIRE(::stat(p.c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0700);
    CHECK(st.st_uid == me);
  }
  // Users search their way to their own folders without listing the others'.
  REQUIRE(::stat((dir.path() / "agent" / "jobs" / "me").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0711);
  // Made again (another rank, another launch): kept.
  CHECK(prepare_owned_dir(dir.path() / "ckpt" / "job-4", me, my_gid).empty());

  // A symbolic link in a job folder's place is refused, and its target left as it was.
  fs::create_directories(dir.path() / "elsewhere");
  fs::permissions(dir.path() / "elsewhere", fs::perms::all);
  fs::create_directory_symlink(dir.path() / "elsewhere", dir.path() / "ckpt" / "job-5");
  const auto why = prepare_owned_dir(dir.path() / "ckpt" / "job-5", me, my_gid);
  CHECK(why.find("not a folder (a symbolic link or a file is in its place)") != std::string::npos);
  REQUIRE(::stat((dir.path() / "elsewhere").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0777);

  if (me != 0) return;
  // As root: a folder made for another uid is theirs; one another user owns is not taken.
  CHECK(prepare_owned_dir(dir.path() / "nobody", 65534, 65534).empty());
  REQUIRE(::stat((dir.path() / "nobody").c_str(), &st) == 0);
  CHECK(st.st_uid == 65534);
  CHECK(st.st_gid == 65534);
  CHECK(prepare_owned_dir(dir.path() / "nobody", 12345, 12345).find("belongs to uid 65534") != std::string::npos);
}

namespace {
agent_options options_for(const fake_scheduler& s, const scratch_dir& dir) {
  agent_options o;
  o.port = s.port();
  o.token = "secret";
  o.name = "node-a";
  o.work_dir = (dir.path() / "agent").string();
  o.heartbeat_s = 0.05;
  o.reconnect_min_s = 0.02;
  o.reconnect_max_s = 0.1;
  o.shutdown_grace_s = 2.0;
  return o;
}
} // namespace

TEST_CASE("live agent: a launch naming its own user runs in that user's job folder with HOME from its account") {
  fake_scheduler s;
  scratch_dir dir;
  auto o = options_for(s, dir);
  o.allow_root_jobs = true;  // CI runs as root
  agent_runner agent(o);
  REQUIRE(s.accept_agent());
  const auto me = find_account(::geteuid());
  REQUIRE(me);
  wire::launch l;
  l.job_id = 3;
  l.command = {"/bin/sh", "-c", "pwd > \"$ARYL_CHECKPOINT_DIR/pwd\"; echo \"$HOME\" > \"$ARYL_CHECKPOINT_DIR/home\""};
  l.user = me->name;
  s.send(l);
  const auto exit = s.receive_a<wire::exit_>();
  REQUIRE(exit);
  CHECK(*exit == wire::exit_{3, 0, 0, 0});
  CHECK(agent.stop() == 0);
  const fs::path work(o.work_dir);
  const fs::path ckpt = work / "checkpoints" / "3";
  CHECK(read_file(ckpt / "pwd") == (work / "jobs" / me->name / "3").string() + "\n");
  CHECK(read_file(ckpt / "home") == me->home + "\n");
  struct stat st {};
  REQUIRE(::stat(ckpt.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0700);
  REQUIRE(::stat((work / "logs" / "3-0.log").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0600);
  CHECK(agent.log().find("launch job 3 rank 0 of 1: pid ") != std::string::npos);
  CHECK(agent.log().find(", as " + me->name + "\n") != std::string::npos);
}

TEST_CASE("live agent: a launch naming a user the node does not have exits 127, the reason in the log and in its exit") {
  fake_scheduler s;
  scratch_dir dir;
  agent_runner agent(options_for(s, dir));
  REQUIRE(s.accept_agent());
  wire::launch l;
  l.job_id = 4;
  l.command = {"/bin/true"};
  l.user = "arylt-no-such-user-0";
  s.send(l);
  const auto exit = s.receive_a<wire::exit_>();
  REQUIRE(exit);
  CHECK(exit->code == 127);
  CHECK(agent.stop() == 0);
  const std::string why = ::geteuid() == 0 ? "no user 'arylt-no-such-user-0' on this node"
                                           : "not as 'arylt-no-such-user-0'";
  // The scheduler hears why too, for `aryl show`.
  CHECK(exit->reason.value_or("").find(why) != std::string::npos);
  CHECK(agent.log().find("launch job 4 rank 0 failed: ") != std::string::npos);
  CHECK(agent.log().find(why) != std::string::npos);
  CHECK_FALSE(fs::exists(fs::path(dir.path()) / "agent" / "checkpoints" / "4"));
}
