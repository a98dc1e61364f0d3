#include "runtime/node/gpu_detect.hpp"

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "solvers/control_chars.hpp"
#include "solvers/input_error.hpp"

namespace aryl::live {

namespace {

/// "Tesla V100-SXM2-16GB" -> "V100"; "NVIDIA A100-SXM4-80GB" -> "A100"; "NVIDIA GeForce RTX
/// 3090" -> "3090".
std::string type_of_model(std::string name) {
  std::istringstream words(name);
  std::string word;
  for (std::string w; words >> w;) {
    if (w == "NVIDIA" || w == "Tesla" || w == "GeForce" || w == "RTX" || w == "Quadro") continue;
    word = w;
    break;
  }
  return word.substr(0, word.find('-'));
}

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  if (!path) return false;
  std::istringstream dirs(path);
  for (std::string d; std::getline(dirs, d, ':');) {
    std::error_code ec;
    if (!d.empty() && std::filesystem::is_regular_file(std::filesystem::path(d) / program, ec)) return true;
  }
  return false;
}

} // namespace

std::optional<machine_gpus> parse_gpu_listing(const std::string& csv) {
  std::istringstream lines(csv);
  machine_gpus out;
  std::string first_model;
  for (std::string line; std::getline(lines, line);) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty()) continue;
    auto type = type_of_model(line);
    if (type.empty() || find_control(type) != std::string::npos)
      throw input_error("agent: nvidia-smi lists a GPU model aryl cannot name: '" + escape_control(line) + "'");
    if (out.count > 0 && type != out.gpu_type)
      throw input_error("agent: this machine has GPUs of several models (" + escape_control(first_model) + ", " +
                        escape_control(line) + "); a server has one GPU type: give --gpu-type and --gpus");
    if (out.count == 0) first_model = line;
    out.gpu_type = type;
    ++out.count;
  }
  if (out.count == 0) return std::nullopt;
  return out;
}

std::optional<machine_gpus> detect_gpus() {
  if (!on_path("nvidia-smi")) return std::nullopt;
  FILE* p = popen("nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null", "r");
  if (!p) throw input_error("agent: cannot run nvidia-smi to count this machine's GPUs: give --gpu-type and --gpus");
  std::string text;
  std::array<char, 4096> buf{};
  while (size_t n = std::fread(buf.data(), 1, buf.size(), p)) text.append(buf.data(), n);
  int status = pclose(p);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw input_error("agent: nvidia-smi failed (" +
                      (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status)) : std::string("a signal")) +
                      "): give --gpu-type and --gpus");
  return parse_gpu_listing(text);
}

} // namespace aryl::live
