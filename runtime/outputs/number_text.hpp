#pragma once
/// Numbers as text for the busiest outputs (events.log, timeline.csv, jobs.csv): each function
/// appends exactly what the fmt format named beside it prints for the same value, without
/// fmt's general machinery (a run writes millions of them). Header-only but for append_fixed.
#include <cstdint>
#include <cstring>
#include <string>

namespace aryl {

namespace number_text_detail {
inline constexpr char digit_pairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/// Writes the digits of `v` so that they end just before `end`; returns where they start.
inline char* digits_before(char* end, uint64_t v) {
  while (v >= 100) {
    end -= 2;
    std::memcpy(end, &digit_pairs[(v % 100) * 2], 2);
    v /= 100;
  }
  if (v >= 10) {
    end -= 2;
    std::memcpy(end, &digit_pairs[v * 2], 2);
  } else {
    *--end = static_cast<char>('0' + v);
  }
  return end;
}

/// The last `n` digits of `v`, zero-padded to `n`, ending just before `end`.
inline char* padded_digits_before(char* end, uint64_t v, int n) {
  for (; n >= 2; n -= 2) {
    end -= 2;
    std::memcpy(end, &digit_pairs[(v % 100) * 2], 2);
    v /= 100;
  }
  if (n == 1) *--end = static_cast<char>('0' + v % 10);
  return end;
}
} // namespace number_text_detail

/// "{}" of an unsigned integer.
inline void append_uint(std::string& out, uint64_t v) {
  char buf[20];
  char* end = buf + sizeof buf;
  char* at = number_text_detail::digits_before(end, v);
  out.append(at, static_cast<size_t>(end - at));
}

/// "{}" of a signed integer.
inline void append_int(std::string& out, int64_t v) {
  char buf[21];
  char* end = buf + sizeof buf;
  // 0 - v in unsigned arithmetic: INT64_MIN has no positive int64_t.
  char* at = number_text_detail::digits_before(end, v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v));
  if (v < 0) *--at = '-';
  out.append(at, static_cast<size_t>(end - at));
}

/// "{:.Nf}" of `x`, N = `decimals`: the exact binary value of `x` rounded to N decimals, ties
/// to even, "-" before any negative value (-0.0 included), "nan"/"inf" as fmt spells them.
void append_fixed(std::string& out, double x, int decimals);

/// "{:.6f}" of `us` / 1e6 seconds. Every time of a run is whole microseconds, so for us >= 0
/// the text is the whole seconds and six digits of microseconds, from integers alone.
inline void append_seconds(std::string& out, int64_t us) {
  if (us < 0) {
    append_fixed(out, static_cast<double>(us) / 1e6, 6);
    return;
  }
  char buf[28];
  char* end = buf + sizeof buf;
  const auto u = static_cast<uint64_t>(us);
  char* at = number_text_detail::padded_digits_before(end, u % 1000000, 6);
  *--at = '.';
  at = number_text_detail::digits_before(at, u / 1000000);
  out.append(at, static_cast<size_t>(end - at));
}

} // namespace aryl
