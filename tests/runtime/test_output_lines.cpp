// run_writer's events.log and timeline.csv lines: gathered into blocks in a simulation, handed
// over one by one with flush_lines, escaped where a field holds a control character, and all
// written whatever way the run ends.
#include <doctest/doctest.h>

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "runtime/outputs/outputs.hpp"
#include "solvers/control_chars.hpp"
#include "tests/runtime/cli_support.hpp"

using namespace aryl;
using aryl::test::read_file;

namespace {

std::string fresh_dir(const char* name) {
  auto dir = (std::filesystem::temp_directory_path() / (std::string(name) + "-" + std::to_string(::getpid()))).string();
  std::filesystem::remove_all(dir);
  return dir;
}

/// Event i of the runs below: every 97th one with control characters in its detail or reason.
event_record nth_event(int i) {
  std::string detail = "job-" + std::to_string(i) + " workers=8";
  std::string why = i % 3 ? "a reason long enough to fill a block sooner" : "";
  if (i % 97 == 5) detail += "\x1b[31m\nforged";
  if (i % 97 == 50) why = "caf\xc2\x9b" "e\t";
  return {int64_t{i} * 1000001, "scheduler", i % 2 ? "start" : "finish", detail, why};
}

std::string expected_line(const event_record& e) {
  std::string line = fmt::format("{:.6f} {} {} {}", static_cast<double>(e.t_us) / 1e6, e.actor, e.event, e.detail);
  if (!e.why.empty()) line += " | " + e.why;
  return escape_control(line) + "\n";
}

/// Writes events 0..n-1 to `w`; returns the lines they make.
std::string write_events(run_writer& w, int n) {
  std::string expected;
  for (int i = 0; i < n; ++i) {
    w.event(nth_event(i));
    expected += expected_line(nth_event(i));
  }
  return expected;
}

} // namespace

TEST_CASE("output lines: a simulation's events.log is every line, in order and escaped, across many 64 KiB blocks") {
  auto dir = fresh_dir("aryl-test-output-lines");
  std::string expected;
  {
    run_writer w(dir);
    expected = write_events(w, 5000);
    run_summary s;
    w.commit(w.finish(s));
  }
  CHECK(expected.size() > 4 * 65536);
  CHECK(read_file(dir + "/events.log") == expected);
  CHECK(expected.find("\\x1b[31m\\nforged") != std::string::npos);
  CHECK(expected.find("caf\\u009be\\t") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("output lines: with flush_lines each event and timeline row is in its file as soon as it is written") {
  auto dir = fresh_dir("aryl-test-output-lines-flush");
  run_writer w(dir, true);
  w.event(nth_event(1));
  CHECK(read_file(dir + "/events.log.partial") == expected_line(nth_event(1)));
  cluster_snapshot c;
  c.t_us = 2500000;
  c.training_gpus = 16;
  c.running_jobs = 3;
  w.snapshot(c);
  CHECK(read_file(dir + "/timeline.csv.partial").ends_with("\n2.500000,0,16,0,0,0,0,0,0,3,0\n"));
  w.abandon();
  std::filesystem::remove_all(dir);
}

TEST_CASE("output lines: a failed run's partial events.log and timeline.csv hold every line written") {
  auto dir = fresh_dir("aryl-test-output-lines-abandon");
  std::string expected;
  std::string rows;
  {
    run_writer w(dir);
    for (int i = 0; i < 300; ++i) {
      w.event(nth_event(i));
      expected += expected_line(nth_event(i));
      cluster_snapshot c;
      c.t_us = int64_t{i} * 1000;
      c.queued_jobs = i;
      w.snapshot(c);
      rows += fmt::format("{:.6f},0,0,0,0,0,0,0,{},0,0\n", static_cast<double>(c.t_us) / 1e6, i);
    }
    auto note = w.abandon();
    CHECK(note.find(".partial") != std::string::npos);
  }
  CHECK(read_file(dir + "/events.log.partial") == expected);
  CHECK(read_file(dir + "/timeline.csv.partial").ends_with(rows));
  std::filesystem::remove_all(dir);
}

TEST_CASE("output lines: a writer destroyed without finishing still leaves every line written in its files") {
  auto dir = fresh_dir("aryl-test-output-lines-destroyed");
  std::string expected;
  {
    run_writer w(dir);
    expected = write_events(w, 200);
  }
  CHECK(read_file(dir + "/events.log.partial") == expected);
  std::filesystem::remove_all(dir);
}
