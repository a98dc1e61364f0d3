#include "runtime/inputs/synthetic_workload.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <string>

#include "solvers/input_error.hpp"

namespace aryl {
namespace {

// Constants derived from the Philly trace (philly.csv, 82,247 jobs); scripts/synthetic_constants.py
// prints them (docs/workload.md, "Constants").

/// GPUs per job and how many Philly jobs asked for that many.
struct size_weight {
  int gpus;
  double jobs;
};
constexpr std::array<size_weight, 10> philly_sizes{{{1, 76627}, {2, 1818}, {4, 1870}, {8, 1643}, {12, 7},
                                                    {16, 199}, {24, 7}, {32, 67}, {64, 6}, {128, 3}}};

/// Probability levels of the duration quantile tables.
constexpr std::array<double, 18> quantile_levels{0,   .01, .05, .1, .2,  .3,   .4,   .5,   .6,
                                                 .7,  .8,  .9,  .95, .98, .99, .995, .999, 1};

/// Duration quantiles in seconds (linear-interpolated order statistics) per size class:
/// 1 GPU, 2 GPUs, 4 GPUs, 8 GPUs, 12 or more GPUs.
constexpr std::array<std::array<double, 18>, 5> duration_quantiles{{
    {1.0, 30.0, 52.0, 62.0, 76.0, 215.0, 600.0, 1117.0, 1728.0, 2464.2, 3754.0, 8512.0, 19137.0, 68251.7,
     135399.3, 266914.1, 865708.7, 3256045.0},
    {2.0, 5.0, 9.0, 11.0, 15.0, 17.0, 19.0, 21.0, 25.0, 33.0, 149.2, 72740.2, 197062.2, 343861.7, 523316.1,
     808063.9, 1474215.4, 2582803.0},
    {3.0, 35.7, 75.0, 137.8, 404.8, 1695.7, 7467.8, 17409.5, 36288.2, 78660.0, 106283.8, 184435.3, 273968.2,
     533377.7, 907375.5, 1205989.5, 2446300.8, 2750674.0},
    {1.0, 33.4, 125.0, 216.2, 784.6, 4011.4, 12382.2, 23683.0, 65014.0, 140721.4, 203050.0, 351981.6,
     525618.2, 795160.9, 1060498.2, 2000448.1, 2656479.2, 4628226.0},
    {1.0, 3.8, 35.4, 72.2, 345.0, 889.6, 3166.6, 21137.0, 53749.8, 73310.8, 158991.4, 247972.0, 443240.4,
     613624.1, 922628.7, 1274180.8, 1612502.1, 1710643.0},
}};

/// Philly submissions per hour of day (00h..23h, trace clock), all 109 days.
constexpr std::array<double, 24> hourly_submits{4367, 3374, 3835, 3780, 2400, 3950, 5732, 7159,
                                                3802, 3447, 3510, 2979, 2567, 2415, 2185, 2224,
                                                3021, 2289, 2744, 2496, 3483, 3142, 3885, 3461};

/// Uniform in [0, 1) from the top 53 bits.
double uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

size_t duration_class(int gpus) {
  switch (gpus) {
  case 1: return 0;
  case 2: return 1;
  case 4: return 2;
  case 8: return 3;
  default: return 4;
  }
}

/// Inverse CDF of the quantile table, interpolating log(duration) linearly between levels.
double sample_duration(const std::array<double, 18>& q, double u) {
  size_t i = 1;
  while (i + 1 < quantile_levels.size() && u >= quantile_levels[i]) ++i;
  const double lo = quantile_levels[i - 1], hi = quantile_levels[i];
  const double f = std::clamp((u - lo) / (hi - lo), 0.0, 1.0);
  return std::exp(std::log(q[i - 1]) + f * (std::log(q[i]) - std::log(q[i - 1])));
}

void check(bool ok, const std::string& message) {
  if (!ok) throw input_error("synthetic workload: " + message);
}

} // namespace

std::vector<job_spec> generate_synthetic(const synthetic_options& o) {
  check(o.jobs >= 0, "jobs " + std::to_string(o.jobs) + " must not be negative");
  check(std::isfinite(o.days) && o.days > 0, "days " + std::to_string(o.days) + " must be greater than 0");
  check(o.cluster_gpus >= 1, "cluster_gpus " + std::to_string(o.cluster_gpus) + " must be at least 1");
  check(std::isfinite(o.target_load), "target_load must be a finite number");
  check(std::isfinite(o.max_duration_s) && o.max_duration_s >= 1,
        "max_duration_s " + std::to_string(o.max_duration_s) + " must be at least 1");

  std::mt19937_64 rng(o.seed);
  const int largest = std::max(1, o.cluster_gpus / 2);
  std::vector<size_weight> sizes;
  double total_weight = 0;
  for (const auto& s : philly_sizes) {
    if (s.gpus > largest) continue;
    sizes.push_back(s);
    total_weight += s.jobs;
  }
  const double cap = std::floor(o.max_duration_s);

  std::vector<job_spec> jobs(static_cast<size_t>(o.jobs));
  double work = 0;  // GPU-seconds
  for (auto& job : jobs) {
    double pick = uniform(rng) * total_weight;
    job.gpus = sizes.back().gpus;
    for (const auto& s : sizes) {
      if (pick < s.jobs) {
        job.gpus = s.gpus;
        break;
      }
      pick -= s.jobs;
    }
    const double d = sample_duration(duration_quantiles[duration_class(job.gpus)], uniform(rng));
    job.duration_s = std::clamp(std::round(d), 1.0, cap);
    job.min_workers = job.max_workers = job.gpus;
    work += job.gpus * job.duration_s;
  }

  const double window = o.target_load > 0 ? work / (o.cluster_gpus * o.target_load) : o.days * 86400;
  // Hour buckets over [0, window), weighted by the hour-of-day profile; arrivals are drawn from
  // the piecewise-constant density by inverting the cumulative weight.
  std::vector<double> cumulative;
  for (double start = 0; start < window; start += 3600) {
    const double length = std::min(3600.0, window - start);
    const auto hour = static_cast<size_t>(std::fmod(start / 3600, 24.0));
    cumulative.push_back((cumulative.empty() ? 0 : cumulative.back()) + length * hourly_submits[hour]);
  }
  std::vector<double> submit(jobs.size());
  for (auto& t : submit) {
    const double x = uniform(rng) * cumulative.back();
    const size_t k = static_cast<size_t>(std::upper_bound(cumulative.begin(), cumulative.end(), x) - cumulative.begin());
    const size_t bucket = std::min(k, cumulative.size() - 1);
    const double before = bucket == 0 ? 0 : cumulative[bucket - 1];
    const double rate = hourly_submits[bucket % 24];
    t = std::min(window, bucket * 3600.0 + (x - before) / rate);
  }
  std::sort(submit.begin(), submit.end());
  for (size_t i = 0; i < jobs.size(); ++i) {
    jobs[i].index = static_cast<uint32_t>(i);
    jobs[i].name = "syn-" + std::to_string(i);
    jobs[i].submit = sim_time::from_us(static_cast<int64_t>(std::floor(submit[i])) * 1'000'000);
  }
  return jobs;
}

double offered_load(const std::vector<job_spec>& jobs, int cluster_gpus) {
  if (jobs.size() < 2 || cluster_gpus < 1) return 0;
  double work = 0;
  sim_time first = jobs.front().submit, last = jobs.front().submit;
  for (const auto& j : jobs) {
    work += j.gpus * j.duration_s;
    first = std::min(first, j.submit);
    last = std::max(last, j.submit);
  }
  const double gaps = static_cast<double>(jobs.size() - 1);
  const double span = (last - first).seconds() * (gaps + 1) / gaps;
  return span > 0 ? work / (cluster_gpus * span) : 0;
}

} // namespace aryl
