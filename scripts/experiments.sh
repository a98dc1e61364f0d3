#!/usr/bin/env bash
# The paper's experiment on public traces: regenerates docs/results.md and docs/plots/*.png.
# Setup (docs/results.md says why): Philly, all virtual clusters pooled, on 64 x 8 V100
# training servers and 64 x 8 T4 inference servers following ServeGen m-small demand.
# Windows: aryl's design choices were tuned on TUNING (2017-10-14 .. 10-29); the headline
# tables are also measured on the EVAL windows, which the tuning never saw. Sweeps and
# robustness variants run on the first evaluation window, the design-choice ablations on the
# tuning window (where they were chosen) and on the first evaluation window.
#   TUNING=2017-10-14..2017-10-29 EVAL="2017-11-01..2017-11-16 2017-09-15..2017-09-30" scripts/experiments.sh
# Other settings through the environment: SEEDS (the main runs again with seeds 2..SEEDS, default
# 8; 1: none), TRAIN, INFER (servers), INFERENCE and
# INFERENCE_FORMAT (demand trace, servegen or canonical),
# JOBS (runs at a time, default one per core), ARYL (binary), OUT (folder for results.md and plots/),
# WORK (folder for the runs; TABLES_ONLY=1 reuses its runs), or another trace in the canonical job CSV (one window, the
# whole trace; FORMAT=canonical):
#   TRACE=jobs.csv FORMAT=canonical TRAIN=32 scripts/experiments.sh
# The runs go through scripts/sweep.py --runs (docs/sweep.md): a failed run does not stop the
# others, and is named with its command and stderr before the script exits 1; each run's stdout
# and stderr are kept in its folder. LIST=1 prints every run's command and stops.
# Every parameter results.md prints is read back from the runs' config.json and summary.json.
set -euo pipefail
cd "$(dirname "$0")/.."
ARYL=${ARYL:-build/aryl}
[ -x "$ARYL" ] || scripts/setup.sh

TRACE=${TRACE:-../shared/traces/philly-sia/philly.csv}
FORMAT=${FORMAT:-philly}
TUNING=${TUNING:-2017-10-14..2017-10-29}
EVAL=${EVAL:-2017-11-01..2017-11-16 2017-09-15..2017-09-30}
TRAIN=${TRAIN:-64}
INFER=${INFER:-64}
INFERENCE=${INFERENCE:-../shared/traces/servegen/derived/language_m-small_total_rate.csv}
INFERENCE_FORMAT=${INFERENCE_FORMAT:-servegen}
EXTRA=${EXTRA:-}  # settings for every run (before each run's own), e.g. "--set jobs.scale_overhead_s=10"
JOBS=${JOBS:-}
OUT=${OUT:-docs}
work=${WORK:-$(mktemp -d)}
mkdir -p "$OUT/plots" "$work"

# Window w0 is the tuning window, w1.. the evaluation windows; a canonical trace has one
# window, the whole trace.
windows=()
if [ "$FORMAT" = philly ]; then
  read -r -a windows <<< "$TUNING $EVAL"
else
  windows=(all)
fi
: > "$work/windows.txt"
for i in "${!windows[@]}"; do echo "w$i|${windows[$i]}" >> "$work/windows.txt"; done
window_args() {  # w<i> -> --set trace.from=... --set trace.to=...
  local w=${windows[${1#w}]}
  [ "$w" = all ] || echo "--set trace.from=${w%%..*} --set trace.to=${w##*..}"
}
eval_w=w0
[ "${#windows[@]}" -gt 1 ] && eval_w=w1

# Words quoted for sweep.py's runs file (a POSIX shell's quoting), bare where that is safe.
quote() {
  local w q="'" out=()
  for w in "$@"; do
    if [[ $w =~ ^[A-Za-z0-9_./=:,+@%-]+$ ]]; then out+=("$w"); else out+=("'${w//$q/$q\\$q$q}'"); fi
  done
  echo "${out[*]}"
}

# One line per run in sweep.py's runs file, "name<TAB>simulate flags"; all of them run at the end.
: > "$work/runs.txt"
read -r -a every_run <<< "$EXTRA"  # EXTRA's words
queue() {  # "name policy [--set k=v ...]", words split on blanks
  local words
  read -r -a words <<< "$*"
  local name=${words[0]} policy=${words[1]}
  local flags=(--trace "$TRACE" --trace-format "$FORMAT" --policy "$policy" --placement consolidated
    --servers "$TRAIN" --gpus-per-server 8 --out "$work/$name" --quiet --check-invariants
    --set cluster.inference.servers="$INFER" --set cluster.inference.gpu_type=T4
    --set inference.format="$INFERENCE_FORMAT" --set inference.trace="$INFERENCE" "${every_run[@]}" "${words[@]:2}")
  printf '%s\t%s\n' "$name" "$(quote "${flags[@]}")" >> "$work/runs.txt"
}

# The main table's policies; `fifo-backfill` and `sjf-backfill` are fifo and baseline (SJF)
# with scheduler.backfill=true: aryl backfills, so SJF doing the same is the fair rival.
policies=(baseline sjf-backfill loan-only elastic-only aryl fifo fifo-backfill srtf las)
policy_args() {
  case $1 in
    fifo-backfill) echo "fifo --set scheduler.backfill=true" ;;
    sjf-backfill) echo "baseline --set scheduler.backfill=true" ;;
    *) echo "$1" ;;
  esac
}
printf '%s\n' "${policies[@]}" > "$work/policies.txt"

