// Trace reader: canonical CSV, Philly adapter, errors, ordering.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <unistd.h>

#include "solvers/input_error.hpp"
#include "tests/input_test_support.hpp"
#include "runtime/inputs/trace_reader.hpp"

using namespace aryl;
using namespace aryl::test;

namespace {

std::string philly_path() { return std::string(ARYL_SOURCE_DIR) + "/../shared/traces/philly-sia/philly.csv"; }

const job_spec& by_name(const trace_load& t, const std::string& name) {
  for (const auto& j : t.jobs)
    if (j.name == name) return j;
  FAIL("no job " << name);
  throw;
}

} // namespace

TEST_CASE("canonical trace: columns are matched by header name, optional columns fill job_spec, unknown ones are ignored") {
  const trace_load t = read_trace(data("canonical_full.csv"), {});
  REQUIRE(t.jobs.size() == 5);
  CHECK(t.bad_rows == 0);
  CHECK(t.rows_read == 5);
  CHECK(t.origin.find("canonical_full.csv (canonical)") != std::string::npos);

  const job_spec& j1 = by_name(t, "j1");
  CHECK(j1.submit == sim_time::from_us(100'000'000));
  CHECK(j1.gpus == 4);
  CHECK(j1.duration_s == 3600);
  CHECK(j1.gpu_type == "V100");
  CHECK(j1.user == "alice");
  CHECK(j1.elastic);
  CHECK(j1.min_workers == 2);
  CHECK(j1.max_workers == 8);

  const job_spec& j2 = by_name(t, "j2");  // elastic = 0, empty bounds
  CHECK(j2.duration_s == doctest::Approx(60.5));
  CHECK_FALSE(j2.elastic);
  CHECK(j2.min_workers == 1);
  CHECK(j2.max_workers == 1);
  CHECK(j2.gpu_type.empty());

  const job_spec& j3 = by_name(t, "j3");  // elastic empty: not said by the trace
  CHECK_FALSE(j3.elastic);
  CHECK(j3.min_workers == 2);
  CHECK(j3.max_workers == 2);

  const job_spec& j4 = by_name(t, "j4");  // elastic = true without bounds: design defaults n/2, 2n
  CHECK(j4.elastic);
  CHECK(j4.min_workers == 4);
  CHECK(j4.max_workers == 16);

  const job_spec& j5 = by_name(t, "j5");  // FALSE with bounds equal to gpus
  CHECK_FALSE(j5.elastic);
  CHECK(j5.min_workers == 1);

  // Sorted order j2(0) j4(50) j1 j3 j5 (all 100, file order); flags follow their jobs.
  std::vector<std::string> names;
  for (const auto& j : t.jobs) names.push_back(j.name);
  CHECK(names == std::vector<std::string>{"j2", "j4", "j1", "j3", "j5"});
  CHECK(t.explicit_elastic == std::vector<bool>{true, true, true, false, true});
}

TEST_CASE("canonical trace: only the four required columns are needed, CRLF line ends and a BOM are accepted") {
  const trace_load t = read_trace(data("canonical_minimal.csv"), {});
  REQUIRE(t.jobs.size() == 3);
  CHECK(t.jobs[0].name == "b");
  CHECK(t.jobs[0].submit == sim_time::from_us(5'250'000));
  CHECK(t.jobs[1].name == "a");
  CHECK(t.jobs[2].gpus == 3);            // "3.0" is a whole number
  CHECK(t.jobs[2].duration_s == 1000);  // "1e3"
  for (const auto& j : t.jobs) {
    CHECK(j.min_workers == j.gpus);
    CHECK(j.max_workers == j.gpus);
    CHECK(j.predict_factor == 1.0);
  }
  CHECK(t.explicit_elastic == std::vector<bool>{false, false, false});

  const trace_load w = read_trace(data("canonical_crlf.csv"), {});
  REQUIRE(w.jobs.size() == 2);
  CHECK(w.jobs[0].name == "w2");
  CHECK(w.jobs[1].name == "w1");
  CHECK(w.jobs[1].duration_s == 10);
}

