#pragma once
/// A quick test before find_control (solvers/control_chars.hpp) on every events.log line: eight
/// bytes at a time, it looks for the bytes a control character can start with (below 0x20,
/// 0x7f, and 0xc2, the lead byte of a UTF-8 C1 character). It may say yes where find_control
/// then finds none (0xc2 before a printable character); it never says no where find_control
/// would find one.
#include <cstdint>
#include <cstring>
#include <string_view>

namespace aryl {

inline bool may_hold_control(std::string_view s) {
  constexpr uint64_t ones = 0x0101010101010101, highs = 0x8080808080808080;
  // Nonzero iff a byte of w is below n (n <= 0x80): with none, no byte borrows and none gets
  // a high bit it lacked; at the lowest one, the subtraction sets the high bit ~w also has.
  auto below = [](uint64_t w, uint64_t n) { return (w - ones * n) & ~w & highs; };
  auto any_equal = [&](uint64_t w, uint64_t c) { return below(w ^ (ones * c), 1); };
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w = 0;
    std::memcpy(&w, s.data() + i, 8);
    if (below(w, 0x20) | any_equal(w, 0x7f) | any_equal(w, 0xc2)) return true;
  }
  for (; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f || c == 0xc2) return true;
  }
  return false;
}

} // namespace aryl
