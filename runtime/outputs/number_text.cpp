#include "runtime/outputs/number_text.hpp"

#include <fmt/format.h>

#include <iterator>

namespace aryl {

void append_fixed(std::string& out, double x, int decimals) {
  // Why this equals fmt's "{:.Nf}": a finite double is exactly m x 2^e with an integer
  // m < 2^53, and fmt prints that exact binary value rounded to N decimals, ties to even (as
  // printf does). So the text is the integer q = round(|x| x 10^N) split into q / 10^N and N
  // zero-padded digits of q % 10^N, after a "-" if the sign bit is set. Below 2^44, m x 10^N
  // (N <= 6) is under 2^73, exact in 128 bits, and q stays under 2^64; there e <= -9, so with
  // s = -e, q is (m x 10^N) >> s, rounded up when the bits shifted out exceed half of 2^s, or
  // equal it with q odd. Past 2^44, NaN, infinities and other N are left to fmt.
  __extension__ typedef unsigned __int128 u128;
  static constexpr uint64_t scales[] = {1, 10, 100, 1000, 10000, 100000, 1000000};
  uint64_t bits = 0;
  std::memcpy(&bits, &x, sizeof bits);
  const int biased = static_cast<int>((bits >> 52) & 0x7ff);
  if (decimals < 0 || decimals > 6 || biased >= 1023 + 44) {
    fmt::format_to(std::back_inserter(out), "{:.{}f}", x, decimals);
    return;
  }
  uint64_t m = bits & ((uint64_t{1} << 52) - 1);
  int shift = 1074;  // subnormal: m x 2^-1074
  if (biased != 0) {
    m |= uint64_t{1} << 52;
    shift = 1075 - biased;
  }
  uint64_t q = 0;
  // For shift > 100 the value times 10^N is below 2^73, under half of 2^shift: it rounds to 0.
  if (shift <= 100) {
    const u128 p = static_cast<u128>(m) * scales[decimals];
    q = static_cast<uint64_t>(p >> shift);
    const u128 rest = p - (static_cast<u128>(q) << shift);
    const u128 half = static_cast<u128>(1) << (shift - 1);
    if (rest > half || (rest == half && (q & 1))) ++q;
  }
  char buf[32];
  char* end = buf + sizeof buf;
  char* at = end;
  const uint64_t scale = scales[decimals];
  if (decimals > 0) {
    at = number_text_detail::padded_digits_before(at, q % scale, decimals);
    *--at = '.';
  }
  at = number_text_detail::digits_before(at, q / scale);
  if (bits >> 63) *--at = '-';
  out.append(at, static_cast<size_t>(end - at));
}

} // namespace aryl
