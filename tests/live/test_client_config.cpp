// Where client commands find the scheduler (runtime/live/client_config: flags, then the
// environment, then the file), the checks on the files a client reads (client config, job
// file), what serve may listen on (runtime/live/listen_policy), and the TLS contexts' errors
// naming their files (runtime/wire/tls_stream).
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "solvers/input_error.hpp"
#include "runtime/live/client.hpp"
#include "runtime/live/client_config.hpp"
#include "runtime/live/job_file.hpp"
#include "runtime/inputs/input_limits.hpp"
#include "runtime/live/listen_policy.hpp"
#include "runtime/wire/tls_stream.hpp"

using namespace aryl;
namespace fs = std::filesystem;

namespace {

struct temp_folder {
  fs::path path = fs::temp_directory_path() / ("aryl-client-config-" + std::to_string(::getpid()));
  temp_folder() { fs::create_directories(path); }
  ~temp_folder() { fs::remove_all(path); }
  std::string write(const std::string& name, const std::string& text) const {
    fs::create_directories((path / name).parent_path());
    std::ofstream(path / name) << text;
    return (path / name).string();
  }
};

/// A fake environment.
struct fake_env {
  std::map<std::string, std::string> vars;
  live::env_lookup lookup() const {
    return [this](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

/// The message of the input_error `f` throws, or "" if it throws none.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const input_error& e) {
    return e.what();
  }
  return "";
}

/// error_of(f) run on a thread of its own: "(still running after 5 s)" when `f` hangs (a
/// FIFO's open waits for a writer), so that the test fails instead of hanging with it.
template <class F>
std::string error_within(F f) {
  auto done = std::make_shared<std::promise<std::string>>();
  auto result = done->get_future();
  std::thread t([f, done] { done->set_value(error_of(f)); });
  if (result.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    t.detach();  // hung: the check fails; the process ends with it
    return "(still running after 5 s)";
  }
  t.join();  // no thread outlives its test (thread-local state freed before exit)
  return result.get();
}

} // namespace

TEST_CASE("client config: the environment wins over the file, flags over both, relative paths are the file's") {
  temp_folder dir;
  auto file = live::read_client_config(
      dir.write("client.yaml", "addr: 10.0.0.5:7000\ntoken_file: token\ntls_ca: /etc/aryl/ca.pem\n"
                               "tls_cert: me.pem\ntls_key: me.key\n"));
  CHECK(file.addr == "10.0.0.5:7000");
  CHECK(file.token_file == (dir.path / "token").string());  // relative: beside the file
  CHECK(file.tls_ca == "/etc/aryl/ca.pem");
  CHECK(file.tls_cert == (dir.path / "me.pem").string());
  CHECK(file.tls_key == (dir.path / "me.key").string());

  fake_env env;
  auto base = env.lookup();
  auto lookup = live::with_client_config(base, file);
  // Only the file: its values.
  auto e = live::resolve_endpoint("status", "", std::nullopt, "", lookup);
  CHECK(e.host == "10.0.0.5");
  CHECK(e.port == 7000);
  CHECK(e.token_file == file.token_file);
  CHECK(std::string(lookup("ARYL_TLS_CA")) == "/etc/aryl/ca.pem");
  CHECK(std::string(lookup("ARYL_TLS_KEY")) == file.tls_key);
  CHECK(lookup("HOME") == nullptr);  // other names: the environment's only
  // The environment over the file.
  env.vars = {{"ARYL_ADDR", "127.0.0.1:9000"}, {"ARYL_TOKEN_FILE", "/run/token"}, {"ARYL_TLS_CA", "/run/ca.pem"}};
  e = live::resolve_endpoint("status", "", std::nullopt, "", lookup);
  CHECK(e.host == "127.0.0.1");
  CHECK(e.port == 9000);
  CHECK(e.token_file == "/run/token");
  CHECK(std::string(lookup("ARYL_TLS_CA")) == "/run/ca.pem");
  // Flags over both.
  e = live::resolve_endpoint("status", "192.168.1.1", uint16_t{7100}, "/flag/token", lookup);
  CHECK(e.host == "192.168.1.1");
  CHECK(e.port == 7100);
  CHECK(e.token_file == "/flag/token");
  // An empty variable is unset: the file's value shows through.
  env.vars = {{"ARYL_ADDR", ""}};
  CHECK(live::resolve_endpoint("status", "", std::nullopt, "", lookup).port == 7000);
}

TEST_CASE("client config: a malformed file is an error naming the file, line and key") {
  temp_folder dir;
  auto check_error = [&](const std::string& text, const std::string& expected) {
    auto path = dir.write("bad.yaml", text);
    auto msg = error_of([&] { live::read_client_config(path); });
    CHECK_MESSAGE(msg.find(path) != std::string::npos, msg);
    CHECK_MESSAGE(msg.find(expected) != std::string::npos, msg);
  };
  check_error("addr: 127.0.0.1:7000\nport: 7000\n", ":2: unknown key 'port'");
  check_error("addr: localhost\n", ":1: addr: 'localhost' is not HOST:PORT");
  check_error("addr: 127.0.0.1:70000\n", "addr: '127.0.0.1:70000' is not HOST:PORT");
  check_error("token_file: [a, b]\n", ":1: token_file: expected a non-empty string");
  check_error("tls_ca: \"\"\n", "tls_ca: expected a non-empty string");
  check_error("- addr\n", "expected a map of keys addr, token_file, tls_ca, tls_cert, tls_key");
  check_error("addr: [\n", "bad.yaml");  // does not parse
  // An empty file sets nothing.
  auto empty = live::read_client_config(dir.write("empty.yaml", ""));
  CHECK(empty.addr.empty());
  CHECK(empty.token_file.empty());
}

TEST_CASE("client config: ARYL_CONFIG names the file (missing: an error naming it), else the one in the config home") {
  temp_folder dir;
  fake_env env;
  env.vars = {{"HOME", dir.path.string()}};
  // No file in the home: nothing, and no error.
  CHECK(live::find_client_config(env.lookup()).path.empty());
  auto home_file = dir.write(".config/aryl/client.yaml", "addr: 127.0.0.1:7001\n");
  CHECK(live::find_client_config(env.lookup()).path == home_file);
  CHECK(live::find_client_config(env.lookup()).addr == "127.0.0.1:7001");
  // XDG_CONFIG_HOME instead of ~/.config.
  auto xdg_file = dir.write("xdg/aryl/client.yaml", "addr: 127.0.0.1:7002\n");
  env.vars["XDG_CONFIG_HOME"] = (dir.path / "xdg").string();
  CHECK(live::find_client_config(env.lookup()).addr == "127.0.0.1:7002");
  // ARYL_CONFIG over both; a missing one is an error naming it.
  env.vars["ARYL_CONFIG"] = dir.write("named.yaml", "addr: 127.0.0.1:7003\n");
  CHECK(live::find_client_config(env.lookup()).addr == "127.0.0.1:7003");
  env.vars["ARYL_CONFIG"] = (dir.path / "missing.yaml").string();
  auto msg = error_of([&] { live::find_client_config(env.lookup()); });
  CHECK_MESSAGE(msg.find("missing.yaml") != std::string::npos, msg);
  (void)xdg_file;
}

TEST_CASE("client config: a file its group or others may write, or in a folder anyone may write without the sticky "
          "bit, is refused naming the mode and the chmod") {
  temp_folder dir;
  fs::permissions(dir.path, fs::perms(0755));
  auto path = dir.write("client.yaml", "addr: 127.0.0.1:7000\n");
  for (auto mode : {0666, 0620, 0602}) {
    fs::permissions(path, fs::perms(mode));
    auto msg = error_of([&] { live::read_client_config(path); });
    char shown[8];
    std::snprintf(shown, sizeof shown, "%04o", mode);
    CHECK_MESSAGE(msg.find(path + ": client config file may be written by its group or others (mode " + shown) !=
                      std::string::npos,
                  msg);
    CHECK_MESSAGE(msg.find("chmod go-w " + path) != std::string::npos, msg);
  }
  fs::permissions(path, fs::perms(0644));
  CHECK(live::read_client_config(path).addr == "127.0.0.1:7000");
  // A folder anyone may write: anyone could put another file in its place.
  fs::permissions(dir.path, fs::perms(0777));
  auto msg = error_of([&] { live::read_client_config(path); });
  CHECK_MESSAGE(msg.find("a folder anyone may write without the sticky bit (mode 0777)") != std::string::npos, msg);
  CHECK_MESSAGE(msg.find("chmod o-w " + dir.path.string()) != std::string::npos, msg);
  // With the sticky bit (as /tmp) only the file's owner may replace it.
  fs::permissions(dir.path, fs::perms(01777));
  CHECK(live::read_client_config(path).addr == "127.0.0.1:7000");
  fs::permissions(dir.path, fs::perms(0755));
}

TEST_CASE("client config and job files: a device, a FIFO or a file over 1 MiB is refused naming the file, without "
          "waiting or reading it all") {
  temp_folder dir;
  fs::permissions(dir.path, fs::perms(0755));
  auto fifo = (dir.path / "fifo.yaml").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto big = dir.write("big.yaml", "name: " + std::string(max_client_config_bytes, 'x') + "\n");
  static_assert(max_client_config_bytes == max_job_file_bytes);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/dev/zero", "is not a regular file (a character device)"},
      {fifo, "is not a regular file (a FIFO)"},
      {big, "is larger than 1048576 bytes"}};
  for (const auto& [path, why] : cases) {
    auto msg = error_within([path = path] { live::read_client_config(path); });
    CHECK_MESSAGE(msg.find(path + ": client config file " + why) != std::string::npos, msg);
    msg = error_within([path = path] {
      wire::submit job;
      live::read_job_file(path, job);
    });
    CHECK_MESSAGE(msg.find(path + ": job file " + why) != std::string::npos, msg);
  }
}

