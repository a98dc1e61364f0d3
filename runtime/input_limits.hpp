#pragma once
/// The ranges every numeric input is checked against at the edge (traces, demand files,
/// configs, the command line), before any narrowing. They keep each value within what the
/// clock (int64 microseconds, converted to nanoseconds), the solvers and `int` hold;
/// docs/config.md and docs/workload.md state them.
#include <cstdint>

namespace aryl {

/// Any time or duration read from an input: 1e9 s, about 31.7 years.
inline constexpr double max_input_seconds = 1e9;
/// GPUs a job may ask for (gpus, min_workers, max_workers).
inline constexpr int64_t max_job_gpus = 1'000'000;
inline constexpr int64_t max_servers = 100'000;
inline constexpr int64_t max_gpus_per_server = 64;
/// Relative GPU speeds: below 1e-3 a one-hour job would outlast the simulation horizon.
inline constexpr double min_gpu_speed = 1e-3;
inline constexpr double max_gpu_speed = 1e3;
/// Restart and scaling overheads: about 11.6 days.
inline constexpr double max_overhead_s = 1e6;
/// Inference interval and reclaim grace period: one year.
inline constexpr int64_t max_period_s = 365LL * 86400;
/// Wall-clock speedup; beyond what a machine can follow the run warns (driver).
inline constexpr double max_speedup = 1e6;
inline constexpr double max_gpu_seconds = 1e15;
inline constexpr int64_t max_synthetic_jobs = 10'000'000;

} // namespace aryl
