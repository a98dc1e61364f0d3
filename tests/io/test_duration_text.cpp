// Time limits as Slurm's --time writes them (runtime/inputs/duration_text.hpp): every form,
// its bounds, and what is refused.
#include <doctest/doctest.h>

#include <string>
#include <variant>

#include "runtime/inputs/duration_text.hpp"

using namespace aryl;

namespace {

double seconds(const std::string& text) {
  auto r = parse_duration(text);
  INFO(text, ": ", std::holds_alternative<std::string>(r) ? std::get<std::string>(r) : "");
  REQUIRE(std::holds_alternative<double>(r));
  return std::get<double>(r);
}

std::string refusal(const std::string& text) {
  auto r = parse_duration(text);
  INFO(text);
  REQUIRE(std::holds_alternative<std::string>(r));
  return std::get<std::string>(r);
}

} // namespace

TEST_CASE("duration: a bare number is seconds, whole or decimal") {
  CHECK(seconds("90") == 90);
  CHECK(seconds("1") == 1);
  CHECK(seconds("007") == 7);
  CHECK(seconds("0.5") == 0.5);
  CHECK(seconds("2.25") == 2.25);
}

TEST_CASE("duration: M:SS and H:MM:SS, the first part unbounded, the others two digits below 60") {
  CHECK(seconds("10:00") == 600);
  CHECK(seconds("0:01") == 1);
  CHECK(seconds("90:30") == 90 * 60 + 30);
  CHECK(seconds("1:00:00") == 3600);
  CHECK(seconds("0:59:59") == 3599);
  CHECK(seconds("48:00:00") == 48 * 3600);
  CHECK(refusal("1:60").find("below 60") != std::string::npos);
  CHECK(refusal("1:60:00").find("below 60") != std::string::npos);
  CHECK(refusal("1:5").find("two digits") != std::string::npos);
  CHECK(refusal("1:005").find("two digits") != std::string::npos);
  CHECK(refusal("1:00:00:00").find("not a duration") != std::string::npos);
  for (auto* bad : {":30", "1:", "1::00", "1:0a", "a:00", "1:00:", "1.5:00", "1:30.5"}) CHECK(!refusal(bad).empty());
}

TEST_CASE("duration: D-H, D-H:MM and D-H:MM:SS, hours after a day below 24") {
  CHECK(seconds("2-00:00:00") == 2 * 86400);
  CHECK(seconds("1-0") == 86400);
  CHECK(seconds("1-12") == 86400 + 12 * 3600);
  CHECK(seconds("1-12:30") == 86400 + 12 * 3600 + 30 * 60);
  CHECK(seconds("0-1:02:03") == 3723);
  CHECK(seconds("0-23:59:59") == 86399);
  CHECK(refusal("1-24").find("below 24") != std::string::npos);
  CHECK(refusal("1-1:60").find("below 60") != std::string::npos);
  for (auto* bad : {"-1", "1-", "1-:00", "a-1", "1-1-1", "1.5-1", "1-1:00:00:00", "1-1h"}) CHECK(!refusal(bad).empty());
}

TEST_CASE("duration: a number with a unit: s, m, h, d") {
  CHECK(seconds("30s") == 30);
  CHECK(seconds("10m") == 600);
  CHECK(seconds("2h") == 7200);
  CHECK(seconds("1d") == 86400);
  CHECK(seconds("1.5h") == 5400);
  for (auto* bad : {"s", "h", "10x", "10ms", "10 m", "10S", "10M", "1e3", "m10"}) CHECK(!refusal(bad).empty());
}

TEST_CASE("duration: more than 0 and at most a year") {
  CHECK(refusal("0").find("more than 0") != std::string::npos);
  CHECK(refusal("0:00").find("more than 0") != std::string::npos);
  CHECK(refusal("0-0").find("more than 0") != std::string::npos);
  CHECK(refusal("0s").find("more than 0") != std::string::npos);
  CHECK(refusal("0.0").find("more than 0") != std::string::npos);
  CHECK(seconds("365d") == max_time_limit_s);
  CHECK(seconds("365-00:00:00") == max_time_limit_s);
  CHECK(refusal("366d").find("365 days") != std::string::npos);
  CHECK(refusal("365-00:00:01").find("365 days") != std::string::npos);
  CHECK(refusal("99999999").find("365 days") != std::string::npos);
  // Too many digits to be anything but a typo (and no overflow).
  CHECK(refusal("1234567890").find("not a duration") != std::string::npos);
  CHECK(refusal("99999999999999999999999s").find("not a duration") != std::string::npos);
}

TEST_CASE("duration: no sign, space, exponent, empty part or other character") {
  CHECK(refusal("") == "is empty");
  for (auto* bad : {"-5", "+5", " 5", "5 ", "5\n", "1e3", ".5", "5.", "1.2.3", "inf", "nan", "0x10", "五", "10:00 ",
                    "1_000"})
    CHECK(refusal(bad).find("not a duration") != std::string::npos);
}
