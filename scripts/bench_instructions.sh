#!/usr/bin/env bash
# Instructions of scripts/bench_contended.sh's two aryl runs (pooled Philly 2017-10-01 ..
# 11-30 on 64 and on 128 x 8 V100, 64 T4 inference servers), counted by callgrind: unlike
# times, unaffected by the machine's load. Both run at once (one core each, about 2.5 min;
# 6 min with a simulation). Prints each run's counts and the contended/uncontended ratios.
#   scripts/bench_instructions.sh                 # instructions
#   SIM=cache scripts/bench_instructions.sh       # and level-1 data read misses (--cache-sim)
#   SIM=branch scripts/bench_instructions.sh      # and mispredicted conditional branches (--branch-sim)
# Environment: ARYL (build/aryl; a -g build lets callgrind_annotate name source lines),
# SIM (none), KEEP (a folder to keep the callgrind.out files in, for callgrind_annotate).
# Needs valgrind (apt-get install valgrind; not part of scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
ARYL=${ARYL:-build/aryl}
[ -x "$ARYL" ] || { echo "bench_instructions: $ARYL is not built (scripts/setup.sh, or set ARYL)" >&2; exit 1; }
command -v valgrind > /dev/null || { echo "bench_instructions: needs valgrind (apt-get install valgrind)" >&2; exit 1; }
case "${SIM:-}" in
  "") sim=() ;;
  cache) sim=(--cache-sim=yes) ;;
  branch) sim=(--branch-sim=yes) ;;
  *) echo "bench_instructions: SIM is cache, branch or unset, not '$SIM'" >&2; exit 1 ;;
esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
out=${KEEP:-$work}
mkdir -p "$out"
args=(simulate --quiet --trace ../shared/traces/philly-sia/philly.csv --trace-format philly
      --set trace.from=2017-10-01 --set trace.to=2017-11-30 --policy aryl
      --set cluster.inference.servers=64 --set scheduler.scale_period_s=0)
pids=()
for servers in 64 128; do
  valgrind --tool=callgrind "${sim[@]}" --callgrind-out-file="$out/callgrind.$servers.out" \
    "$ARYL" "${args[@]}" --servers "$servers" --out "$work/run-$servers" > "$work/log-$servers" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || { echo "bench_instructions: a run failed:" >&2; cat "$work"/log-* >&2; exit 1; }; done
/usr/bin/python3 - "$work/log-64" "$work/log-128" <<'PY'
import re, sys
def counts(path):
    text = open(path).read()
    out = {"instructions": int(re.search(r"I\s+refs:\s+([\d,]+)", text).group(1).replace(",", ""))}
    m = re.search(r"D1\s+misses:\s+[\d,]+\s+\(\s*([\d,]+) rd", text)
    if m: out["L1 data read misses"] = int(m.group(1).replace(",", ""))
    m = re.search(r"Mispredicts:\s+[\d,]+\s+\(\s*([\d,]+) cond", text)
    if m: out["mispredicted conditional branches"] = int(m.group(1).replace(",", ""))
    return out
c, u = counts(sys.argv[1]), counts(sys.argv[2])
print("| count | contended (64 x 8) | uncontended (128 x 8) | ratio |")
print("|---|---:|---:|---:|")
for k in c:
    print(f"| {k} | {c[k]:,} | {u[k]:,} | {c[k] / u[k]:.3f}x |")
PY
