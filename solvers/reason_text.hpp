#pragma once
/// Decision reasons (events.log's text after " | ") built by appending, without printf: a
/// contended run writes one for each of tens of thousands of rescales and preemptions, and
/// formatting their seconds with snprintf's "%.0f" was most of what a reason cost. The text
/// is the same as printf's, character for character (tests/solvers/test_reason_text.cpp).
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>

namespace aryl::detail {

/// A number written as printf's "%.0f" writes it: rounded to the nearest integer, ties to
/// even (the default rounding mode, as printf rounds), "-0" for a negative value that rounds
/// to zero.
struct whole {
  double v;
};

/// A number written as printf's "%g" writes it (configuration values such as a ratio).
struct general {
  double v;
};

inline void put(std::string& out, std::string_view s) { out += s; }
inline void put(std::string& out, const char* s) { out += s; }

template <class Int>
inline void put_int(std::string& out, Int v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}
inline void put(std::string& out, int v) { put_int(out, v); }
inline void put(std::string& out, unsigned v) { put_int(out, v); }
inline void put(std::string& out, long v) { put_int(out, v); }

inline void put(std::string& out, whole w) {
  // Below 2^53 every double's nearest integer is exact, so rounding it in the double and
  // printing the integer is what printf does; beyond, and for inf and nan, printf itself.
  if (std::fabs(w.v) < 9.0e15) {
    const double r = std::nearbyint(w.v);
    if (r == 0 && std::signbit(w.v)) out += '-';
    put_int(out, static_cast<long long>(r));
    return;
  }
  char buf[400];
  std::snprintf(buf, sizeof buf, "%.0f", w.v);
  out += buf;
}

inline void put(std::string& out, general g) {
  // An integer of up to six digits is written as one ("4", "-0"); anything else by printf.
  if (std::fabs(g.v) < 1e6 && g.v == std::trunc(g.v)) {
    if (g.v == 0 && std::signbit(g.v)) out += '-';
    put_int(out, static_cast<long long>(g.v));
    return;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", g.v);
  out += buf;
}

/// The parts appended to `out` in order: text, integers, whole{seconds}, general{value}.
template <class... Parts>
void append_text(std::string& out, const Parts&... parts) {
  (put(out, parts), ...);
}

/// The parts in order, as a new string.
template <class... Parts>
std::string reason_text(const Parts&... parts) {
  std::string out;
  out.reserve(256);
  append_text(out, parts...);
  return out;
}

} // namespace aryl::detail
