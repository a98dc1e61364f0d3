#!/usr/bin/env bash
# Simulation speed where the queue is deep: all Philly virtual clusters pooled, jobs submitted
# 2017-10-01 .. 2017-11-30 (68,510 rows), on 64 x 8 V100 (contended: thousands of jobs wait)
# and on 128 x 8 (uncontended), for fifo (consolidated) and for aryl with 64 T4 inference
# servers; and the whole trace (82,247 jobs) under aryl as scripts/bench_sim.sh runs it.
# Every case runs RUNS times, interleaved (so a noisy minute hits all cases alike); prints
# each run, then per case the median wall time, the contended/uncontended ratio per policy and
# the peak resident memory per job, the actors' activations and the scheduling rounds
# (summary.json's actor_activations, full_rounds, local_rounds + starts_rounds: deterministic,
# unlike the times).
#   scripts/bench_contended.sh                   # scale period 0 (the default: exact rounds)
#   PERIODS="0 300" scripts/bench_contended.sh   # also with scheduler.scale_period_s=300
#   ARGS="--set scheduler.scale_rounds=capacity" scripts/bench_contended.sh  # added to aryl's runs
# Environment: RUNS (3), PERIODS ("0"), ARYL (build/aryl), ARGS (none).
set -euo pipefail
cd "$(dirname "$0")/.."
ARYL=${ARYL:-build/aryl}
[ -x "$ARYL" ] || { echo "bench_contended: $ARYL is not built (scripts/setup.sh, or set ARYL)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "bench_contended: needs GNU time at /usr/bin/time" >&2; exit 1; }
/usr/bin/python3 - "$ARYL" "${RUNS:-3}" "${PERIODS:-0}" "${ARGS:-}" <<'PY'
import json, re, shlex, shutil, statistics, subprocess, sys, tempfile

aryl, runs, periods, extra = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), shlex.split(sys.argv[4])
trace = ["--trace", "../shared/traces/philly-sia/philly.csv", "--trace-format", "philly"]
window = ["--set", "trace.from=2017-10-01", "--set", "trace.to=2017-11-30"]
servegen = ["--set", "inference.format=servegen",
            "--set", "inference.trace=../shared/traces/servegen/derived/language_m-small_total_rate.csv"]
cases = []  # (name, args)
for servers in (64, 128):
    cases.append((f"pooled Oct-Nov, fifo, {servers} x 8", trace + window + [
        "--policy", "fifo", "--servers", str(servers), "--set", "cluster.inference.servers=0"]))
for p in periods:
    for servers in (64, 128):
        cases.append((f"pooled Oct-Nov, aryl (period {p}), {servers} x 8 + 64 T4", trace + window + [
            "--policy", "aryl", "--servers", str(servers), "--set", "cluster.inference.servers=64",
            "--set", f"scheduler.scale_period_s={p}"] + extra))
    cases.append((f"whole Philly, aryl (period {p}), 352 x 8 + 200 T4", trace + servegen + [
        "--policy", "aryl", "--servers", "352", "--set", "cluster.inference.servers=200",
        "--set", f"scheduler.scale_period_s={p}"] + extra))


def run_once(args):
    work = tempfile.mkdtemp(prefix="aryl-contended-")
    try:
        cmd = ["/usr/bin/time", "-v", "-o", f"{work}/time.txt", aryl, "simulate", "--quiet", "--out", f"{work}/out"] + args
        r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            sys.exit(f"bench_contended: {' '.join(cmd[4:])} failed (exit {r.returncode}):\n{r.stderr[-2000:]}")
        t = open(f"{work}/time.txt").read()
        h, m, s = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", t).groups()
        wall = int(h or 0) * 3600 + int(m) * 60 + float(s)
        rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1))
        s = json.load(open(f"{work}/out/summary.json"))
        return (wall, rss, s["jobs_submitted"], s["mean_queue_s"], s["mean_jct_s"], s["actor_activations"],
                s["full_rounds"], s["local_rounds"] + s["starts_rounds"])
    finally:
        shutil.rmtree(work, ignore_errors=True)


results = {name: [] for name, _ in cases}
for i in range(runs):
    for name, args in cases:
        r = run_once(args)
        results[name].append(r)
        print(f"run {i + 1}: {name}: {r[0]:.2f} s, {r[1]:,} KiB, {r[2]:,} jobs, mean queue {r[3]:.0f} s, "
              f"mean JCT {r[4]:.0f} s", file=sys.stderr, flush=True)

print(f"| case | wall s (median of {runs}) | min | max | peak RSS KiB | KiB per job | mean queue s | mean JCT s | "
      "actor activations | full rounds | local and starts rounds |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
median = {}
for name, _ in cases:
    rs = results[name]
    walls = [r[0] for r in rs]
    median[name] = statistics.median(walls)
    rss, jobs = max(r[1] for r in rs), rs[0][2]
    print(f"| {name} | {median[name]:.2f} | {min(walls):.2f} | {max(walls):.2f} | {rss:,} | {rss / jobs:.2f} | "
          f"{rs[0][3]:.0f} | {rs[0][4]:.0f} | {rs[0][5]:,} | {rs[0][6]:,} | {rs[0][7]:,} |")
print()
for policy in ["fifo"] + [f"aryl (period {p})" for p in periods]:
    c = [n for n in median if f", {policy}, 64 x 8" in n][0]
    u = [n for n in median if f", {policy}, 128 x 8" in n][0]
    print(f"- {policy}: contended / uncontended = {median[c]:.2f} / {median[u]:.2f} s = {median[c] / median[u]:.2f}x")
PY
