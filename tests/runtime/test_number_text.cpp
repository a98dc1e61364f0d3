// number_text.hpp and control_scan.hpp: the outputs' own number formatting prints what fmt
// prints, and the quick control-character test never misses one.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/outputs/control_scan.hpp"
#include "runtime/outputs/number_text.hpp"
#include "solvers/control_chars.hpp"

using namespace aryl;

namespace {

std::string fixed(double x, int decimals) {
  std::string out = "x";  // appends: what was there stays
  append_fixed(out, x, decimals);
  return out.substr(1);
}

std::string fmt_fixed(double x, int decimals) { return fmt::format("{:.{}f}", x, decimals); }

/// Counts the values checked, so that a test proves it compared something.
int check_fixed(const std::vector<double>& xs) {
  int checked = 0;
  for (double x : xs)
    for (int d = 0; d <= 6; ++d) {
      INFO("x = ", fmt::format("{:a}", x), ", decimals = ", d);
      REQUIRE(fixed(x, d) == fmt_fixed(x, d));
      ++checked;
    }
  return checked;
}

double from_bits(uint64_t bits) {
  double x = 0;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

} // namespace

TEST_CASE("number text: fixed decimals equal fmt's at zero, signs, ties to even and the smallest values") {
  const double tiny = std::numeric_limits<double>::denorm_min();
  std::vector<double> xs{0.0, -0.0, 1.0, -1.0, 0.5, 1.5, 2.5, -2.5, 0.0625, 0.1875, -0.0625, 1234567.0625,
                         1.0 / 128, 3.0 / 128, -5.0 / 128, 0.0005, 0.0015, 5e-7, 1.5e-6, 2.5e-6, -1e-9, 0.999999,
                         0.9999995, 9.9999995, 0.1, 0.2, 0.3, 1e-3, 1e-6, 1e-7, tiny, -tiny,
                         std::numeric_limits<double>::min(), 17921552.0, 3370869.179, 0.517632};
  CHECK(check_fixed(xs) == static_cast<int>(xs.size()) * 7);
  // 0.0625 is a tie at 3 decimals: fmt (and printf) round it to even.
  CHECK(fixed(0.0625, 3) == "0.062");
  CHECK(fixed(0.1875, 3) == "0.188");
  CHECK(fixed(-0.0, 6) == "-0.000000");
}

TEST_CASE("number text: fixed decimals equal fmt's on both sides of 2^44, past it and for NaN and infinities") {
  const double edge = std::ldexp(1.0, 44);
  std::vector<double> xs{edge, -edge, std::nextafter(edge, 0.0), -std::nextafter(edge, 0.0),
                         std::nextafter(edge, 1e300), edge - 0.5, edge - 0.0625, 1e13 + 0.5, 1e15, 1e20,
                         -1e20, 1e300, std::numeric_limits<double>::max(), std::numeric_limits<double>::infinity(),
                         -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN(),
                         -std::numeric_limits<double>::quiet_NaN()};
  CHECK(check_fixed(xs) == static_cast<int>(xs.size()) * 7);
  CHECK(fixed(std::numeric_limits<double>::infinity(), 3) == "inf");
  // More decimals than the fast path takes are fmt's too.
  for (double x : {0.123456789, 1.0 / 3, -2.5e-8, 1e10 / 7})
    for (int d : {7, 9, 12}) CHECK(fixed(x, d) == fmt_fixed(x, d));
}

TEST_CASE("number text: fixed decimals equal fmt's on seeded random values, ties and near-ties") {
  std::mt19937_64 rng(20261206);
  std::vector<double> xs;
  // Any bit pattern below 2^46 (past the fast path's edge), both signs, subnormals included.
  for (int i = 0; i < 40000; ++i) {
    const uint64_t exponent = rng() % (1023 + 46);
    xs.push_back(from_bits((rng() & (uint64_t{1} << 63)) | (exponent << 52) | (rng() & ((uint64_t{1} << 52) - 1))));
  }
  // Values a run writes: k / 10^d and its neighbours, times and ratios.
  for (int i = 0; i < 20000; ++i) {
    const auto k = static_cast<double>(rng() % 100000000000000);
    const double x = k / (i % 2 ? 1e6 : 1e3);
    xs.push_back(x);
    xs.push_back(std::nextafter(x, 0.0));
    xs.push_back(std::nextafter(x, 1e300));
    xs.push_back(static_cast<double>(rng() % 10000000) / static_cast<double>(rng() % 10000000 + 1));
  }
  // Exact ties: odd multiples of 1/16 (3 decimals), 1/128 (6 decimals) and 1/2 (0 decimals).
  for (int i = 0; i < 20000; ++i) {
    const auto odd = static_cast<double>(2 * (rng() % 1000000000) + 1);
    for (double den : {2.0, 16.0, 128.0}) xs.push_back((i % 2 ? -odd : odd) / den);
  }
  CHECK(check_fixed(xs) == static_cast<int>(xs.size()) * 7);
}

TEST_CASE("number text: integers and microsecond times equal fmt's, extremes and negatives included") {
  std::mt19937_64 rng(7);
  std::vector<int64_t> vs{0, 1, -1, 9, 10, 99, 100, 999999, 1000000, 1000001, -999999, -1000000, -1500000,
                          86400000001, std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(),
                          std::numeric_limits<int64_t>::max() - 1, std::numeric_limits<int64_t>::min() + 1};
  for (int i = 0; i < 20000; ++i) {
    const auto v = static_cast<int64_t>(rng() >> (rng() % 64));
    vs.push_back(i % 3 ? v : ~v);  // ~: negatives without overflow
  }
  int checked = 0;
  for (int64_t v : vs) {
    std::string s, u, t;
    append_int(s, v);
    append_uint(u, static_cast<uint64_t>(v));
    append_seconds(t, v);
    REQUIRE(s == fmt::format("{}", v));
    REQUIRE(u == fmt::format("{}", static_cast<uint64_t>(v)));
    // What every output printed before: integers from zero on, the seconds' double below.
    const std::string expected = v >= 0 ? fmt::format("{}.{:06}", v / 1000000, v % 1000000)
                                        : fmt::format("{:.6f}", static_cast<double>(v) / 1e6);
    REQUIRE(t == expected);
    ++checked;
  }
  CHECK(checked == static_cast<int>(vs.size()));
  std::string t;
  append_seconds(t, -1500000);
  CHECK(t == "-1.500000");
}

TEST_CASE("control scan: says yes for exactly the strings holding a byte below 0x20, 0x7f or 0xc2, never missing a "
          "control character") {
  std::mt19937_64 rng(11);
  // Mostly printable text with now and then a byte of interest, at every offset and length.
  const unsigned char rare[] = {0x00, 0x09, 0x0a, 0x1b, 0x1f, 0x20, 0x7e, 0x7f, 0x80, 0x9f, 0xc2, 0xc3, 0xff};
  int with_control = 0, without = 0;
  for (int i = 0; i < 30000; ++i) {
    std::string s(rng() % 40, 'a');
    for (auto& c : s) c = static_cast<char>(rng() % 30 ? 0x21 + rng() % 94 : rare[rng() % sizeof rare]);
    bool expected = false;
    for (char c : s) {
      const auto b = static_cast<unsigned char>(c);
      expected = expected || b < 0x20 || b == 0x7f || b == 0xc2;
    }
    const bool control = find_control(s) != std::string::npos;
    REQUIRE(may_hold_control(s) == expected);
    if (control) REQUIRE(may_hold_control(s));
    ++(control ? with_control : without);
  }
  CHECK(with_control > 1000);
  CHECK(without > 1000);
}

TEST_CASE("number text: the longest texts fit the room each put_ function names") {
  std::vector<char> buf(4096, 'x');
  auto length = [&](char* end) { return static_cast<size_t>(end - buf.data()); };
  CHECK(length(put_int(buf.data(), std::numeric_limits<int64_t>::min())) == 20);
  CHECK(length(put_uint(buf.data(), std::numeric_limits<uint64_t>::max())) == 20);
  CHECK(length(put_seconds(buf.data(), std::numeric_limits<int64_t>::min())) <= 28);
  CHECK(length(put_seconds(buf.data(), std::numeric_limits<int64_t>::max())) <= 28);
  CHECK(length(put_fixed(buf.data(), -std::numeric_limits<double>::max(), 20)) == fixed_text_room);
  CHECK(std::string(buf.data(), 4) == "-179");
  CHECK_THROWS_AS(put_fixed(buf.data(), 1.0, 21), std::logic_error);
}
