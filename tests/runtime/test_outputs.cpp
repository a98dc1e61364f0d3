// run_writer: the text of events.log, timeline.csv and jobs.csv.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "runtime/outputs.hpp"
#include "tests/runtime/cli_support.hpp"

using namespace aryl;
using aryl::test::read_file;

TEST_CASE("outputs: times print as the seconds with six decimals, also before zero, past a day and for a job never started") {
  auto dir = (std::filesystem::temp_directory_path() / "aryl-test-outputs").string();
  std::filesystem::remove_all(dir);
  {
    run_writer w(dir);
    w.event({-1500000, "scheduler", "away", "for=1", ""});
    w.event({0, "scheduler", "submit", "job-0", "why"});
    w.event({123456789012, "scheduler", "finish", "job-0 workers=1", ""});
    cluster_snapshot c;
    c.t_us = 86400000001;
    c.training_gpus = 8;
    w.snapshot(c);
    job_record j;
    j.index = 0;
    j.name = "a";
    j.gpus = 1;
    j.submit_us = 5;
    j.first_start_us = -1;
    j.end_us = 2000000;
    j.queued_s = 0.25;
    j.outcome = "cancelled";
    w.job(j);
    run_summary s;
    w.commit(w.finish(s));
  }
  CHECK(read_file(dir + "/events.log") ==
        "-1.500000 scheduler away for=1\n"
        "0.000000 scheduler submit job-0 | why\n"
        "123456.789012 scheduler finish job-0 workers=1\n");
  auto timeline = read_file(dir + "/timeline.csv");
  CHECK(timeline.find("\n86400.000001,0,8,") != std::string::npos);
  auto jobs = read_file(dir + "/jobs.csv");
  CHECK(jobs.find("\n0,a,1,0,0.000005,-0.000001,2.000000,1.999995,0.250000,") != std::string::npos);
  std::filesystem::remove_all(dir);
}
