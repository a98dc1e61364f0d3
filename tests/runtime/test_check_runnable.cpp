#include <doctest/doctest.h>

#include "runtime/sim/driver.hpp"

using namespace aryl;

namespace {

job_spec wide_job() {
  job_spec j;
  j.name = "wide";
  j.gpus = 16;
  j.elastic = true;
  j.min_workers = 16;
  j.max_workers = 16;
  j.duration_s = 100;
  return j;
}

std::string name_of(const job_spec& j) { return "job " + j.name; }

} // namespace

TEST_CASE("a job's GPUs of one type add up across the training and inference pools only where it may use loaned servers") {
  config c;
  c.training = {1, 8, "V100", {}};
  c.inference = {1, 8, "V100", {}};
  c.policy = "aryl";
  CHECK_NOTHROW(check_runnable(c, {wide_job()}, name_of));
  c.policy = "elastic-only";  // no loaning: the training pool alone
  CHECK_THROWS_WITH(check_runnable(c, {wide_job()}, name_of), "job wide needs 16 GPUs; the cluster it may use has 8");
}

TEST_CASE("pools of different GPU types do not add up for a job, and the label names it only in the error") {
  config c;
  c.training = {1, 8, "V100", {}};
  c.inference = {1, 8, "T4", {}};
  c.policy = "aryl";
  int labelled = 0;
  auto counted = [&](const job_spec& j) {
    ++labelled;
    return name_of(j);
  };
  auto small = wide_job();
  small.gpus = small.min_workers = small.max_workers = 8;
  CHECK_NOTHROW(check_runnable(c, {small, small}, counted));
  CHECK(labelled == 0);
  CHECK_THROWS_WITH(check_runnable(c, {wide_job()}, counted), "job wide needs 16 GPUs; the cluster it may use has 8");
  CHECK(labelled == 1);
  auto typed = wide_job();
  typed.gpu_type = "T4";
  CHECK_THROWS_WITH(check_runnable(c, {typed}, name_of), "job wide needs 16 GPUs of type T4; the cluster it may use has 8");
}
