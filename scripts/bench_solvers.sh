#!/usr/bin/env bash
# Builds and runs the solver benchmarks (tests/bench/bench_solvers.cpp) with repetitions and
# prints, per benchmark, the median over repetitions of the per-solve median (p50) and p99
# latency, against the budget in docs/performance.md ("Solvers").
# Usage: scripts/bench_solvers.sh [repetitions=10] [extra Google Benchmark flags...]
# Environment: BUILD_DIR (default build), RAW=1 also prints Google Benchmark's own table.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD_DIR:-build}"
reps="${1:-10}"
shift || true

if [ ! -f "$build/build.ninja" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
cmake --build "$build" -j2 --target bench_solvers
bin="$build/tests/bench/bench_solvers"

csv="$(mktemp)"
trap 'rm -f "$csv"' EXIT
"$bin" --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true \
  --benchmark_format=csv "$@" >"$csv" 2>/dev/null
[ "${RAW:-0}" = 1 ] && cat "$csv"

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)   repetitions: $reps"
awk -F, '
  function budget(name) {
    if (name ~ /^bm_baseline/) return -1                # reference for ratios, no budget
    if (name ~ /^bm_elastic_round/) return -2           # a whole round: measured, no budget
    if (name ~ /^bm_mckp\/(random|correlated)\//) return 0  # stress shapes: reported, no budget
    if (name ~ /^bm_mckp\/.*\/4096\/500$/) return 5000
    if (name ~ /^bm_mckp\/.*\/512\/100$/) return 200
    if (name ~ /^bm_reclaim_greedy/) return 1000
    if (name ~ /^bm_place_bfd/) return 2000
    return 0
  }
  NR == 1 { for (i = 1; i <= NF; ++i) { gsub(/"/, "", $i); col[$i] = i }; next }
  {
    name = $1; gsub(/"/, "", name)
    if (name !~ /_median$/) next
    sub(/_median$/, "", name)
    p50 = $col["p50_us"]; p99 = $col["p99_us"]; b = budget(name)
    verdict = b == -2 ? "(one elastic round; heap allocations per round: " $col["allocs"] ")" : \
              b < 0 ? "(baseline for ratios)" : b == 0 ? "(stress shape, no budget)" : (p99 <= b ? "ok" : "OVER")
    if (b <= 0) printf "%-32s p50 %9.1f us   p99 %9.1f us   %s\n", name, p50, p99, verdict
    else printf "%-32s p50 %9.1f us   p99 %9.1f us   budget(p99) %6d us  %s\n", name, p50, p99, b, verdict
  }' "$csv"
