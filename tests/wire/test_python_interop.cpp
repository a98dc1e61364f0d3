// Interop with another msgpack implementation: Python (Debian's python3-msgpack) decodes the
// frames C++ encodes, and C++ decodes the frames Python encodes the Python way. Exits 77
// (CTest: skipped) when /usr/bin/python3 or its msgpack module is missing.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "runtime/wire/codec.hpp"
#include "tests/wire/samples.hpp"

using namespace aryl::wire;
using aryl::wire::test::sample_messages;

namespace {

constexpr int skip_code = 77;
const char* const python = "/usr/bin/python3";

/// The exit status of `command` run by the shell, or -1 if it did not exit normally.
int run(const std::string& command) {
  const int status = std::system(command.c_str());
  return (status != -1 && WIFEXITED(status)) ? WEXITSTATUS(status) : -1;
}

std::filesystem::path scratch_dir() {
  return std::filesystem::temp_directory_path() /
         ("aryl-wire-test-" + std::to_string(::getpid()));
}

} // namespace

TEST_CASE("wire: python decodes the frames of every message type and C++ decodes python's") {
  const auto dir = scratch_dir();
  std::filesystem::create_directories(dir);
  const auto in = dir / "cpp_frames.bin";
  const auto out = dir / "python_frames.bin";
  const auto samples = sample_messages();
  {
    std::ofstream f(in, std::ios::binary);
    for (const auto& m : samples) {
      const auto frame = encode_frame(m);
      f.write(reinterpret_cast<const char*>(frame.data()), static_cast<std::streamsize>(frame.size()));
    }
  }
  const std::string script = std::string(ARYL_SOURCE_DIR) + "/tests/wire/python_roundtrip.py";
  CHECK(run(std::string(python) + " '" + script + "' '" + in.string() + "' '" + out.string() + "'") == 0);

  std::ifstream f(out, std::ios::binary);
  const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  frame_decoder d;
  d.feed(bytes.data(), bytes.size());
  std::vector<message> got;
  for (decode_step s = d.next(); std::holds_alternative<message>(s); s = d.next())
    got.push_back(std::get<message>(s));
  CHECK_FALSE(d.failed());
  CHECK(d.buffered() == 0);
  REQUIRE(got.size() == samples.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    INFO("message " << type_of(samples[i]));
    CHECK(got[i] == samples[i]);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

int main(int argc, char** argv) {
  if (::access(python, X_OK) != 0 || run(std::string(python) + " -c 'import msgpack' 2>/dev/null") != 0) {
    std::printf("skipped: %s with a msgpack module (Debian: python3-msgpack) is needed\n", python);
    return skip_code;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
