#!/usr/bin/env bash
# The paper's experiment on public traces: regenerates docs/results.md and docs/plots/*.png.
# Setup (docs/results.md says why): Philly, all virtual clusters pooled, the busiest 15 days
# (2017-10-14 .. 2017-10-29, 23,570 jobs) on 64 x 8 V100 training servers; 64 x 8 T4
# inference servers following ServeGen m-small demand. Pass another trace window, training
# size or inference shape through the environment to check that the results generalise:
#   FROM=2017-11-01 TO=2017-11-16 INFERENCE=../shared/traces/servegen/derived/language_m-mid_total_rate.csv scripts/experiments.sh
# or another trace in the canonical job CSV (FORMAT=canonical: FROM and TO are not used):
#   TRACE=jobs.csv FORMAT=canonical TRAIN=32 scripts/experiments.sh
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/aryl ] || scripts/setup.sh

TRACE=${TRACE:-../shared/traces/philly-sia/philly.csv}
FORMAT=${FORMAT:-philly}
FROM=${FROM:-2017-10-14}
TO=${TO:-2017-10-29}
TRAIN=${TRAIN:-64}
INFER=${INFER:-64}
INFERENCE=${INFERENCE:-../shared/traces/servegen/derived/language_m-small_total_rate.csv}
OUT=${OUT:-docs}
work=${WORK:-$(mktemp -d)}
mkdir -p "$OUT/plots"

run() {  # name policy [--set k=v ...]
  local name=$1 policy=$2
  shift 2
  local window=()
  [ "$FORMAT" = philly ] && window=(--set trace.from="$FROM" --set trace.to="$TO")
  build/aryl simulate --trace "$TRACE" --trace-format "$FORMAT" --policy "$policy" --placement consolidated \
    --servers "$TRAIN" --gpus-per-server 8 --out "$work/$name" --quiet --check-invariants "${window[@]}" \
    --set cluster.inference.servers="$INFER" --set cluster.inference.gpu_type=T4 \
    --set inference.format=servegen --set inference.trace="$INFERENCE" "$@" > /dev/null
  echo "  $name done" >&2
}

echo "main table" >&2
for p in baseline loan-only elastic-only aryl fifo srtf las; do run "main-$p" "$p"; done
echo "misprediction sweep" >&2
for f in 0 0.2 0.4 0.6; do
  for p in fifo baseline aryl; do run "mis-$f-$p" "$p" --set jobs.mispredict_fraction="$f" --set jobs.mispredict_error=0.25; done
done
echo "elastic fraction sweep" >&2
for e in 0.25 0.5 0.75 1; do run "ela-$e-aryl" aryl --set jobs.elastic_fraction="$e"; done

echo "robustness" >&2
# label|extra settings: other windows, inference shapes and cluster sizes than the main setup.
variants=(
  "window 2017-11-01..11-16|--set trace.from=2017-11-01 --set trace.to=2017-11-16"
  "window 2017-09-15..09-30|--set trace.from=2017-09-15 --set trace.to=2017-09-30"
  "inference ServeGen m-mid|--set inference.trace=../shared/traces/servegen/derived/language_m-mid_total_rate.csv"
  "inference ServeGen m-large|--set inference.trace=../shared/traces/servegen/derived/language_m-large_total_rate.csv"
  "inference synthetic daily cycle|--set inference.trace="
  "training 48 servers|--set cluster.training.servers=48"
  "training 80 servers|--set cluster.training.servers=80"
  "inference 32 servers|--set cluster.inference.servers=32"
  "window 2017-11-01..11-16, VC 6214e9 alone on 6 + 6 servers|--set trace.vc=6214e9 --set trace.from=2017-11-01 --set trace.to=2017-11-16 --set cluster.training.servers=6 --set cluster.inference.servers=6"
  "scaling eff(w) = w^-0.15 (profiles' median)|--set model.eff_exponent=-0.15"
  "scaling eff(w) = w^-0.3|--set model.eff_exponent=-0.3"
  "T4 speed 0.41 (profiles' median)|--set gpu_speed.T4=0.41"
)
: > "$work/variants.txt"
for i in "${!variants[@]}"; do
  label=${variants[$i]%%|*}
  [ "$FORMAT" != philly ] && [[ $label == window* ]] && continue
  read -r -a extra <<< "${variants[$i]#*|}"
  echo "$i|$label" >> "$work/variants.txt"
  for p in fifo baseline aryl; do run "rob-$i-$p" "$p" "${extra[@]}"; done
