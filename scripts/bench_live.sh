#!/usr/bin/env bash
# Live mode under load: for each count of node agents (each a real `aryl agent` on loopback,
# heartbeating every second, with 8 emulated GPUs), runs a workload of 1-GPU jobs through
# scripts/testbed.sh and measures:
# - scheduling round latency: wall clock from the event that asked for a round to the round's
#   last decision sent, from the serve's /metrics histogram once the probe window ends (the
#   bounds of the buckets holding the p50 and the p99);
# - decision-to-launch latency: each worker starts through a wrapper that first records the
#   time since the decision reached the job actor (ARYL_DECIDED_UNIX_NS); it includes one
#   `date` process (about 1 ms);
# - 100 status requests on one client connection (each a round trip through the network
#   thread, the driver and the scheduler actor), and the serve process's CPU share meanwhile.
# Figures go to docs/performance.md by hand.
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
# The emulated worker, behind a wrapper that logs its decision-to-launch latency (µs) to $1
# (written into the wrapper: a worker's environment holds none of the agent's own variables).
worker_wrapper() {  # log path, wrapper path
  printf '#!/bin/sh\necho $(( ($(date +%%s%%N) - ARYL_DECIDED_UNIX_NS) / 1000 )) >> "%s"\nexec "%s" worker\n' \
    "$1" "$PWD/build/aryl" > "$2"
  chmod +x "$2"
}

# "p50 / p99 (n=N)" of numbers, one per line, divided by $1; percentiles linear between the
# closest ranks (numpy's default, as summary.json).
quantiles() {
  sort -n | awk -v d="$1" 'function q(p,  h, lo) { h = p * (NR - 1); lo = int(h) + 1
      return lo >= NR ? v[NR] : v[lo] + (h - (lo - 1)) * (v[lo + 1] - v[lo]) }
    {v[NR] = $1} END {
    if (NR == 0) { print "none"; exit }
    printf "%.1f / %.1f (n=%d)", q(0.50) / d, q(0.99) / d, NR }'
}
# The upper bounds (ms) of the round-latency buckets that hold the p50 and the p99.
round_quantiles() {  # metrics port
  /usr/bin/python3 - "$1" <<'PY'
import re, sys, urllib.request
text = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=5).read().decode()
buckets = [(m[1], int(m[2])) for m in re.finditer(r'^aryl_round_latency_seconds_bucket\{le="([^"]+)"\} (\d+)$', text, re.M)]
total = buckets[-1][1]
def bound(q):
    le = next(le for le, n in buckets if n >= q * total)
    return "inf" if le == "+Inf" else f"{float(le) * 1000:g}"
print(f"<= {bound(0.5)} / <= {bound(0.99)} (n={total})")
PY
}

ticks=$(getconf CLK_TCK)
printf '%-7s %-26s %-30s %-40s %s\n' agents "round p50 / p99 (ms)" "decision-to-launch p50 / p99 (ms)" \
  "status round trip (ms)" "serve CPU"
for n in "${counts[@]}"; do
  dir="$work/tb-$n"
  worker_wrapper "$work/launch-$n" "$work/worker-$n.sh"
  scripts/testbed.sh --dir "$dir" --training "$n" --inference 0 -- \
    --trace "$work/trace.csv" --speedup 20 --out "$dir/out" --metrics-port 0 --metrics-port-file "$work/mport-$n" \
    --set live.worker_command="$work/worker-$n.sh" > "$work/run-$n.log" 2>&1 &
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
  rounds=$(round_quantiles "$(cat "$work/mport-$n")")
  share=$(awk -v a="$cpu0" -v b="$cpu1" -v s="$t0" -v e="$t1" -v k="$ticks" 'BEGIN {printf "%.1f%%", 100 * (b - a) / k / (e - s)}')
  wait "$bed" || { echo "bench_live: the testbed with $n agents failed:"; tail -5 "$work/run-$n.log"; exit 1; }
  launches=$(quantiles 1000 < "$work/launch-$n")
  printf '%-7s %-26s %-30s %-40s %s\n' "$n" "$rounds" "$launches" "$probe" "$share"
done