TEST_CASE("stable sort: jobs with equal submit times keep file order and index is the sorted position") {
  const trace_load t = read_trace(
      scratch_file("ties.csv", "job_id,submit_s,gpus,duration_s\nz,5,1,1\ny,5,1,1\nx,1,1,1\nw,5,1,1\nv,0,1,1\n"), {});
  std::vector<std::string> names;
  for (size_t i = 0; i < t.jobs.size(); ++i) {
    CHECK(t.jobs[i].index == i);
    names.push_back(t.jobs[i].name);
  }
  CHECK(names == std::vector<std::string>{"v", "x", "z", "y", "w"});
}

TEST_CASE("malformed canonical rows: every kind is an input_error naming file:line and the column") {
  const std::string head = "job_id,submit_s,gpus,duration_s,elastic,min_workers,max_workers\n";
  struct bad_case {
    std::string row;
    std::string column;
    std::string says;
  };
  const std::vector<bad_case> cases = {
      {"x,abc,1,10,,,", "submit_s", "'abc' is not a number"},
      {"x,-1,1,10,,,", "submit_s", "is negative"},
      {"x,1e12,1,10,,,", "submit_s", "too large"},
      {"x,0,0,10,,,", "gpus", "'0' must be at least 1"},
      {"x,0,1.5,10,,,", "gpus", "'1.5' is not a whole number"},
      {"x,0,,10,,,", "gpus", "is empty"},
      {"x,0,1,0,,,", "duration_s", "must be greater than 0"},
      {"x,0,1,nan,,,", "duration_s", "is not a number"},
      {"x,0,1,inf,,,", "duration_s", "is not a number"},
      {"x,0,1,12abc,,,", "duration_s", "is not a number"},
      {",0,1,10,,,", "job_id", "is empty"},
      {"x,0,1,10,yes,,", "elastic", "is not 0, 1, true or false"},
      {"x,0,4,10,1,5,4", "min_workers", "greater than max_workers 4"},
      {"x,0,4,10,1,0,4", "min_workers", "must be at least 1"},
      {"x,0,4,10,1,2,x", "max_workers", "is not a whole number"},
      {"x,0,16,10,1,2,4", "gpus", "outside [min_workers, max_workers] = [2, 4]"},
      {"x,0,4,10,0,2,4", "min_workers", "differs from gpus 4 for an inelastic job"},
      {"x,0,4,10,,2,4", "min_workers", "is given but column 'elastic' is empty"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.row);
    const std::string path = scratch_file("bad.csv", head + "ok,0,1,1,,,\n" + c.row + "\n");
    const std::string msg = error_of([&] { read_trace(path, {}); });
    CHECK(msg.find(path + ":3: ") == 0);
    CHECK(msg.find("column '" + c.column + "'") != std::string::npos);
    CHECK(msg.find(c.says) != std::string::npos);
    CHECK(msg.find('\n') == std::string::npos);
  }
  // Row-level problems name the line and what is wrong.
  const std::string few = scratch_file("few.csv", head + "x,0,1,10,,\n");
  CHECK(error_of([&] { read_trace(few, {}); }) == few + ":2: expected 7 fields as in the header, found 6");
  const std::string quote = scratch_file("quote.csv", head + "\"x,0,1,10,,,\n");
  CHECK(error_of([&] { read_trace(quote, {}); }) == quote + ":2: malformed quoted field");
  const std::string dup = scratch_file("dup.csv", head + "x,0,1,10,,,\ny,0,1,10,,,\nx,1,1,10,,,\n");
  CHECK(error_of([&] { read_trace(dup, {}); }) == dup + ":4: column 'job_id': 'x' repeats the job of line 2");
}

TEST_CASE("malformed headers: a missing required column or a repeated column fails with file:line") {
  const std::string missing = scratch_file("nogpus.csv", "job_id,submit_s,duration_s\nx,0,1\n");
  CHECK(error_of([&] { read_trace(missing, {}); }) ==
        missing + ":1: missing column 'gpus' required by the canonical trace format");
  const std::string twice = scratch_file("twice.csv", "job_id,gpus,submit_s,gpus,duration_s\n");
  CHECK(error_of([&] { read_trace(twice, {}); }) == twice + ":1: column 'gpus' appears twice in the header");
  const std::string empty = scratch_file("empty.csv", "");
  CHECK(error_of([&] { read_trace(empty, {}); }) == empty + ": empty file: expected a header line");
  // A header alone is a valid, empty trace.
  CHECK(read_trace(scratch_file("header.csv", "job_id,submit_s,gpus,duration_s\n"), {}).jobs.empty());
}