for i in "${!windows[@]}"; do
  for p in "${policies[@]}"; do queue "main-w$i-$p $(policy_args "$p") $(window_args "w$i")"; done
done

# The same main runs with seeds 2..SEEDS (seed 1 is main-*): the seed draws which jobs are
# elastic and the checkpoint times, and a window's p95 JCT is decided by a few long jobs, so a
# target's ratio is also reported over seeds. The policies the targets compare aryl with.
SEEDS=${SEEDS:-8}
[[ $SEEDS =~ ^[1-9][0-9]{0,2}$ ]] || { echo "experiments: SEEDS='$SEEDS' is not a whole number from 1 to 999" >&2; exit 1; }
seed_policies=(aryl baseline sjf-backfill fifo fifo-backfill srtf las)
echo "$SEEDS" > "$work/seeds.txt"
for i in "${!windows[@]}"; do
  for s in $(seq 2 "$SEEDS"); do
    for p in "${seed_policies[@]}"; do queue "seed-w$i-$s-$p $(policy_args "$p") $(window_args "w$i") --set seed=$s"; done
  done
done

# Sweeps on the first evaluation window.
ew=$(window_args "$eval_w")
echo "$eval_w" > "$work/sweep_window.txt"
for f in 0 0.2 0.4 0.6; do
  for p in fifo fifo-backfill baseline aryl; do
    queue "mis-$f-$p $(policy_args "$p") $ew --set jobs.mispredict_fraction=$f --set jobs.mispredict_error=0.25"
  done
done
# The misprediction targets hold in every evaluation window: 60% mispredicted on the others too.
for i in "${!windows[@]}"; do
  [ "$i" -gt 0 ] && [ "w$i" != "$eval_w" ] || continue
  for p in fifo-backfill baseline aryl; do
    queue "mis-w$i-$p $(policy_args "$p") $(window_args "w$i") --set jobs.mispredict_fraction=0.6 --set jobs.mispredict_error=0.25"
  done
done
for e in 0.25 0.5 0.75 1; do queue "ela-$e-aryl aryl $ew --set jobs.elastic_fraction=$e"; done

# Robustness: one setting changed from the first evaluation window's setup. label|settings
variants=(
  "inference ServeGen m-mid|--set inference.format=servegen --set inference.trace=../shared/traces/servegen/derived/language_m-mid_total_rate.csv"
  "inference ServeGen m-large|--set inference.format=servegen --set inference.trace=../shared/traces/servegen/derived/language_m-large_total_rate.csv"
  "inference synthetic daily cycle|--set inference.trace="
  "training 48 servers|--set cluster.training.servers=48"
  "training 80 servers|--set cluster.training.servers=80"
  "inference 32 servers|--set cluster.inference.servers=32"
  "VC 6214e9 alone on 6 + 6 servers|--set trace.vc=6214e9 --set cluster.training.servers=6 --set cluster.inference.servers=6"
  "scaling eff(w) = w^-0.15 (profiles' median)|--set model.eff_exponent=-0.15"
  "scaling eff(w) = w^-0.3|--set model.eff_exponent=-0.3"
  "T4 speed 0.41 (profiles' median)|--set gpu_speed.T4=0.41"
  "no cross-server cost (locality off)|--set model.cross_server_eff=1"
  "cross-server 0.94 (8-GPU servers' figure)|--set model.cross_server_eff=0.94"
)
: > "$work/variants.txt"
for i in "${!variants[@]}"; do
  label=${variants[$i]%%|*}
  [ "$FORMAT" != philly ] && [[ $label == VC* ]] && continue
  echo "$i|$label" >> "$work/variants.txt"
  for p in fifo baseline aryl; do queue "rob-$i-$p $p $ew ${variants[$i]#*|}"; done
