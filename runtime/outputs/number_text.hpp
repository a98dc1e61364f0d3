#pragma once
/// Numbers as text for the busiest outputs (events.log, timeline.csv, jobs.csv): each function
/// writes exactly what the fmt format named beside it prints for the same value, without
/// fmt's general machinery (a run writes millions of them). The put_ functions write at `p`,
/// which must have the room named beside them, and return the end of what they wrote; the
/// append_ ones add the same text to a string.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace aryl {

namespace number_text_detail {
inline constexpr char digit_pairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/// Writes the digits of `v` so that they end just before `end`.
inline void digits_before(char* end, uint64_t v) {
  while (v >= 100) {
    end -= 2;
    std::memcpy(end, &digit_pairs[(v % 100) * 2], 2);
    v /= 100;
  }
  if (v >= 10) std::memcpy(end - 2, &digit_pairs[v * 2], 2);
  else end[-1] = static_cast<char>('0' + v);
}

/// The last `n` digits of `v`, zero-padded to `n`, ending just before `end`.
inline void padded_digits_before(char* end, uint64_t v, int n) {
  for (; n >= 2; n -= 2) {
    end -= 2;
    std::memcpy(end, &digit_pairs[(v % 100) * 2], 2);
    v /= 100;
  }
  if (n == 1) end[-1] = static_cast<char>('0' + v % 10);
}

/// How many decimal digits `v` has (1 for 0): log2 times log10(2) (1233 / 4096), corrected.
inline int digit_count(uint64_t v) {
  static constexpr uint64_t powers[] = {1,
                                        10,
                                        100,
                                        1000,
                                        10000,
                                        100000,
                                        1000000,
                                        10000000,
                                        100000000,
                                        1000000000,
                                        10000000000,
                                        100000000000,
                                        1000000000000,
                                        10000000000000,
                                        100000000000000,
                                        1000000000000000,
                                        10000000000000000,
                                        100000000000000000,
                                        1000000000000000000,
                                        10000000000000000000u};
  const int t = std::bit_width(v | 1) * 1233 >> 12;
  return t + 1 - ((v | 1) < powers[t]);
}
} // namespace number_text_detail

/// "{}" of an unsigned integer; room: 20.
inline char* put_uint(char* p, uint64_t v) {
  // Most counts of a run are one or two digits.
  if (v < 10) {
    *p = static_cast<char>('0' + v);
    return p + 1;
  }
  if (v < 100) {
    std::memcpy(p, &number_text_detail::digit_pairs[v * 2], 2);
    return p + 2;
  }
  const int n = number_text_detail::digit_count(v);
  number_text_detail::digits_before(p + n, v);
  return p + n;
}

/// "{}" of a signed integer; room: 20.
inline char* put_int(char* p, int64_t v) {
  if (v >= 0) return put_uint(p, static_cast<uint64_t>(v));
  *p = '-';
  // 0 - v in unsigned arithmetic: INT64_MIN has no positive int64_t.
  return put_uint(p + 1, 0 - static_cast<uint64_t>(v));
}

/// Room put_fixed needs: fmt's longest "{:.Nf}" of a double for N <= 20 ("-", 309 digits of
/// the largest double, ".", N digits).
inline constexpr size_t fixed_text_room = 331;

/// "{:.Nf}" of `x`, N = `decimals` (0 to 20): the exact binary value of `x` rounded to N
/// decimals, ties to even, "-" before any negative value (-0.0 included), "nan" and "inf" as
/// fmt spells them. Room: fixed_text_room.
char* put_fixed(char* p, double x, int decimals);

/// "{:.6f}" of `us` / 1e6 seconds; room: 28 (below zero the seconds are under 2^44 in size,
/// which put_fixed writes exactly). Every time of a run is whole microseconds, so for us >= 0
/// the text is the whole seconds and six digits of microseconds, from integers alone.
inline char* put_seconds(char* p, int64_t us) {
  if (us < 0) return put_fixed(p, static_cast<double>(us) / 1e6, 6);
  const auto u = static_cast<uint64_t>(us);
  p = put_uint(p, u / 1000000);
  *p = '.';
  number_text_detail::padded_digits_before(p + 7, u % 1000000, 6);
  return p + 7;
}

inline void append_uint(std::string& out, uint64_t v) {
  char buf[20];
  out.append(buf, static_cast<size_t>(put_uint(buf, v) - buf));
}

inline void append_int(std::string& out, int64_t v) {
  char buf[20];
  out.append(buf, static_cast<size_t>(put_int(buf, v) - buf));
}

inline void append_seconds(std::string& out, int64_t us) {
  char buf[28];
  out.append(buf, static_cast<size_t>(put_seconds(buf, us) - buf));
}

void append_fixed(std::string& out, double x, int decimals);

} // namespace aryl
