// How client commands reach serve, on bad input: a client config file that is malformed, a CA
// file that cannot be loaded; each a one-line error naming the file.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include "tests/runtime/cli_support.hpp"

using namespace aryl::test;

namespace {

/// A token file only its owner may read (as read_token_file requires).
std::string private_token() {
  auto path = write_temp("connect-token-" + std::to_string(::getpid()), "cli-connect-token-0123456789\n");
  ::chmod(path.c_str(), 0600);
  return path;
}

const std::string no_env = "env -u ARYL_ADDR -u ARYL_TOKEN_FILE -u ARYL_TLS_CA -u XDG_CONFIG_HOME HOME=/nonexistent ";

} // namespace

TEST_CASE("a malformed client config file is a one-line error naming the file, line and key") {
  auto path = write_temp("client-" + std::to_string(::getpid()) + ".yaml", "addr: 127.0.0.1:7000\nprot: 1\n");
  check_one_line_error(run("status", no_env + "ARYL_CONFIG=" + path + " "), path + ":2: unknown key 'prot'");
  auto missing = "/nonexistent/aryl-client.yaml";
  check_one_line_error(run("cancel 1", no_env + "ARYL_CONFIG=" + missing + " "), missing);
}

TEST_CASE("the client config file gives a client its address and token file when no flag or variable does") {
  auto token = private_token();
  // Nothing listens on port 9: the error names the address the file gave, so the file was read.
  auto path = write_temp("client-ok-" + std::to_string(::getpid()) + ".yaml",
                         "addr: 127.0.0.1:9\ntoken_file: " + token + "\n");
  check_one_line_error(run("status", no_env + "ARYL_CONFIG=" + path + " "), "127.0.0.1:9: cannot connect");
  // A flag wins over the file's address.
  check_one_line_error(run("status --port 19", no_env + "ARYL_CONFIG=" + path + " "), "127.0.0.1:19: cannot connect");
}

TEST_CASE("serve --tls-ca without --tls-cert, or a client's --tls-cert without --tls-ca, is a one-line error") {
  check_one_line_error(run("serve --no-workload --speedup 20 --tls-ca /tmp/ca.pem --token-file /nonexistent/token", no_env),
                       "serve: --tls-ca asks agents and clients for certificates over TLS: give --tls-cert and --tls-key");
  auto token = private_token();
  check_one_line_error(run("status --port 9 --token-file " + token + " --tls-cert a.pem --tls-key a.key", no_env),
                       "status: --tls-cert and --tls-key are for TLS: give --tls-ca");
}

TEST_CASE("a --tls-ca or ARYL_TLS_CA file that cannot be loaded is a one-line error naming it") {
  auto token = private_token();
  check_one_line_error(run("status --port 9 --token-file " + token + " --tls-ca /nonexistent/ca.pem", no_env),
                       "/nonexistent/ca.pem: cannot read --tls-ca file");
  check_one_line_error(run("agent --port 9 --name t0 --work-dir /tmp/aryl-cli-agent --token-file " + token,
                           no_env + "ARYL_TLS_CA=/nonexistent/agent-ca.pem "),
                       "/nonexistent/agent-ca.pem: cannot read --tls-ca file");
}