done

# Design choices (aryl with one knob changed) on the tuning window, the first evaluation
# window and one VC alone. label|settings
ablations=(
  "defaults|"
  "free_gpus_first=true (a queued job takes free slower GPUs before extra workers' GPUs of its fastest type)|--set scheduler.free_gpus_first=true"
  "migrate=false|--set scheduler.migrate=false"
  "inelastic_on_loaned=true|--set scheduler.inelastic_on_loaned=true"
  "scale_horizon=end (extras valued to the job's end)|--set scheduler.scale_horizon=end"
  "rescale_margin_s=0|--set scheduler.rescale_margin_s=0"
  "rescale_cooldown_s=0|--set scheduler.rescale_cooldown_s=0"
  "min_extra_efficiency=0|--set scheduler.min_extra_efficiency=0"
  "preempt_ratio=0 (no preemption for queued jobs)|--set scheduler.preempt_ratio=0"
  "preempt_for_speed=false (a job that fits only on slower GPUs never preempts for its fastest type)|--set scheduler.preempt_for_speed=false"
  "max_preemptions=2 (the first bound)|--set scheduler.max_preemptions=2"
  "max_preemptions=6 (the bound before)|--set scheduler.max_preemptions=6"
  "base_room_to_grow=false|--set scheduler.base_room_to_grow=false"
  "move_with_size=false|--set scheduler.move_with_size=false"
  "consolidate=false|--set scheduler.consolidate=false"
  "backfill=false (a job that finds no room stops the queue, as in the SJF baseline)|--set scheduler.backfill=false"
  "all eight above (the earlier, myopic rule)|--set scheduler.scale_horizon=end --set scheduler.rescale_margin_s=0 --set scheduler.rescale_cooldown_s=0 --set scheduler.min_extra_efficiency=0 --set scheduler.preempt_ratio=0 --set scheduler.base_room_to_grow=false --set scheduler.move_with_size=false --set scheduler.consolidate=false"
  "scale_rounds=every (every round re-plans every size)|--set scheduler.scale_rounds=every"
  "scale_rounds=capacity (an elastic arrival is sized alone on free GPUs)|--set scheduler.scale_rounds=capacity"
  "reserve_after_s=43200 (a job queued 12 h goes first, with servers held for it; jobs ending before they free may use them)|--set scheduler.reserve_after_s=43200"
  "end_scale_period_s=0 (a job's end under a queue re-plans sizes at once)|--set scheduler.end_scale_period_s=0"
  "reserve_stretch=0 (no job goes first for having queued 5 times its predicted run)|--set scheduler.reserve_stretch=0"
  "long_job_s=0 (long elastic jobs may start on slower loaned GPUs)|--set scheduler.long_job_s=0"
  "elastic_floor=min (elastic jobs may start at their minimum and shrink to it: the paper's base)|--set scheduler.elastic_floor=min"
  "elastic_floor=min, long_job_s=0, free_gpus_first=true, max_preemptions=6 (the defaults before these four)|--set scheduler.elastic_floor=min --set scheduler.long_job_s=0 --set scheduler.free_gpus_first=true --set scheduler.max_preemptions=6"
)
small="--set cluster.training.servers=6 --set cluster.inference.servers=6"
[ "$FORMAT" = philly ] && small+=" --set trace.vc=6214e9 --set trace.from=2017-11-01 --set trace.to=2017-11-16"
: > "$work/ablations.txt"
for i in "${!ablations[@]}"; do
  echo "$i|${ablations[$i]%%|*}" >> "$work/ablations.txt"
  extra=${ablations[$i]#*|}
  if [ "$i" -gt 0 ]; then  # the defaults are main-w<i>-aryl
    queue "abl-$i-tune aryl $(window_args w0) $extra"
    [ "$eval_w" != w0 ] && queue "abl-$i-eval aryl $ew $extra"
  fi
  queue "abl-$i-small aryl $small $extra"
done
for p in baseline elastic-only; do queue "abl-$p-small $p $small"; done

# Many multi-GPU jobs: Philly's jobs of >= 4 GPUs (the pooled mix is 93% one-GPU jobs), two
# months on 48 + 48 servers (offered load about 0.95), where spanning servers and placement
# decide how fast jobs run.
if [ "$FORMAT" = philly ]; then
  awk -F, 'NR == 1 || $3 >= 4' "$TRACE" > "$work/philly_ge4.csv"
  multi="--set trace.file=$work/philly_ge4.csv --set trace.from=2017-10-01 --set trace.to=2017-12-01 --set cluster.training.servers=48 --set cluster.inference.servers=48"
  multi_runs=(
    "strict FIFO|fifo"
    "FIFO + backfill|fifo --set scheduler.backfill=true"
    "SJF (baseline)|baseline"
    "LAS|las"
    "aryl|aryl"
    "SJF (baseline), locality off|baseline --set model.cross_server_eff=1"
    "aryl, locality off|aryl --set model.cross_server_eff=1"
    "aryl, count placement|aryl --set placement=count"
  )
  : > "$work/multi.txt"
  for i in "${!multi_runs[@]}"; do
    echo "$i|${multi_runs[$i]%%|*}" >> "$work/multi.txt"
    queue "multi-$i ${multi_runs[$i]#*|} $multi"
  done
fi

# Faults on the first evaluation window: server crashes (seeded, each back after an hour on
# average; on inference servers too in one scenario), slow checkpoints (what loaning costs when
# reclaims are slow), inference surges and scheduler crashes, aryl against SJF. label|settings
faults=(
  "no faults|"
  "1 crash per server-day|--set faults.random.server_crash_per_day=1"
  "4 crashes per server-day|--set faults.random.server_crash_per_day=4"
  "100 worker crashes per day|--set faults.random.worker_crash_per_day=100"
  "checkpoints 60 s + 5 s per worker|--set jobs.checkpoint_s=60 --set jobs.checkpoint_per_gpu_s=5"
  "checkpoints 300 s + 10 s per worker|--set jobs.checkpoint_s=300 --set jobs.checkpoint_per_gpu_s=10"
  "12 inference surges per day|--set faults.random.surge_per_day=12"
  "1 crash per server-day, inference servers too|--set faults.random.server_crash_per_day=1 --set faults.random.inference_servers=true"
  "12 scheduler crashes per day, 10 min each|--set faults.random.scheduler_crash_per_day=12 --set faults.random.mean_scheduler_down_s=600"
)
: > "$work/faults.txt"
for i in "${!faults[@]}"; do
  echo "$i|${faults[$i]%%|*}" >> "$work/faults.txt"
  for p in baseline aryl; do queue "flt-$i-$p $p $ew ${faults[$i]#*|}"; done
done

# Tenants on every window (Philly's VCs, quotas in proportion to their GPU demand):
# isolated (no borrowing) and pooled (borrowing) under SJF, and aryl pooled. Jobs without an
# estimate, on every window: aryl with half and all of them without one (0% is the main aryl
# run; 2D-LAS is main-*-las, which needs none). Tables: scripts/tenant_tables.py.
for i in "${!windows[@]}"; do
  w=$(window_args "w$i")
  if [ "$FORMAT" = philly ]; then
    queue "ten-iso-w$i baseline $w --set tenants.from_demand=true --set tenants.borrow=false"
    queue "ten-pool-w$i baseline $w --set tenants.from_demand=true"
    queue "ten-aryl-w$i aryl $w --set tenants.from_demand=true"
  fi
  for f in 0.5 1; do queue "est-$f-w$i aryl $w --set jobs.unestimated_fraction=$f"; done
done

# ONLY=REGEX: make only the runs whose name matches (e.g. ONLY='multi-.*'), keep the others.
grep -E "^(${ONLY:-.*})	" "$work/runs.txt" > "$work/selected.txt" || { echo "ONLY='${ONLY:-}' matches no run" >&2; exit 1; }
sweep=(/usr/bin/python3 scripts/sweep.py --aryl "$ARYL" --out "$work" --runs "$work/selected.txt" ${JOBS:+--jobs "$JOBS"})
if [ "${LIST:-0}" = 1 ]; then
  "${sweep[@]}" --list
  exit 0
fi
echo "$(wc -l < "$work/selected.txt") runs, ${JOBS:-one per core} at a time, in $work" >&2
# TABLES_ONLY=1 with WORK set: rewrite results.md and the plots from that folder's runs.
[ "${TABLES_ONLY:-0}" = 1 ] || "${sweep[@]}"

/usr/bin/python3 scripts/results_table.py "$work" "$OUT/results.md"
/usr/bin/python3 scripts/tenant_tables.py "$work" "$OUT/results.md"

# Plots from jobs.csv and timeline.csv of the first evaluation window's main runs.
for p in "${policies[@]}"; do
  /usr/bin/python3 - "$work/main-$eval_w-$p/jobs.csv" > "$work/cdf-$p.dat" <<'PY'
import csv, sys
v = sorted(float(r["jct_s"]) / 3600 for r in csv.DictReader(open(sys.argv[1])))
step = max(1, len(v) // 2000)
for i in range(0, len(v), step): print(v[i], (i + 1) / len(v))
print(v[-1], 1.0)
PY
  /usr/bin/python3 - "$work/main-$eval_w-$p/jobs.csv" > "$work/sd-$p.dat" <<'PY'
import csv, sys
v = sorted(float(r["slowdown"]) for r in csv.DictReader(open(sys.argv[1])))
step = max(1, len(v) // 2000)
for i in range(0, len(v), step): print(v[i], (i + 1) / len(v))
print(v[-1], 1.0)
PY
done
title=$(/usr/bin/python3 scripts/results_table.py --describe "$work/main-$eval_w-aryl")
gnuplot <<GP
set terminal pngcairo size 900,560
set output "$OUT/plots/jct_cdf.png"
set title "JCT CDF ($title)"
set xlabel "job completion time (hours, log scale)"; set ylabel "fraction of jobs"; set logscale x
set key bottom right; set grid
plot for [p in "${policies[*]}"] "$work/cdf-".p.".dat" using 1:2 with lines lw 2 title p
GP
gnuplot <<GP
set terminal pngcairo size 900,560
set output "$OUT/plots/slowdown_cdf.png"
set title "Slowdown CDF ($title)"
set xlabel "slowdown (log scale)"; set ylabel "fraction of jobs"; set logscale x
set key bottom right; set grid
plot for [p in "${policies[*]}"] "$work/sd-".p.".dat" using 1:2 with lines lw 2 title p
GP
for p in baseline aryl; do
  awk -F, 'NR>1 {print $1/86400, $9, ($2+$4)/$3, $5, ($2+$4+$11)/($3+$8)}' "$work/main-$eval_w-$p/timeline.csv" > "$work/tl-$p.dat"
done
gnuplot <<GP
set terminal pngcairo size 900,900
set output "$OUT/plots/timeline.png"
set multiplot layout 3,1 title "baseline (SJF) vs aryl over time ($title)"
set grid; set key top right; set xlabel "day"
set ylabel "queued jobs"
plot "$work/tl-baseline.dat" using 1:2 with steps title "baseline", "$work/tl-aryl.dat" using 1:2 with steps title "aryl"
set ylabel "GPU usage, all clusters"; set yrange [0:1.05]
plot "$work/tl-baseline.dat" using 1:5 with steps title "baseline", "$work/tl-aryl.dat" using 1:5 with steps title "aryl"
set autoscale y; set ylabel "loaned inference servers"
plot "$work/tl-aryl.dat" using 1:4 with steps title "aryl"
unset multiplot
GP
# Faults: per scenario, SJF and aryl side by side.
/usr/bin/python3 - "$work" > "$work/faults.dat" <<'PY'
import json, os, sys
work = sys.argv[1]
for line in open(os.path.join(work, "faults.txt")):
    i, label = line.rstrip("\n").split("|", 1)
    s = {p: json.load(open(os.path.join(work, f"flt-{i}-{p}", "summary.json"))) for p in ("baseline", "aryl")}
    print(f'"{label}"', *(s[p][k] for k in ("lost_gpu_hours", "jobs_failed", "reclaim_slo_misses", "mean_jct_s")
                          for p in ("baseline", "aryl")))
PY
gnuplot <<GP
set terminal pngcairo size 1000,1000
set output "$OUT/plots/faults.png"
set multiplot layout 4,1 title "Faults: SJF (baseline) vs aryl ($title)"
set style data histogram; set style histogram cluster gap 1; set style fill solid 0.8 border -1
set boxwidth 0.9; set grid ytics; set key top right; set yrange [0:*]; set xtics rotate by -12 font ",8"
set ylabel "lost GPU-hours"
plot "$work/faults.dat" using 2:xtic(1) title "SJF", "" using 3 title "aryl"
set ylabel "failed jobs"
plot "$work/faults.dat" using 4:xtic(1) title "SJF", "" using 5 title "aryl"
set ylabel "reclaim SLO misses"
plot "$work/faults.dat" using 6:xtic(1) title "SJF", "" using 7 title "aryl"
set ylabel "mean JCT (s, survivors)"
plot "$work/faults.dat" using 8:xtic(1) title "SJF", "" using 9 title "aryl"
unset multiplot
GP
echo "wrote $OUT/results.md and $OUT/plots/" >&2
