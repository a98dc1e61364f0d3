// Driver for the fuzz targets when they are not built with libFuzzer (GCC, sanitizer builds):
// runs LLVMFuzzerTestOneInput once on each file named on the command line (folders are read
// recursively, in name order; arguments starting with '-' are ignored, as libFuzzer options).
// A crash or sanitizer report ends the process as usual; an input that takes longer than
// ARYL_FUZZ_TIMEOUT_S seconds (default 10) is reported and fails the run at the end. Without
// AddressSanitizer the address space is capped at 4 GiB, so a runaway allocation fails fast.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

#if defined(__SANITIZE_ADDRESS__)
#define ARYL_REPLAY_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ARYL_REPLAY_ASAN 1
#endif
#endif

int main(int argc, char** argv) {
#ifndef ARYL_REPLAY_ASAN
  const rlimit cap{4ul << 30, 4ul << 30};
  setrlimit(RLIMIT_AS, &cap);
#endif
  const char* limit_env = std::getenv("ARYL_FUZZ_TIMEOUT_S");
  const double limit_s = limit_env ? std::atof(limit_env) : 10.0;

  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.starts_with("-")) continue;
    if (fs::is_directory(arg)) {
      std::vector<fs::path> found;
      for (const auto& e : fs::recursive_directory_iterator(arg))
        if (e.is_regular_file()) found.push_back(e.path());
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.emplace_back(arg);
    }
  }
  int slow = 0;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "replay: cannot read %s\n", f.c_str());
      return 2;
    }
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::fprintf(stderr, "replay: %s (%zu bytes)\n", f.c_str(), bytes.size());
    const auto start = std::chrono::steady_clock::now();
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (s > limit_s) {
      std::fprintf(stderr, "replay: SLOW INPUT %s took %.1f s (limit %.1f s)\n", f.c_str(), s, limit_s);
      ++slow;
    }
  }
  std::fprintf(stderr, "replay: %zu inputs, %d slow\n", files.size(), slow);
  return slow ? 1 : 0;
}
