#pragma once
// Shared by the tests of inputs (traces, demand, config): checked-in data files, scratch
// files private to the test process, and the message of an input_error.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "solvers/input_error.hpp"

namespace aryl::test {

inline std::string data(const std::string& name) {
  return std::string(ARYL_SOURCE_DIR) + "/tests/io/data/" + name;
}

inline std::filesystem::path scratch_dir() {
  return std::filesystem::temp_directory_path() / ("aryl-io-test-" + std::to_string(::getpid()));
}

/// Removes this process's scratch files when the test binary exits.
inline const struct scratch_cleanup {
  ~scratch_cleanup() {
    std::error_code ec;
    std::filesystem::remove_all(scratch_dir(), ec);
  }
} cleanup_at_exit;

/// Writes `text` to a file private to this test process and returns its path.
inline std::string scratch_file(const std::string& name, const std::string& text) {
  const auto dir = scratch_dir();
  std::filesystem::create_directories(dir);
  const auto path = (dir / name).string();
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

/// The message of the input_error thrown by `f` ("" if none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const input_error& e) {
    return e.what();
  }
  return "";
}

} // namespace aryl::test
