// A child's start (runtime/node/processes.hpp) in its working directory, with folders it must be
// able to use, under other credentials (as root), and without the parent's descriptors.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "runtime/node/processes.hpp"
#include "tests/live/fake_scheduler.hpp"

using namespace aryl::live;
using namespace aryl::live::test;
namespace fs = std::filesystem;

namespace {
/// The child's whole stdout, once it has ended.
std::string output_of(child_process& child) {
  std::string out;
  child.wait();
  char buf[4096];
  ssize_t n;
  while ((n = ::read(child.stdout_fd(), buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

spawn_spec shell(const std::string& script) {
  return {{"/bin/sh", "-c", script}, {"PATH=/usr/bin:/bin"}, -1, true, std::nullopt, {}, {}};
}
} // namespace

TEST_CASE("live processes: a child has no descriptor of ours but its standard streams") {
  const int leaked = ::open("/dev/null", O_RDONLY);  // without O_CLOEXEC, as asio's sockets
  REQUIRE(leaked >= 3);
  auto child = child_process::spawn(shell("[ -e /proc/$$/fd/" + std::to_string(leaked) + " ] && echo open || echo closed"));
  CHECK(output_of(child) == "closed\n");
  ::close(leaked);
}

TEST_CASE("live processes: a working directory or a folder the child cannot use fails its start, naming it") {
  scratch_dir dir;
  auto spec = shell("pwd");
  spec.working_dir = dir.path().string();
  auto child = child_process::spawn(spec);
  CHECK(child.start_error().empty());
  CHECK(output_of(child) == dir.path().string() + "\n");

  spec.working_dir = (dir.path() / "missing").string();
  child = child_process::spawn(spec);
  CHECK(child.wait() == exit_status{127, 0});
  CHECK(child.start_error() == "cannot enter " + spec.working_dir + ": No such file or directory");

  spec.working_dir.clear();
  spec.usable_dirs = {dir.path().string(), (dir.path() / "gone").string()};
  child = child_process::spawn(spec);
  CHECK(child.wait() == exit_status{127, 0});
  CHECK(child.start_error() == "cannot use " + spec.usable_dirs[1] + ": No such file or directory");
}

TEST_CASE("live processes: a child given credentials runs with exactly their uid, gid and groups (as root)") {
  if (::geteuid() != 0) return;  // only root may change them
  scratch_dir dir;
  fs::permissions(dir.path(), fs::perms::owner_all | fs::perms::others_exec);
  auto spec = shell("id -u; id -g; id -G; pwd");
  spec.as = credentials{65534, 65534, {65534}};
  fs::create_directory(dir.path() / "job");
  REQUIRE(::chown((dir.path() / "job").c_str(), 65534, 65534) == 0);
  spec.working_dir = (dir.path() / "job").string();
  auto child = child_process::spawn(spec);
  CHECK(child.start_error().empty());
  CHECK(output_of(child) == "65534\n65534\n65534\n" + spec.working_dir + "\n");

  // A folder the uid may not search on the way is named as it fails the start.
  fs::permissions(dir.path(), fs::perms::owner_all);
  child = child_process::spawn(spec);
  CHECK(child.wait() == exit_status{127, 0});
  CHECK(child.start_error() == "cannot enter " + spec.working_dir + " as uid 65534: Permission denied");
}