TEST_CASE("listen policy: plain TCP only on loopback unless insecure, TLS anywhere, cert and key go together, "
          "and beyond loopback identities instead of the cluster token") {
  CHECK_NOTHROW(live::check_listen_policy("127.0.0.1", "", "", false, false));
  CHECK_NOTHROW(live::check_listen_policy("127.0.0.2", "", "", false, false));
  CHECK_NOTHROW(live::check_listen_policy("::1", "", "", false, false));
  for (const char* bind : {"0.0.0.0", "10.0.0.5", "::"}) {
    for (bool identities : {false, true}) {
      auto msg = error_of([&] { live::check_listen_policy(bind, "", "", false, identities); });
      CHECK_MESSAGE(msg.find(std::string("--bind ") + bind + " is not a loopback address") != std::string::npos, msg);
      CHECK_MESSAGE(msg.find("--insecure") != std::string::npos, msg);
      CHECK_MESSAGE(msg.find("--tls-cert") != std::string::npos, msg);
    }
    CHECK_NOTHROW(live::check_listen_policy(bind, "", "", true, true));
    CHECK_NOTHROW(live::check_listen_policy(bind, "cert.pem", "key.pem", false, true));
    for (bool insecure : {false, true}) {
      auto msg = error_of([&] { live::check_listen_policy(bind, insecure ? "" : "cert.pem", insecure ? "" : "key.pem",
                                                          insecure, false); });
      CHECK_MESSAGE(msg.find("give --identities FILE") != std::string::npos, msg);
    }
  }
  CHECK(error_of([] { live::check_listen_policy("0.0.0.0", "cert.pem", "", false, true); }).find("--tls-key is missing") !=
        std::string::npos);
  CHECK(error_of([] { live::check_listen_policy("127.0.0.1", "", "key.pem", true, true); }).find("--tls-cert is missing") !=
        std::string::npos);
  CHECK(error_of([] { live::check_listen_policy("localhost", "", "", false, true); }).find("not an IP address") !=
        std::string::npos);
}

