#pragma once
/// A quick test before find_control (solvers/control_chars.hpp) on every events.log line: eight
/// bytes at a time, whether it holds a byte a control character can start with (below 0x20,
/// 0x7f, and 0xc2, the lead byte of a UTF-8 C1 character). It may say yes where find_control
/// then finds none (0xc2 before a printable character); it never says no where find_control
/// would find one.
#include <cstdint>
#include <cstring>
#include <string_view>

namespace aryl {

inline bool may_hold_control(std::string_view s) {
  auto exact = [](const char* at, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      const auto c = static_cast<unsigned char>(at[i]);
      if (c < 0x20 || c == 0x7f || c == 0xc2) return true;
    }
    return false;
  };
  constexpr uint64_t ones = 0x0101010101010101, highs = 0x8080808080808080;
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w = 0;
    std::memcpy(&w, s.data() + i, 8);
    // Printable ASCII passes in one test; a word with a byte below 0x20, at or above 0x7f
    // (0xc2 among them) is looked at byte by byte. (w - 0x20 each) & ~w has a high bit iff a
    // byte is below 0x20: with none, no byte borrows; at the lowest one, the borrow sets it.
    // w + 1 each sets the high bit of a 0x7f; a carry into a byte comes only from a 0xff,
    // whose own high bit is set in w.
    const uint64_t suspect = (((w - ones * 0x20) & ~w) | w | (w + ones)) & highs;
    if (suspect && exact(s.data() + i, 8)) return true;
  }
  return exact(s.data() + i, s.size() - i);
}

} // namespace aryl
