#include "runtime/inputs/duration_text.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

namespace aryl {
namespace {

/// A run of 1..9 decimal digits (9: no overflow, and no limit needs more), else nothing.
std::optional<int64_t> whole(std::string_view d) {
  if (d.empty() || d.size() > 9) return std::nullopt;
  int64_t v = 0;
  for (char c : d) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

/// Digits with at most one '.' between digits ("1.5", not ".5", "1." or "1e3").
std::optional<double> decimal(std::string_view d) {
  auto dot = d.find('.');
  if (dot == std::string_view::npos) {
    auto w = whole(d);
    return w ? std::optional<double>(static_cast<double>(*w)) : std::nullopt;
  }
  if (!whole(d.substr(0, dot)) || !whole(d.substr(dot + 1))) return std::nullopt;
  double v = 0;
  auto [end, ec] = std::from_chars(d.data(), d.data() + d.size(), v);
  if (ec != std::errc() || end != d.data() + d.size()) return std::nullopt;
  return v;
}

const char* const forms = "S, M:SS, H:MM:SS, D-H, D-H:MM, D-H:MM:SS, or a number with s, m, h or d";

/// Seconds of a duration's clock part, split at ':': alone M:SS or H:MM:SS; after a day's '-',
/// H, H:MM or H:MM:SS.
std::variant<double, std::string> clock_parts(std::string_view text, bool after_day) {
  std::vector<std::string_view> parts;
  size_t at = 0;
  for (auto colon = text.find(':');; colon = text.find(':', at)) {
    parts.push_back(text.substr(at, colon == std::string_view::npos ? std::string_view::npos : colon - at));
    if (colon == std::string_view::npos) break;
    at = colon + 1;
  }
  // After a day: H, H:MM, H:MM:SS. Alone: M:SS, H:MM:SS (a bare number is seconds, elsewhere).
  if (parts.size() > 3 || (!after_day && parts.size() < 2))
    return fmt::format("is not a duration ({})", forms);
  std::vector<int64_t> v;
  for (auto p : parts) {
    auto w = whole(p);
    if (!w) return fmt::format("is not a duration ({})", forms);
    v.push_back(*w);
  }
  // Each part after the first counts minutes or seconds; a day's hours count below 24.
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] >= 60 || parts[i].size() != 2)
      return fmt::format("is not a duration: '{}' must be two digits below 60", parts[i]);
  if (after_day && v[0] >= 24) return fmt::format("is not a duration: hours after a day must be below 24");
  static constexpr double hms[] = {3600, 60, 1};
  // Alone, M:SS is minutes and seconds; after a day, H[:MM[:SS]] starts with hours.
  size_t first = after_day ? 0 : 3 - parts.size();
  double s = 0;
  for (size_t i = 0; i < v.size(); ++i) s += static_cast<double>(v[i]) * hms[first + i];
  return s;
}

} // namespace

std::variant<double, std::string> parse_duration(std::string_view text) {
  if (text.empty()) return std::string("is empty");
  double s = 0;
  if (auto dash = text.find('-'); dash != std::string_view::npos) {
    auto days = whole(text.substr(0, dash));
    if (!days) return fmt::format("is not a duration ({})", forms);
    auto rest = clock_parts(text.substr(dash + 1), true);
    if (auto* why = std::get_if<std::string>(&rest)) return *why;
    s = static_cast<double>(*days) * 86400 + std::get<double>(rest);
  } else if (text.find(':') != std::string_view::npos) {
    auto rest = clock_parts(text, false);
    if (auto* why = std::get_if<std::string>(&rest)) return *why;
    s = std::get<double>(rest);
  } else {
    double unit = 1;
    switch (text.back()) {
      case 's': unit = 1; break;
      case 'm': unit = 60; break;
      case 'h': unit = 3600; break;
      case 'd': unit = 86400; break;
      default: unit = 0;
    }
    auto number = decimal(unit > 0 ? text.substr(0, text.size() - 1) : text);
    if (!number) return fmt::format("is not a duration ({})", forms);
    s = *number * (unit > 0 ? unit : 1);
  }
  if (!(s > 0)) return std::string("must be more than 0 seconds");
  if (s > max_time_limit_s) return fmt::format("is more than {:.0f} days", max_time_limit_s / 86400);
  return s;
}

} // namespace aryl
