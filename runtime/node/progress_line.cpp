#include "runtime/node/progress_line.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <system_error>

namespace aryl::live {

std::string format_progress_line(double work_done, uint64_t step) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, work_done);
  return "ARYL_PROGRESS work_done=" + std::string(buf, r.ptr) + " step=" + std::to_string(step);
}

bool parse_progress_line(std::string_view line, wire::progress& out) {
  constexpr std::string_view prefix = "ARYL_PROGRESS";
  if (!line.starts_with(prefix)) return false;
  line.remove_prefix(prefix.size());
  if (line.empty() || (line.front() != ' ' && line.front() != '\t')) return false;
  bool have_work = false;
  double work = 0;
  uint64_t step = 0;
  while (!line.empty()) {
    const auto start = line.find_first_not_of(" \t\r");
    if (start == std::string_view::npos) break;
    line.remove_prefix(start);
    const auto end = std::min(line.find_first_of(" \t\r"), line.size());
    const std::string_view token = line.substr(0, end);
    line.remove_prefix(end);
    const auto eq = token.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view key = token.substr(0, eq), value = token.substr(eq + 1);
    const char* const first = value.data();
    const char* const last = value.data() + value.size();
    if (key == "work_done") {
      const auto r = std::from_chars(first, last, work);
      if (r.ec != std::errc{} || r.ptr != last || !std::isfinite(work) || work < 0) return false;
      have_work = true;
    } else if (key == "step") {
      const auto r = std::from_chars(first, last, step);
      if (r.ec != std::errc{} || r.ptr != last) return false;
    }
  }
  if (!have_work) return false;
  out.work_done = work;
  out.step = step;
  return true;
}

} // namespace aryl::live
