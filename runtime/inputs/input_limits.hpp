#pragma once
/// The ranges every numeric input is checked against at the edge (traces, demand files,
/// configs, the command line), before any narrowing. They keep each value within what the
/// clock (int64 microseconds, converted to nanoseconds), the solvers and `int` hold;
/// docs/config.md and docs/workload.md state them.
#include <cstddef>
#include <cstdint>

namespace aryl {

/// Any time or duration read from an input: 1e9 s, about 31.7 years.
inline constexpr double max_input_seconds = 1e9;
/// GPUs a job may ask for (gpus, min_workers, max_workers).
inline constexpr int64_t max_job_gpus = 1'000'000;
/// A job's class lies within +-this (solvers/priorities.hpp).
inline constexpr int64_t max_priority = 1'000'000;
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
/// CSV inputs (traces, demand files): a header of more columns than any format names many
/// times over, a line no row needs, a file far beyond the largest trace (Philly: 10 MB).
inline constexpr size_t max_csv_columns = 1000;
inline constexpr size_t max_input_line_bytes = size_t{1} << 20;
inline constexpr uint64_t max_input_file_bytes = uint64_t{1} << 30;
/// Small files an operator names, read whole (runtime/inputs/small_file.hpp): a client config
/// or a job file of a few lines, a TLS certificate, key or CA bundle (Debian's bundle of every
/// public CA is about 200 KB).
inline constexpr uint64_t max_client_config_bytes = uint64_t{1} << 20;
inline constexpr uint64_t max_job_file_bytes = uint64_t{1} << 20;
inline constexpr uint64_t max_tls_file_bytes = uint64_t{1} << 20;
/// YAML inputs (config, fault plans, job files): nesting and values after aliases expand.
inline constexpr int max_yaml_depth = 64;
inline constexpr uint64_t max_yaml_nodes = 1'000'000;

} // namespace aryl