TEST_CASE("tls contexts: a file that is missing or not PEM is an error naming the file and the flag") {
  temp_folder dir;
  auto garbage = dir.write("garbage.pem", "not a certificate\n");
  auto msg = error_of([] { net::tls_client_context("/nonexistent/ca.pem"); });
  CHECK_MESSAGE(msg.find("/nonexistent/ca.pem: cannot read --tls-ca file") != std::string::npos, msg);
  msg = error_of([&] { net::tls_client_context(garbage); });
  CHECK_MESSAGE(msg.find(garbage + ": --tls-ca") != std::string::npos, msg);
  msg = error_of([&] { net::tls_server_context(garbage, "/nonexistent/key.pem"); });
  CHECK_MESSAGE(msg.find(garbage + ": --tls-cert") != std::string::npos, msg);
}

TEST_CASE("job files: every key a submit flag sets is read, and a bad one is an error naming the file, line and key") {
  temp_folder dir;
  fs::permissions(dir.path, fs::perms(0755));
  auto path = dir.write("job.yaml",
                        "name: sweep\ngpus: 2\nmin_workers: 2\nmax_workers: 4\ncommand: [sh, -c, 'true']\n"
                        "expected_duration_s: 60\ngpu_type: V100\ntenant: prod\npriority: 3\ntime_limit: 1:00:00\n"
                        "max_retries: 2\nafter: '3:any'\narray: 0-9%2\nhold: true\nkey: nightly-7\n");
  wire::submit job;
  live::read_job_file(path, job);
  CHECK(job.name == "sweep");
  CHECK(job.gpus == 2);
  CHECK(job.min_workers == 2);
  CHECK(job.max_workers == 4);
  CHECK(job.command == std::vector<std::string>{"sh", "-c", "true"});
  CHECK(job.expected_duration_s == 60);
  CHECK(job.gpu_type == "V100");
  CHECK(job.tenant == "prod");
  CHECK(job.priority == 3);
  CHECK(job.time_limit_s == 3600);
  CHECK(job.max_retries == 2u);
  CHECK(job.after == "3:any");
  CHECK(job.array == "0-9%2");
  CHECK(job.hold == true);
  CHECK(job.key == "nightly-7");
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"hold: maybe\n", ":1: hold must be true or false"},
      {"key: ''\n", ":1: key: 0 bytes, where 1 to 256 are required"},
      {"key: \"a\\tb\"\n", ":1: key: holds a control character"},
      {"colour: red\n", ":1: unknown key 'colour'"}};
  for (const auto& [text, why] : bad) {
    auto file = dir.write("bad.yaml", text);
    auto msg = error_within([file = file] {
      wire::submit j;
      live::read_job_file(file, j);
    });
    CHECK_MESSAGE(msg.find(file + why) == 0, msg);
  }
}
