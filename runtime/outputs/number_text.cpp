#include "runtime/outputs/number_text.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace aryl {

char* put_fixed(char* p, double x, int decimals) {
  // Why this equals fmt's "{:.Nf}": a finite double is exactly m x 2^e with an integer
  // m < 2^53, and fmt prints that exact binary value rounded to N decimals, ties to even (as
  // printf does). So the text is the integer q = round(|x| x 10^N) split into q / 10^N and N
  // zero-padded digits of q % 10^N, after a "-" if the sign bit is set. Below 2^44, m x 10^N
  // (N <= 6) is under 2^73, exact in 128 bits, and q stays under 2^64; there e <= -9, so with
  // s = -e, q is (m x 10^N) >> s, rounded up when the bits shifted out exceed half of 2^s, or
  // equal it with q odd. Past 2^44, NaN, infinities and N > 6 are left to fmt.
  __extension__ typedef unsigned __int128 u128;
  static constexpr uint64_t scales[] = {1, 10, 100, 1000, 10000, 100000, 1000000};
  if (decimals < 0 || decimals > 20) throw std::logic_error("put_fixed: decimals must be 0 to 20");
  uint64_t bits = 0;
  std::memcpy(&bits, &x, sizeof bits);
  const int biased = static_cast<int>((bits >> 52) & 0x7ff);
  if (decimals > 6 || biased >= 1023 + 44) return fmt::format_to_n(p, fixed_text_room, "{:.{}f}", x, decimals).out;
  uint64_t m = bits & ((uint64_t{1} << 52) - 1);
  int shift = 1074;  // subnormal: m x 2^-1074
  if (biased != 0) {
    m |= uint64_t{1} << 52;
    shift = 1075 - biased;
  }
  uint64_t q = 0;
  // For shift > 100 the value times 10^N is below 2^73, under half of 2^shift: it rounds to 0.
  if (shift <= 100) {
    const u128 product = static_cast<u128>(m) * scales[decimals];
    q = static_cast<uint64_t>(product >> shift);
    const u128 rest = product - (static_cast<u128>(q) << shift);
    const u128 half = static_cast<u128>(1) << (shift - 1);
    if (rest > half || (rest == half && (q & 1))) ++q;
  }
  if (bits >> 63) *p++ = '-';
  const uint64_t scale = scales[decimals];
  p = put_uint(p, q / scale);
  if (decimals == 0) return p;
  *p = '.';
  number_text_detail::padded_digits_before(p + 1 + decimals, q % scale, decimals);
  return p + 1 + decimals;
}

void append_fixed(std::string& out, double x, int decimals) {
  char buf[fixed_text_room];
  out.append(buf, static_cast<size_t>(put_fixed(buf, x, decimals) - buf));
}

} // namespace aryl