TEST_CASE("missing trace file: input_error 'path: cannot open: reason'") {
  const std::string path = "tests/io/data/no-such-trace.csv";
  CHECK(error_of([&] { read_trace(path, {}); }) == path + ": cannot open: No such file or directory");
  CHECK(error_of([&] { read_trace(data(""), {}); }).find(": cannot open: Is a directory") != std::string::npos);
}

TEST_CASE("skip_bad_rows: malformed rows are counted in bad_rows and left out, never silently") {
  const std::string path = data("canonical_bad.csv");
  CHECK(error_of([&] { read_trace(path, {}); }) == path + ":3: column 'submit_s': 'abc' is not a number");
  trace_options o;
  o.skip_bad_rows = true;
  const trace_load t = read_trace(path, o);
  CHECK(t.bad_rows == 4);  // abc submit, 0 gpus, negative duration, repeated job_id
  CHECK(t.rows_read == 3);
  REQUIRE(t.jobs.size() == 3);
  CHECK(t.jobs[0].name == "ok1");
  CHECK(t.jobs[0].submit == sim_time{});  // the first ok1 stays, its repeat is the bad row
  CHECK(t.jobs[2].name == "ok3");
}

TEST_CASE("trace options: bad dates, unknown formats and philly-only options are errors naming the option") {
  trace_options o;
  o.format = "philly";
  o.from = "2017-13-01";
  CHECK(error_of([&] { read_trace(data("philly_small.csv"), o); }).find("trace option 'from': '2017-13-01'") == 0);
  o.from = "2017-02-29";  // not a leap year
  CHECK(error_of([&] { read_trace(data("philly_small.csv"), o); }).find("trace option 'from'") == 0);
  o.from = "2017-10-02";
  o.to = "2017-10-02 25:00:00";
  CHECK(error_of([&] { read_trace(data("philly_small.csv"), o); }).find("trace option 'to'") == 0);
  o.to = "2017-10-01";
  CHECK(error_of([&] { read_trace(data("philly_small.csv"), o); }).find("trace option 'to': '2017-10-01' is not after") == 0);

  trace_options f;
  f.format = "helios";
  CHECK(error_of([&] { read_trace(data("philly_small.csv"), f); }).find("trace option 'format'") == 0);
  trace_options c;
  c.vc = "11cb48";
  CHECK(error_of([&] { read_trace(data("canonical_minimal.csv"), c); }).find("trace option 'vc' applies only") == 0);
}

TEST_CASE("calendar time: days_from_civil and the date parser are exact and zone-free") {
  static_assert(days_from_civil(1970, 1, 1) == 0);
  static_assert(days_from_civil(2000, 3, 1) == 11017);
  static_assert(days_from_civil(1969, 12, 31) == -1);
  int64_t s = 0;
  REQUIRE(parse_calendar_time("2017-10-06 19:44:08", s));
  CHECK(s == 1507319048);
  CHECK(format_calendar_time(s) == "2017-10-06 19:44:08");
  REQUIRE(parse_calendar_time("2016-02-29", s));
  CHECK(format_calendar_time(s) == "2016-02-29 00:00:00");
  CHECK(parse_calendar_time("2017-10-06T19:44:08", s));
  CHECK_FALSE(parse_calendar_time("2017-10-06 19:44", s));
  CHECK_FALSE(parse_calendar_time("2017-04-31", s));
  CHECK_FALSE(parse_calendar_time("2017-1-01", s));
}

