#pragma once
// Runs the aryl binary as a user would and checks its one-line errors.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace aryl::test {

struct result {
  int code = -1;
  std::string output;  ///< stdout and stderr
};

/// Runs `command` through the shell; its stdout and stderr make the output.
inline result run_command(const std::string& command) {
  std::string cmd = command + " 2>&1";
  result r;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p);
  std::array<char, 4096> buf{};
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) r.output.append(buf.data(), n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

/// Runs `aryl ARGS` through the shell (so ARGS may redirect, and `prefix` set limits).
inline result run(const std::string& args, const std::string& prefix = "") {
  return run_command(prefix + std::string(ARYL_BINARY) + " " + args);
}

inline std::string write_temp(const std::string& name, const std::string& text) {
  auto path = "/tmp/aryl-cli-" + name;
  std::ofstream(path) << text;
  return path;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void check_one_line_error(const result& r, const std::string& must_contain) {
  CHECK(r.code == 2);
  CHECK_MESSAGE(r.output.find(must_contain) != std::string::npos, r.output);
  CHECK_MESSAGE(r.output.find('\n') == r.output.size() - 1, "more than one line: " << r.output);
}

inline const std::string quiet = " --quiet --out /tmp/aryl-cli-out";

} // namespace aryl::test
