// The table of config keys: the docs' table is made from it, and what it states of each key
// (range, values) is what parsing and the effective config do.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <set>
#include <sstream>

#include "runtime/inputs/config_keys.hpp"
#include "runtime/outputs/config_reference.hpp"
#include "runtime/outputs/effective_config.hpp"
#include "tests/input_test_support.hpp"
#include "tests/runtime/cli_support.hpp"

using namespace aryl;
using aryl::test::error_of;

namespace {

/// docs/config.md's table: the first line that opens it through the last row after it.
std::string docs_table() {
  std::ifstream in(std::string(ARYL_SOURCE_DIR) + "/docs/config.md");
  std::string line, out;
  bool inside = false;
  while (std::getline(in, line)) {
    if (!inside && line.rfind("| key |", 0) == 0) inside = true;
    if (inside && line.rfind("|", 0) != 0) break;
    if (inside) out += line + "\n";
  }
  return out;
}

/// A key the table names as a family, as a config file would spell one of its members.
std::string member(const std::string& name) {
  auto out = name;
  for (auto [pattern, example] : {std::pair{"<TYPE>", "H100"}, std::pair{"<NAME>", "vc1"}})
    if (auto at = out.find(pattern); at != std::string::npos) out.replace(at, std::string(pattern).size(), example);
  return out;
}

std::string number_text(const config_key& k, double v) {
  return k.type == "integer" ? std::to_string(static_cast<int64_t>(v)) : fmt::format("{:.17g}", v);
}

} // namespace

TEST_CASE("config keys: docs/config.md's table is the table of keys") {
  const auto expected = config_keys_markdown();
  CHECK_MESSAGE(docs_table() == expected,
                "docs/config.md's table differs from `aryl config --markdown`: run scripts/update_config_doc.sh");
}

TEST_CASE("config keys: every key has a type, a range and a one-line description") {
  const std::set<std::string> types{"boolean", "number", "integer", "choice", "text"};
  for (auto& k : config_keys()) {
    CAPTURE(k.name);
    CHECK(types.count(k.type) == 1);
    CHECK_FALSE(k.range.empty());
    CHECK(k.description.size() >= 20);
    CHECK(k.description.size() <= 240);
    for (auto* cell : {&k.name, &k.range, &k.unit, &k.description, &k.default_text})
      CHECK(cell->find_first_of("|\n") == std::string::npos);
    CHECK(find_config_key(member(k.name)) == &k);
  }
}

TEST_CASE("config keys: a numeric key takes both ends of its range, refuses beyond them naming the key, and shows "
          "what it took") {
  int checked = 0;
  for (auto& k : config_keys()) {
    if (!k.bounds) continue;
    const auto key = member(k.name);
    CAPTURE(key);
    for (double v : {k.bounds->first, k.bounds->second}) {
      config c;
      set_config_key(c, key, number_text(k, v), "test");
      auto j = nlohmann::json::parse(effective_config_json(c));
      REQUIRE(j.contains(key));
      CHECK(j[key].get<double>() == v);
    }
    for (double v : {k.bounds->first - 1, k.bounds->second + 1}) {
      config c;
      auto e = error_of([&] { set_config_key(c, key, number_text(k, v), "test"); });
      CHECK(e.rfind("test: " + key + ": ", 0) == 0);
    }
    ++checked;
  }
  CHECK(checked > 80);
}

TEST_CASE("config keys: a choice takes each value its range names and the effective config shows it back") {
  int checked = 0;
  for (auto& k : config_keys()) {
    if (k.type != "choice") continue;
    std::istringstream values(k.range);
    for (std::string v; std::getline(values, v, ',');) {
      v.erase(0, v.find_first_not_of(' '));
      CAPTURE(k.name);
      CAPTURE(v);
      config c;
      set_config_key(c, k.name, v, "test");
      CHECK(nlohmann::json::parse(effective_config_json(c))[k.name] == v);
      ++checked;
    }
    config c;
    CHECK(error_of([&] { set_config_key(c, k.name, "none-of-these", "test"); }).rfind("test: " + k.name + ": ", 0) == 0);
  }
  CHECK(checked >= 20);
}

TEST_CASE("config keys: a boolean takes true and false and refuses other words naming the key") {
  for (auto& k : config_keys()) {
    if (k.type != "boolean") continue;
    const auto key = member(k.name);
    CAPTURE(key);
    for (bool b : {true, false}) {
      config c;
      set_config_key(c, key, b ? "true" : "false", "test");
      CHECK(nlohmann::json::parse(effective_config_json(c))[key] == b);
    }
    config c;
    CHECK(error_of([&] { set_config_key(c, key, "perhaps", "test"); }).rfind("test: " + key + ": ", 0) == 0);
  }
}

TEST_CASE("aryl config prints the effective config a run of the same settings writes as config.json") {
  const std::string settings = " --policy las --set synthetic.jobs=30 --set tenants.a.quota=8 --set gpu_speed.H100=3"
                               " --set live.worker_command='python3 train.py' --out /tmp/aryl-cli-config-out";
  auto ran = aryl::test::run("simulate --quiet" + settings);
  REQUIRE_MESSAGE(ran.code == 0, ran.output);
  auto printed = aryl::test::run("config" + settings);
  CHECK(printed.code == 0);
  CHECK(printed.output == aryl::test::read_file("/tmp/aryl-cli-config-out/config.json"));
}

TEST_CASE("aryl config --markdown prints the table of keys, and a bad key is simulate's one-line error") {
  auto r = aryl::test::run("config --markdown");
  CHECK(r.code == 0);
  CHECK(r.output == config_keys_markdown());
  aryl::test::check_one_line_error(aryl::test::run("config --set scheduler.migrat=true"),
                                   "--set: unknown config key 'scheduler.migrat'");
}