TEST_CASE("philly format: vc and from-to filter (to exclusive), time 0 = from, duplicates kept, ties in file order") {
  trace_options o;
  o.format = "philly";
  o.vc = "vcA";
  o.from = "2017-10-02";
  o.to = "2017-10-03";
  const trace_load t = read_trace(data("philly_small.csv"), o);
  CHECK(t.rows_read == 6);
  REQUIRE(t.jobs.size() == 3);
  CHECK(t.jobs[0].name == "philly-2");  // line 6 duplicates line 2: both kept, file order
  CHECK(t.jobs[1].name == "philly-4");
  CHECK(t.jobs[2].name == "philly-6");
  for (const auto& j : t.jobs) CHECK(j.submit == sim_time::from_us(10'000'000));
  CHECK(t.jobs[1].gpus == 4);
  CHECK(t.jobs[1].min_workers == 4);
  CHECK(t.jobs[1].max_workers == 4);
  CHECK(t.jobs[1].duration_s == 30);
  CHECK(t.origin.find("vc vcA; from 2017-10-02 00:00:00; before 2017-10-03 00:00:00; time 0 = 2017-10-02 00:00:00") !=
        std::string::npos);

  // Without `from`, time 0 is the first submit left after filtering.
  trace_options all;
  all.format = "auto";
  const trace_load a = read_trace(data("philly_small.csv"), all);
  REQUIRE(a.jobs.size() == 6);
  CHECK(a.jobs[0].name == "philly-5");
  CHECK(a.jobs[0].submit == sim_time{});
  CHECK(a.jobs[1].submit == sim_time::from_us((36 * 3600 - 1) * 1'000'000LL));

  // Nothing matches: an empty result, not an error.
  trace_options none = o;
  none.vc = "nobody";
  const trace_load n = read_trace(data("philly_small.csv"), none);
  CHECK(n.jobs.empty());
  CHECK(n.rows_read == 6);
}

TEST_CASE("philly format: malformed rows name file:line and the column") {
  const std::string head = "timestamp,duration,num_gpus,gpu_time,cluster\n";
  trace_options o;
  o.format = "philly";
  const std::string date = scratch_file("p1.csv", head + "2017-02-30 00:00:00,10.0,1,10.0,a\n");
  CHECK(error_of([&] { read_trace(date, o); }) ==
        date + ":2: column 'timestamp': '2017-02-30 00:00:00' is not a date-time (YYYY-MM-DD HH:MM:SS)");
  const std::string gpus = scratch_file("p2.csv", head + "2017-02-03 00:00:00,10.0,1,10.0,a\n2017-02-03 00:00:00,10.0,two,10.0,a\n");
  CHECK(error_of([&] { read_trace(gpus, o); }) == gpus + ":3: column 'num_gpus': 'two' is not a whole number");
  const std::string dur = scratch_file("p3.csv", head + "2017-02-03 00:00:00,-1,1,10.0,a\n");
  CHECK(error_of([&] { read_trace(dur, o); }) == dur + ":2: column 'duration': '-1' must be greater than 0");
  o.skip_bad_rows = true;
  CHECK(read_trace(gpus, o).bad_rows == 1);
}

