#!/usr/bin/env bash
# What a scale period costs in decisions: aryl on docs/results.md's setup (Philly pooled, 64 x 8
# V100 + 64 x 8 T4 on ServeGen m-small demand) over two-week windows, with
# scheduler.scale_period_s = 0 (every round full) and each period in PERIODS; runs through
# scripts/sweep.py (one process per core) and prints one row per window and period.
#   scripts/bench_scale_period.sh                  # PERIODS="300"
#   PERIODS="60 300 900" OUT=/tmp/sp scripts/bench_scale_period.sh
# Environment: PERIODS, WINDOWS (FROM..TO ...), OUT (default: a temporary folder), ARYL, JOBS.
set -euo pipefail
cd "$(dirname "$0")/.."
ARYL=${ARYL:-build/aryl}
[ -x "$ARYL" ] || { echo "bench_scale_period: $ARYL is not built (scripts/setup.sh, or set ARYL)" >&2; exit 1; }
PERIODS=${PERIODS:-300}
WINDOWS=${WINDOWS:-2017-09-15..2017-09-30 2017-10-01..2017-10-15 2017-10-14..2017-10-29 2017-10-29..2017-11-12 2017-11-01..2017-11-16 2017-11-15..2017-11-30 2017-12-01..2017-12-15}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
runs="$OUT/runs.tsv"
: > "$runs"
for w in $WINDOWS; do
  for p in 0 $PERIODS; do
    printf '%s\t%s\n' "$w-p$p" "--trace ../shared/traces/philly-sia/philly.csv --trace-format philly --policy aryl \
--placement consolidated --servers 64 --gpus-per-server 8 --quiet --set cluster.inference.servers=64 \
--set cluster.inference.gpu_type=T4 --set inference.format=servegen \
--set inference.trace=../shared/traces/servegen/derived/language_m-small_total_rate.csv \
--set trace.from=${w%%..*} --set trace.to=${w##*..} --set scheduler.scale_period_s=$p" >> "$runs"
  done
done
/usr/bin/python3 scripts/sweep.py --aryl "$ARYL" --out "$OUT" --runs "$runs" ${JOBS:+--jobs "$JOBS"} > /dev/null
/usr/bin/python3 - "$OUT/results.csv" <<'PY'
import csv, sys
rows = {r["name"]: r for r in csv.DictReader(open(sys.argv[1]))}
print("| window | period s | mean queue s | mean JCT s | p95 JCT s | GPU usage | mean slowdown | rescales | vs period 0: queue, JCT |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
for name, r in rows.items():
    window, _, p = name.rpartition("-p")
    base = rows[f"{window}-p0"]
    f = lambda k, rr=r: float(rr[k])
    rel = "" if p == "0" else (f"{f('mean_queue_s') / max(f('mean_queue_s', base), 1e-9):.2f}x, "
                               f"{f('mean_jct_s') / f('mean_jct_s', base):.3f}x")
    print(f"| {window} | {p} | {f('mean_queue_s'):.0f} | {f('mean_jct_s'):.0f} | {f('p95_jct_s'):.0f} | "
          f"{f('gpu_usage'):.3f} | {f('mean_slowdown'):.2f} | {int(f('scale_ins') + f('scale_outs'))} | {rel} |")
PY
