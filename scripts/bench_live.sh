#!/usr/bin/env bash
# Live mode under load: for each count of node agents (each a real `aryl agent` on loopback,
# heartbeating every second, with 8 emulated GPUs), runs a workload of 1-GPU jobs through
# scripts/testbed.sh and, while it runs, times 100 status requests on one client connection
# (each a round trip through the network thread, the driver and the scheduler actor) and the
# serve process's CPU share over that window. Figures go to docs/performance.md by hand.
#
#   scripts/bench_live.sh [AGENTS...]      (default: 8 32 96)
set -euo pipefail
cd "$(dirname "$0")/.."
counts=("$@")
[ $# -eq 0 ] && counts=(8 32 96)
work="$(mktemp -d /tmp/aryl-bench-live.XXXXXX)"
trap 'rm -rf "$work"' EXIT
# 64 inelastic 1-GPU jobs, one every 10 s, 300 s each: about 30 run at once.
{
  echo "job_id,submit_s,gpus,duration_s,elastic"
  for i in $(seq 0 63); do echo "j$i,$((i * 10)),1,300,0"; done
} > "$work/trace.csv"
ticks=$(getconf CLK_TCK)
printf '%-7s %-44s %s\n' agents "status round trip (ms)" "serve CPU"
for n in "${counts[@]}"; do
  dir="$work/tb-$n"
  scripts/testbed.sh --dir "$dir" --training "$n" --inference 0 -- --trace "$work/trace.csv" \
    --speedup 20 --out "$dir/out" > "$work/run-$n.log" 2>&1 &
  bed=$!
  for _ in $(seq 600); do [ -s "$dir/port" ] && break; sleep 0.1; done
  serve=$(awk '$2 == "serve" {print $1}' "$dir/pids")
  # The run starts once every agent registered; status is refused until then.
  for _ in $(seq 600); do
    build/aryl status --port "$(cat "$dir/port")" --token-file "$dir/token" > /dev/null 2>&1 && break
    sleep 0.1
  done
  cpu0=$(awk '{print $14 + $15}' "/proc/$serve/stat"); t0=$(date +%s.%N)
  probe=$(scripts/bench_live_probe.py "$(cat "$dir/port")" "$dir/token" 100 0.2)
  cpu1=$(awk '{print $14 + $15}' "/proc/$serve/stat"); t1=$(date +%s.%N)
  share=$(awk -v a="$cpu0" -v b="$cpu1" -v s="$t0" -v e="$t1" -v k="$ticks" 'BEGIN {printf "%.1f%%", 100 * (b - a) / k / (e - s)}')
  wait "$bed" || { echo "bench_live: the testbed with $n agents failed:"; tail -5 "$work/run-$n.log"; exit 1; }
  printf '%-7s %-44s %s\n' "$n" "$probe" "$share"
done