TEST_CASE("philly reference set: VC 11cb48 from 2017-10-01 to 2017-12-01 is the 11,897 jobs of the peer simulators") {
  trace_options o;
  o.format = "philly";
  o.vc = "11cb48";
  o.from = "2017-10-01";
  o.to = "2017-12-01";
  const trace_load t = read_trace(philly_path(), o);
  REQUIRE(t.jobs.size() == 11897);
  CHECK(t.bad_rows == 0);
  CHECK(t.rows_read == 82247);
  // Time 0 is `from`: the first job came 115 s after midnight, the last at 2017-11-30 23:52:11.
  CHECK(t.jobs.front().submit == sim_time::from_us(115'000'000));
  CHECK(t.jobs.back().submit == sim_time::from_us(5'269'931'000'000));
  long gpus = 0;
  double duration = 0;
  std::map<std::tuple<int64_t, double, int>, int> copies;
  for (size_t i = 0; i < t.jobs.size(); ++i) {
    const job_spec& j = t.jobs[i];
    CHECK(j.index == i);
    gpus += j.gpus;
    duration += j.duration_s;
    ++copies[{j.submit.us, j.duration_s, j.gpus}];
    if (i > 0 && t.jobs[i - 1].submit == j.submit) {  // ties keep file (line) order
      CHECK(std::stol(t.jobs[i - 1].name.substr(7)) < std::stol(j.name.substr(7)));
    }
  }
  CHECK(gpus == 13427);
  CHECK(duration == 34140648.0);
  int duplicates = 0;
  for (const auto& [key, n] : copies) duplicates += n - 1;
  CHECK(duplicates == 13);  // exact duplicate rows in this slice, all kept
  // Lines 3280 and 3290 are the same job record, submitted 2017-10-06 19:44:08.
  CHECK(by_name(t, "philly-3280").submit == sim_time::from_us(503'048'000'000));
  CHECK(by_name(t, "philly-3290").submit == sim_time::from_us(503'048'000'000));
}

TEST_CASE("philly whole file: 82,247 jobs with the 65 duplicate rows kept, time 0 = first submit") {
  trace_options o;
  o.format = "philly";
  const trace_load t = read_trace(philly_path(), o);
  REQUIRE(t.jobs.size() == 82247);
  CHECK(t.jobs.front().name == "philly-31568");  // 2017-09-04 10:30:41
  CHECK(t.jobs.front().submit == sim_time{});
  int64_t first = 0, last = 0;
  REQUIRE(parse_calendar_time("2017-09-04 10:30:41", first));
  REQUIRE(parse_calendar_time("2017-12-22 08:02:11", last));
  CHECK(t.jobs.back().submit == sim_time::from_us((last - first) * 1'000'000));
  std::map<std::tuple<int64_t, double, int>, int> copies;
  for (const auto& j : t.jobs) ++copies[{j.submit.us, j.duration_s, j.gpus}];
  CHECK(t.jobs.size() - copies.size() == 65);  // the 65 exact duplicate rows, all kept
}

TEST_CASE("canonical trace: an empty estimate_s is a job without an estimate, and tenant names its tenant") {
  auto path = scratch_file("estimates.csv",
                           "job_id,submit_s,gpus,duration_s,estimate_s,tenant\n"
                           "a,0,1,100,,team1\n"
                           "b,1,2,200,150,team2\n"
                           "c,2,1,300,,\n");
  const trace_load t = read_trace(path, {});
  REQUIRE(t.jobs.size() == 3);
  CHECK_FALSE(by_name(t, "a").estimated);
  CHECK(by_name(t, "a").tenant == "team1");
  CHECK(by_name(t, "b").estimated);
  CHECK(by_name(t, "b").estimate_s == 150);
  CHECK(by_name(t, "b").tenant == "team2");
  CHECK_FALSE(by_name(t, "c").estimated);
  CHECK(by_name(t, "c").tenant.empty());
  // Without the column every job has its duration as estimate.
  CHECK(read_trace(data("canonical_full.csv"), {}).jobs[0].estimated);
  auto bad = scratch_file("bad_estimate.csv", "job_id,submit_s,gpus,duration_s,estimate_s\na,0,1,100,soon\n");
  CHECK(error_of([&] { read_trace(bad, {}); }).find(":2: column 'estimate_s': 'soon' is not a number") !=
        std::string::npos);
}

TEST_CASE("canonical trace: the optional priority column gives a job's class, empty or absent 0") {
  auto path = scratch_file("classes.csv",
                           "job_id,submit_s,gpus,duration_s,priority\n"
                           "a,0,1,100,2\n"
                           "b,1,2,200,\n"
                           "c,2,1,300,-1\n");
  const trace_load t = read_trace(path, {});
  CHECK(by_name(t, "a").priority == 2);
  CHECK(by_name(t, "b").priority == 0);
  CHECK(by_name(t, "c").priority == -1);
  CHECK(read_trace(data("canonical_full.csv"), {}).jobs[0].priority == 0);
  auto word = scratch_file("bad_class.csv", "job_id,submit_s,gpus,duration_s,priority\na,0,1,100,high\n");
  CHECK(error_of([&] { read_trace(word, {}); }) == word + ":2: column 'priority': 'high' is not a whole number");
  auto big = scratch_file("big_class.csv", "job_id,submit_s,gpus,duration_s,priority\na,0,1,100,5000000\n");
  CHECK(error_of([&] { read_trace(big, {}); }).find(":2: column 'priority': '5000000' is out of range") !=
        std::string::npos);
}

TEST_CASE("philly format: a job's virtual cluster is its tenant") {
  trace_options all;
  all.format = "philly";
  const trace_load t = read_trace(data("philly_small.csv"), all);
  CHECK(by_name(t, "philly-2").tenant == "vcA");
  CHECK(by_name(t, "philly-3").tenant == "vcB");
}
