// run_writer: the text of events.log, timeline.csv and jobs.csv.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "solvers/input_error.hpp"
#include "runtime/outputs/outputs.hpp"
#include "runtime/outputs/percentile.hpp"
#include "tests/runtime/cli_support.hpp"

using namespace aryl;
using aryl::test::read_file;

TEST_CASE("outputs: times print as the seconds with six decimals, also before zero, past a day and for a job never started") {
  auto dir = (std::filesystem::temp_directory_path() / ("aryl-test-outputs-" + std::to_string(::getpid()))).string();
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
    j.outcome = job_outcome::cancelled;
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

TEST_CASE("outputs: work efficiency sums completed jobs only, and a pool with no work reads 0") {
  // a (done): held 600 GPU-s on training servers for work that needs 400 there; its weighted
  // GPU-seconds 500. b (cancelled): left out of every sum.
  auto dir = (std::filesystem::temp_directory_path() / ("aryl-test-outputs-efficiency-" + std::to_string(::getpid()))).string();
  std::filesystem::remove_all(dir);
  run_summary s;
  {
    run_writer w(dir);
    job_record a;
    a.index = 0;
    a.name = "a";
    a.gpus = 4;
    a.duration_s = 100;
    a.end_us = 200000000;
    a.gpu_seconds = a.training_gpu_s = 600;
    a.training_speed_gpu_s = 500;
    a.needed_gpu_s = a.training_needed_gpu_s = 400;
    w.job(a);
    job_record b = a;
    b.index = 1;
    b.name = "b";
    b.outcome = job_outcome::cancelled;
    b.gpu_seconds = b.loaned_gpu_s = b.loaned_speed_gpu_s = 1e6;
    b.training_gpu_s = b.training_speed_gpu_s = 0;
    b.needed_gpu_s = b.loaned_needed_gpu_s = 1;
    w.job(b);
    s = w.finish(s);
    w.commit(s);
  }
  CHECK(s.work_efficiency == doctest::Approx(1.5));
  CHECK(s.work_efficiency_speed_weighted == doctest::Approx(1.25));
  CHECK(s.work_efficiency_training == doctest::Approx(1.5));
  CHECK(s.work_efficiency_loaned == 0);
  CHECK(s.needed_gpu_hours == doctest::Approx(400.0 / 3600));
  auto jobs = read_file(dir + "/jobs.csv");
  CHECK(jobs.substr(0, jobs.find('\n')).ends_with(",outcome,needed_gpu_s,work_efficiency,tenant,estimated,exits,attempts"));
  CHECK(jobs.find(",done,400.000,1.500000,,1,,1\n") != std::string::npos);
  auto summary = read_file(dir + "/summary.json");
  CHECK(summary.find("\"work_efficiency\": 1.5,") != std::string::npos);
  CHECK(summary.find("\"work_efficiency_loaned\": 0.0,") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("outputs: summary.json's preemptions, scale-ins and scale-outs are jobs.csv's columns summed over every job, "
          "cancelled and failed ones too") {
  // a (done) was preempted twice, b (cancelled when serve was stopped) three times, c (failed) once.
  auto dir = (std::filesystem::temp_directory_path() / ("aryl-test-outputs-preemptions-" + std::to_string(::getpid()))).string();
  std::filesystem::remove_all(dir);
  run_summary s;
  {
    run_writer w(dir);
    int index = 0;
    for (auto [outcome, preemptions] : {std::pair{job_outcome::done, 2}, std::pair{job_outcome::cancelled, 3},
                                        std::pair{job_outcome::failed, 1}}) {
      job_record j;
      j.index = static_cast<uint32_t>(index);
      j.name = "j" + std::to_string(index++);
      j.gpus = 1;
      j.end_us = 1000000;
      j.outcome = outcome;
      j.preemptions = preemptions;
      j.scale_ins = preemptions;
      j.scale_outs = 1;
      w.job(j);
    }
    s = w.finish(s);
    w.commit(s);
  }
  // The preemptions column (12th) of jobs.csv, summed.
  uint64_t column = 0;
  std::istringstream rows(read_file(dir + "/jobs.csv"));
  std::string row;
  std::getline(rows, row);  // header
  while (std::getline(rows, row)) {
    std::istringstream fields(row);
    std::string f;
    for (int i = 0; i < 12; ++i) std::getline(fields, f, ',');
    column += std::stoull(f);
  }
  CHECK(column == 6);
  CHECK(s.preemptions == column);
  CHECK(s.scale_ins == 6);
  CHECK(s.scale_outs == 3);
  CHECK(read_file(dir + "/summary.json").find("\"preemptions\": 6,") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("outputs: percentiles interpolate linearly between the closest ranks, as numpy.percentile's default") {
  CHECK(percentile({}, 0.99) == 0);
  CHECK(percentile({7}, 0.95) == 7);
  // p99 of two reclaims is not the smaller one: numpy.percentile([10, 20], 99) = 19.9.
  CHECK(percentile({20, 10}, 0.99) == doctest::Approx(19.9));
  CHECK(percentile({1, 2, 3, 4}, 0.5) == doctest::Approx(2.5));
  CHECK(percentile({1, 2, 3, 4}, 1.0) == 4);
  CHECK(percentile({1, 2, 3, 4}, 0.0) == 1);

  // One job in eleven waited 353 s: the queue p95 (numpy: 176.5) is not 0.
  auto dir = (std::filesystem::temp_directory_path() / ("aryl-test-outputs-percentiles-" + std::to_string(::getpid()))).string();
  std::filesystem::remove_all(dir);
  run_summary s;
  {
    run_writer w(dir);
    for (uint32_t i = 0; i < 11; ++i) {
      job_record j;
      j.index = i;
      j.name = "j" + std::to_string(i);
      j.gpus = 1;
      j.queued_s = i == 3 ? 353 : 0;
      j.end_us = 1000000;
      w.job(j);
    }
    w.reclaim_done(10, 0);
    w.reclaim_done(20, 0);
    s = w.finish(s);
    w.commit(s);
  }
  CHECK(s.p95_queue_s == doctest::Approx(176.5));
  CHECK(s.p50_queue_s == 0);
  CHECK(s.reclaim_latency_p99_s == doctest::Approx(19.9));
  CHECK(s.reclaim_latency_p50_s == doctest::Approx(15));
  std::filesystem::remove_all(dir);
}

namespace {

cluster_snapshot busy_at(double s, int busy) {
  cluster_snapshot c;
  c.t_us = static_cast<int64_t>(s * 1e6);
  c.training_gpus = 8;
  c.training_busy_gpus = busy;
  c.running_jobs = busy > 0 ? 1 : 0;
  return c;
}

} // namespace

TEST_CASE("outputs: a run carried on after a kill keeps the lines written before it once, drops a cut-short one, "
          "and counts the usage of both parts") {
  auto dir = (std::filesystem::temp_directory_path() / ("aryl-test-outputs-carry-on-" + std::to_string(::getpid()))).string();
  std::filesystem::remove_all(dir);
  {
    // The killed process: flushed line by line, never committed.
    run_writer w(dir, true);
    w.event({0, "scheduler", "submit", "job-0", ""});
    w.event({1000000, "scheduler", "start", "job-0 workers=8", ""});
    w.snapshot(busy_at(0, 8));     // 8 of 8 GPUs busy for the first hour
    w.snapshot(busy_at(3600, 0));  // then none
  }
  {
    std::ofstream cut(dir + "/events.log.partial", std::ios::app);
    cut << "3700.000000 scheduler sta";  // the kill fell inside this line
  }
  run_summary s;
  {
    run_writer w(dir, true, true);
    w.event({7200000000, "scheduler", "restore", "job-0", ""});
    w.snapshot(busy_at(7200, 8));  // busy again from the second hour's end to the third's
    job_record j;
    j.index = 0;
    j.name = "a";
    j.gpus = 8;
    j.end_us = 10800000000;
    j.outcome = job_outcome::done;
    w.job(j);
    s = w.finish(run_summary{});
    w.commit(s);
  }
  CHECK(read_file(dir + "/events.log") ==
        "0.000000 scheduler submit job-0\n"
        "1.000000 scheduler start job-0 workers=8\n"
        "7200.000000 scheduler restore job-0\n");
  CHECK(s.events == 3);
  auto timeline = read_file(dir + "/timeline.csv");
  CHECK(timeline.rfind("t_s,", 0) == 0);
  CHECK(timeline.find("t_s,", 1) == std::string::npos);
  CHECK(timeline.find("\n0.000000,8,8,") != std::string::npos);
  CHECK(timeline.find("\n7200.000000,8,8,") != std::string::npos);
  CHECK(s.training_gpu_hours == doctest::Approx(16));  // 8 GPUs for 1 h, then 8 for 1 h
  CHECK(s.training_gpu_usage == doctest::Approx(16.0 / 24));
  std::filesystem::remove_all(dir);
}

TEST_CASE("outputs: a carried-on timeline row that does not parse is refused naming the file and line") {
  auto dir = (std::filesystem::temp_directory_path() / ("aryl-test-outputs-carry-on-bad-" + std::to_string(::getpid()))).string();
  std::filesystem::remove_all(dir);
  {
    run_writer w(dir, true);
    w.snapshot(busy_at(0, 8));
  }
  {
    std::ofstream bad(dir + "/timeline.csv.partial", std::ios::app);
    bad << "12.5,1,2\n";
  }
  std::string what;
  try {
    run_writer w(dir, true, true);
  } catch (const input_error& e) {
    what = e.what();
  }
  INFO(what);
  CHECK(what.find("timeline.csv.partial: line 3: not a timeline row") != std::string::npos);
  std::filesystem::remove_all(dir);
}
