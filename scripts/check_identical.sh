#!/usr/bin/env bash
# Whether two builds of aryl make the same decisions: runs each case below with both and
# compares (cmp) every run's events.log and jobs.csv. The cases: the contended pooled run and
# the whole trace (as scripts/bench_contended.sh runs them), aryl on docs/results.md's three
# windows (as scripts/experiments.sh runs main-w<i>-aryl), loan-only and elastic-only on the
# first evaluation window, aryl with tenants from demand (experiments.sh's ten-aryl-w1), and
# aryl under a fault plan (scripts/check_identical_faults.yaml) with seeded random faults on top.
#   scripts/check_identical.sh OLD NEW        # two binaries, e.g. a copy of build/aryl and build/aryl
#   scripts/check_identical.sh --record BIN DIR   # BIN's runs into DIR, to compare with later
#   scripts/check_identical.sh DIR NEW        # NEW against runs recorded earlier
# Environment: ONLY (a regex of case names to run), WORK (folder for the runs; default a new
# temporary one, removed when every case is identical).
# Exits 0 when every file is identical, 1 naming each case and file that differs.
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { echo "usage: scripts/check_identical.sh OLD NEW | --record BIN DIR (OLD may be a recorded DIR)" >&2; exit 2; }
[ $# -eq 2 ] || [ $# -eq 3 ] || usage
record=
if [ "$1" = --record ]; then
  [ $# -eq 3 ] || usage
  record=$3
  set -- "$2"
fi
for b in "$@"; do
  [ -x "$b" ] && [ -f "$b" ] || [ -d "$b" ] || { echo "check_identical: $b is neither a binary nor a recorded folder" >&2; exit 2; }
done
[ -z "$record" ] && [ -d "$2" ] && { echo "check_identical: NEW ($2) must be a binary" >&2; exit 2; }

philly=../shared/traces/philly-sia/philly.csv
servegen=../shared/traces/servegen/derived/language_m-small_total_rate.csv
[ -f "$philly" ] || { echo "check_identical: the Philly trace is not at $philly" >&2; exit 2; }

work=${WORK:-$(mktemp -d -t aryl-identical-XXXXXX)}
mkdir -p "$work"
plan=scripts/check_identical_faults.yaml  # relative: the events name it, the same for both builds

# experiments.sh's setup of the pooled runs
pooled=(--trace "$philly" --trace-format philly --placement consolidated --servers 64 --gpus-per-server 8
  --set cluster.inference.servers=64 --set cluster.inference.gpu_type=T4
  --set inference.format=servegen --set "inference.trace=$servegen" --check-invariants)
w0=(--set trace.from=2017-10-14 --set trace.to=2017-10-29)
w1=(--set trace.from=2017-11-01 --set trace.to=2017-11-16)
w2=(--set trace.from=2017-09-15 --set trace.to=2017-09-30)
cases=(contended whole main-w0 main-w1 main-w2 loan-only-w1 elastic-only-w1 tenants-w1 faults-w1)
args_of() {
  case $1 in
    contended) echo --trace "$philly" --trace-format philly --set trace.from=2017-10-01 --set trace.to=2017-11-30 \
      --policy aryl --servers 64 --set cluster.inference.servers=64 --set scheduler.scale_period_s=0 ;;
    whole) echo --trace "$philly" --trace-format philly --set inference.format=servegen --set "inference.trace=$servegen" \
      --policy aryl --servers 352 --set cluster.inference.servers=200 --set scheduler.scale_period_s=0 ;;
    main-w0) echo "${pooled[@]}" --policy aryl "${w0[@]}" ;;
    main-w1) echo "${pooled[@]}" --policy aryl "${w1[@]}" ;;
    main-w2) echo "${pooled[@]}" --policy aryl "${w2[@]}" ;;
    loan-only-w1) echo "${pooled[@]}" --policy loan-only "${w1[@]}" ;;
    elastic-only-w1) echo "${pooled[@]}" --policy elastic-only "${w1[@]}" ;;
    tenants-w1) echo "${pooled[@]}" --policy aryl "${w1[@]}" --set tenants.from_demand=true ;;
    faults-w1) echo "${pooled[@]}" --policy aryl "${w1[@]}" --faults "$plan" --set faults.random.server_crash_per_day=1 \
      --set faults.random.worker_crash_per_day=20 ;;
  esac
}

run() {  # binary folder case
  local bin=$1 out=$2 name=$3
  rm -rf "$out"
  # shellcheck disable=SC2046  # args_of's words hold no blanks
  if ! "$bin" simulate --quiet --out "$out" $(args_of "$name") > "$out.stdout" 2> "$out.stderr"; then
    echo "check_identical: $bin on $name failed; see $out.stderr" >&2
    exit 1
  fi
}

differ=0
for name in "${cases[@]}"; do
  [[ $name =~ ${ONLY:-.} ]] || continue
  if [ -n "$record" ]; then
    mkdir -p "$record"
    run "$1" "$record/$name" "$name"
    echo "$name: recorded in $record/$name"
    continue
  fi
  a=$1/$name
  if [ ! -d "$1" ]; then a=$work/old/$name; mkdir -p "$work/old"; run "$1" "$a" "$name"; fi
  [ -f "$a/events.log" ] || { echo "check_identical: $a has no recorded run of $name" >&2; exit 2; }
  mkdir -p "$work/new"
  run "$2" "$work/new/$name" "$name"
  for f in events.log jobs.csv; do
    if cmp -s "$a/$f" "$work/new/$name/$f"; then
      echo "$name: $f identical ($(wc -l < "$a/$f") lines)"
    else
      echo "$name: $f DIFFERS: cmp $a/$f $work/new/$name/$f"
      differ=1
    fi
  done
done
if [ "$differ" = 0 ] && [ -z "${WORK:-}" ] && [ -z "$record" ]; then rm -rf "$work"; fi
exit "$differ"
