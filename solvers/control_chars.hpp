#pragma once
/// Text that comes from a file, the command line or a peer (names, values, paths, reasons) is
/// shown one event per line: every message, log line and table cell passes through
/// escape_control, so that a newline or a terminal escape in an input can neither forge a line
/// nor drive the reader's terminal. Names are refused outright if they hold one (find_control).
/// Header-only: input_error uses it, and every layer throws input_error.
#include <string>
#include <string_view>

namespace aryl {

namespace detail {
/// Length of the control character at s[i] (1, or 2 for a UTF-8 C1 character), 0 if none.
inline size_t control_length(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x20 || c == 0x7f) return 1;
  // U+0080..U+009F in UTF-8; terminals take some of them (CSI, OSC) as escapes.
  if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
      static_cast<unsigned char>(s[i + 1]) <= 0x9f)
    return 2;
  return 0;
}
} // namespace detail

/// Position of the first control character of `s` (C0, DEL, or C1 encoded in UTF-8), or npos.
inline size_t find_control(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i)
    if (detail::control_length(s, i) > 0) return i;
  return std::string_view::npos;
}

/// `s` with each control character spelt as an escape: \n, \r and \t, \xHH for the other C0
/// characters and DEL, \u00HH for C1. Everything else, backslashes included, is kept as it is.
inline std::string escape_control(std::string_view s) {
  const size_t first = find_control(s);
  if (first == std::string_view::npos) return std::string(s);
  static constexpr char hex[] = "0123456789abcdef";
  std::string out(s.substr(0, first));
  for (size_t i = first; i < s.size(); ++i) {
    const size_t n = detail::control_length(s, i);
    if (n == 0) {
      out += s[i];
      continue;
    }
    const auto c = static_cast<unsigned char>(s[i + n - 1]);
    if (n == 2) {
      out += "\\u00";
      ++i;
    } else if (c == '\n' || c == '\r' || c == '\t') {
      out += c == '\n' ? "\\n" : c == '\r' ? "\\r" : "\\t";
      continue;
    } else {
      out += "\\x";
    }
    out += hex[c >> 4];
    out += hex[c & 0xf];
  }
  return out;
}

/// For a refusal: "a control character ('\x1b') at byte 3", or "" if `s` holds none.
inline std::string describe_control(std::string_view s) {
  const size_t at = find_control(s);
  if (at == std::string_view::npos) return {};
  return "a control character ('" + escape_control(s.substr(at, detail::control_length(s, at))) + "') at byte " +
         std::to_string(at + 1);
}

} // namespace aryl
