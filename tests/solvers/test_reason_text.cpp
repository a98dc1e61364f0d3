// Decision reasons written without printf read exactly as printf wrote them.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "solvers/reason_text.hpp"

using namespace aryl::detail;

namespace {

std::string printf_of(const char* spec, double v) {
  char buf[400];
  std::snprintf(buf, sizeof buf, spec, v);
  return buf;
}

/// Edge cases of rounding to an integer, then random values of every magnitude a reason
/// holds (and beyond), from a fixed seed.
std::vector<double> sample_values() {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> v{0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999999999999994, -0.4, 1e-300, -1e-300,
                        4503599627370495.5, 4503599627370496.0, 8999999999999999.0, 9.0e15, 9.1e15, 1e300, -1e300,
                        inf, -inf, std::nan("")};
  for (double x : {2.5, 3.5, 1e6 + 0.5, 123.5}) {
    v.push_back(std::nextafter(x, 0.0));
    v.push_back(std::nextafter(x, inf));
  }
  std::mt19937_64 rng(20261204);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  for (int e = -3; e <= 17; ++e)
    for (int k = 0; k < 2000; ++k) v.push_back(unit(rng) * std::pow(10.0, e));
  std::uniform_int_distribution<int> half(-100000, 100000);
  for (int k = 0; k < 2000; ++k) v.push_back(half(rng) + 0.5);
  return v;
}

} // namespace

TEST_CASE("reason text: whole{} writes every value as printf's %.0f does, ties to even and -0 included") {
  for (double x : sample_values()) {
    std::string got;
    put(got, whole{x});
    INFO(x);
    CHECK(got == printf_of("%.0f", x));
  }
}

TEST_CASE("reason text: general{} writes every value as printf's %g does") {
  std::vector<double> v{4, 2.5, 0.1, 1e6, 999999, 123456, -7, 0.0, -0.0, 1e-5, 1.0 / 3, 1e21};
  for (double x : sample_values()) v.push_back(x);
  for (double x : v) {
    std::string got;
    put(got, general{x});
    INFO(x);
    CHECK(got == printf_of("%g", x));
  }
}

TEST_CASE("reason text: parts are appended in order, integers as written by printf's %d and %u") {
  CHECK(reason_text("job ", 7u, " on ", -3, " servers, ", whole{12.5}, " s, ratio ", general{4.0}, "x") ==
        "job 7 on -3 servers, 12 s, ratio 4x");
  std::string s = reason_text("a");
  append_text(s, ", then ", whole{-0.25}, " and ", 4294967295u);
  CHECK(s == "a, then -0 and 4294967295");
}
