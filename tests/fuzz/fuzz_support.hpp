#pragma once
/// Shared by the fuzz targets (docs/reliability.md): the contract every input reader must keep
/// (return normally or throw aryl::input_error, nothing else) and a per-process scratch folder for
/// the readers that take a path. A broken contract prints one line naming it and aborts, which
/// libFuzzer (and the replay driver) report as a finding.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cxxabi.h>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <typeinfo>

#include "solvers/input_error.hpp"

namespace aryl::fuzz {

/// Prints "FUZZ CONTRACT: <what>" to stderr and aborts.
[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "FUZZ CONTRACT: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

/// Aborts with `what` unless `ok`.
inline void require(bool ok, const std::string& what) {
  if (!ok) finding(what);
}

/// Readable name of the exception type being handled.
inline std::string current_exception_type() {
  const std::type_info* t = abi::__cxa_current_exception_type();
  if (!t) return "unknown";
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(t->name(), nullptr, nullptr, &status), std::free);
  return status == 0 && name ? name.get() : t->name();
}

/// Runs `body`; returns true when it returned, false when it threw input_error, and reports any
/// other exception, or an input_error message holding a control character (it would not be one
/// line), as a finding.
template <class Body>
bool returns_or_input_error(const char* what, Body&& body) {
  try {
    body();
    return true;
  } catch (const aryl::input_error& e) {
    require(aryl::find_control(e.what()) == std::string_view::npos,
            std::string(what) + " threw input_error with a control character: " + aryl::escape_control(e.what()));
    return false;
  } catch (const std::exception& e) {
    finding(std::string(what) + " threw " + current_exception_type() + " (not aryl::input_error): " + e.what());
  } catch (...) {
    finding(std::string(what) + " threw " + current_exception_type() + " (not a std::exception)");
  }
}

/// A folder `<tmp>/aryl-fuzz-<name>-<pid>`, removed when the process ends normally. Inputs are
/// rewritten into it for every run, so the repository and the corpus are never written.
class scratch_dir {
public:
  /// Under `base` (default: the temporary folder).
  explicit scratch_dir(const std::string& name,
                       const std::filesystem::path& base = std::filesystem::temp_directory_path())
      : dir_(base / ("aryl-fuzz-" + name + "-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(dir_);
  }
  ~scratch_dir() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;

  const std::filesystem::path& path() const { return dir_; }

  /// Writes `bytes` to the file `name` in the folder (replacing it); returns its path.
  std::string write(const std::string& name, std::string_view bytes) const {
    const std::string p = (dir_ / name).string();
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) finding("cannot write scratch file " + p);
    return p;
  }

  /// Empties the folder.
  void clear() const {
    for (const auto& e : std::filesystem::directory_iterator(dir_)) std::filesystem::remove_all(e.path());
  }

private:
  std::filesystem::path dir_;
};

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

} // namespace aryl::fuzz