done

echo "ablations" >&2
# label|settings of aryl's design choices, on the main setup and on one VC alone.
ablations=(
  "defaults|"
  "free_gpus_first=false|--set scheduler.free_gpus_first=false"
  "migrate_onto_extras=true|--set scheduler.migrate_onto_extras=true"
  "migrate=false|--set scheduler.migrate=false"
  "inelastic_on_loaned=true|--set scheduler.inelastic_on_loaned=true"
  "short_job_s=3600|--set scheduler.short_job_s=3600"
)
small=(--set cluster.training.servers=6 --set cluster.inference.servers=6)
[ "$FORMAT" = philly ] && small+=(--set trace.vc=6214e9 --set trace.from=2017-11-01 --set trace.to=2017-11-16)
: > "$work/ablations.txt"
for i in "${!ablations[@]}"; do
  echo "$i|${ablations[$i]%%|*}" >> "$work/ablations.txt"
  read -r -a extra <<< "${ablations[$i]#*|}"
  run "abl-$i-main" aryl "${extra[@]}"
  run "abl-$i-small" aryl "${small[@]}" "${extra[@]}"
done
for p in baseline elastic-only; do run "abl-$p-small" "$p" "${small[@]}"; done

python3 scripts/results_table.py "$work" "$OUT/results.md" "$TRACE" "$FROM" "$TO" "$TRAIN" "$INFER" "$INFERENCE" "$FORMAT"

# Plots from jobs.csv and timeline.csv.
for p in baseline loan-only elastic-only aryl fifo srtf las; do
  python3 - "$work/main-$p/jobs.csv" > "$work/cdf-$p.dat" <<'PY'
import csv, sys
v = sorted(float(r["jct_s"]) / 3600 for r in csv.DictReader(open(sys.argv[1])))
step = max(1, len(v) // 2000)
for i in range(0, len(v), step): print(v[i], (i + 1) / len(v))
print(v[-1], 1.0)
PY
done
gnuplot <<GP
set terminal pngcairo size 900,560
set output "$OUT/plots/jct_cdf.png"
set title "JCT CDF (Philly $FROM..$TO, $TRAIN x 8 V100 + $INFER x 8 T4 loanable)"
set xlabel "job completion time (hours, log scale)"; set ylabel "fraction of jobs"; set logscale x
set key bottom right; set grid
plot for [p in "baseline loan-only elastic-only aryl fifo srtf las"] "$work/cdf-".p.".dat" using 1:2 with lines lw 2 title p
GP
for p in baseline aryl; do
  awk -F, 'NR>1 {print $1/86400, $9, ($2+$4)/$3, $5, ($2+$4+$11)/($3+$8)}' "$work/main-$p/timeline.csv" > "$work/tl-$p.dat"
done
gnuplot <<GP
set terminal pngcairo size 900,900
set output "$OUT/plots/timeline.png"
set multiplot layout 3,1 title "baseline (SJF) vs aryl over time"
set grid; set key top right; set xlabel "day"
set ylabel "queued jobs"
plot "$work/tl-baseline.dat" using 1:2 with steps title "baseline", "$work/tl-aryl.dat" using 1:2 with steps title "aryl"
set ylabel "GPU usage, all clusters"; set yrange [0:1.05]
plot "$work/tl-baseline.dat" using 1:5 with steps title "baseline", "$work/tl-aryl.dat" using 1:5 with steps title "aryl"
set autoscale y; set ylabel "loaned inference servers"
plot "$work/tl-aryl.dat" using 1:4 with steps title "aryl"
unset multiplot
GP
echo "wrote $OUT/results.md and $OUT/plots/" >&2
