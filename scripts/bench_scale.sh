#!/usr/bin/env bash
# Scale: the built-in synthetic workload at 10k, 50k, 200k and 1M jobs on a cluster grown in
# proportion (JOBS_PER_SERVER jobs per training server, as many inference servers as training
# ones, the default offered load), so the arrival window and the load stay the same and only the
# size changes. Policies fifo and aryl at default settings; each configuration RUNS times
# (median), except that one whose first run takes longer than MAX_RUN_S runs once. Prints wall
# seconds, microseconds per job, CPU seconds (user + system: what a shared machine's load moves
# least) and microseconds of CPU per job, and peak resident memory (/usr/bin/time -v) in total
# and per job.
#   scripts/bench_scale.sh [JOBS ...]          e.g. scripts/bench_scale.sh 10000 50000
# Environment: RUNS (3), POLICIES ("fifo aryl"; NAME@P runs NAME with scheduler.scale_period_s=P,
# e.g. "aryl@300"; without @P nothing is set), JOBS_PER_SERVER (625: 10k jobs on the default
# 16 + 16 servers), MAX_RUN_S (180), ARYL (build/aryl), SETS (KEY=VALUE ... given to every run as
# --set, e.g. SETS=scheduler.scale_budget_per_s=0).
set -euo pipefail
cd "$(dirname "$0")/.."
ARYL=${ARYL:-build/aryl}
[ -x "$ARYL" ] || { echo "bench_scale: $ARYL is not built (scripts/setup.sh, or set ARYL)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "bench_scale: needs GNU time at /usr/bin/time (apt-get install time)" >&2; exit 1; }
[ $# -gt 0 ] || set -- 10000 50000 200000 1000000
/usr/bin/python3 - "$ARYL" "${RUNS:-3}" "${POLICIES:-fifo aryl}" "${JOBS_PER_SERVER:-625}" "${MAX_RUN_S:-180}" "${SETS:-}" "$@" <<'PY'
import json, math, re, shutil, statistics, subprocess, sys, tempfile

aryl, runs, policies, per_server, max_run_s = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), int(sys.argv[4]), float(sys.argv[5])
sets = [a for kv in sys.argv[6].split() for a in ("--set", kv)]
sizes = [int(n) for n in sys.argv[7:]]


def run_once(jobs, servers, policy):
    work = tempfile.mkdtemp(prefix="aryl-scale-")
    name, _, period = policy.partition("@")
    try:
        cmd = ["/usr/bin/time", "-v", "-o", f"{work}/time.txt", aryl, "simulate", "--quiet", "--policy", name,
               *(["--set", f"scheduler.scale_period_s={period}"] if period else []),
               "--out", f"{work}/out", "--servers", str(servers), "--set", f"cluster.inference.servers={servers}",
               "--set", f"synthetic.jobs={jobs}", *sets]
        r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd[4:])} failed (exit {r.returncode}):\n{r.stderr[-2000:]}")
        t = open(f"{work}/time.txt").read()
        h, m, s = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", t).groups()
        wall = int(h or 0) * 3600 + int(m) * 60 + float(s)
        rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1))
        cpu = sum(float(re.search(rf"{k} time \(seconds\): ([\d.]+)", t).group(1)) for k in ("User", "System"))
        done = json.load(open(f"{work}/out/summary.json"))["jobs_completed"]
        if done != jobs:
            raise RuntimeError(f"{' '.join(cmd[4:])} completed {done} of {jobs} jobs")
        return wall, cpu, rss
    finally:
        shutil.rmtree(work, ignore_errors=True)


rows, failure = [], None
for jobs, policy in ((j, p) for j in sizes for p in policies):
    if failure:
        break
    servers = max(1, math.ceil(jobs / per_server))
    walls, cpus, rsss = [], [], []
    for i in range(runs):
        try:
            wall, cpu, rss = run_once(jobs, servers, policy)
        except RuntimeError as e:
            failure = str(e)  # still print what was measured before it
            break
        walls.append(wall)
        cpus.append(cpu)
        rsss.append(rss)
        print(f"{jobs} jobs, {servers}+{servers} servers, {policy}, run {i + 1}: {wall:.2f} s, CPU {cpu:.2f} s, {rss} KiB",
              file=sys.stderr, flush=True)
        if wall > max_run_s:
            break
    if walls:
        w, c, m = statistics.median(walls), statistics.median(cpus), max(rsss)
        rows.append((jobs, servers, policy, len(walls), w, w / jobs * 1e6, c, c / jobs * 1e6, m, m / jobs))

print("| jobs | servers (training + inference) | policy | runs | wall s (median) | µs per job | CPU s (median) | CPU µs per job | peak RSS KiB | KiB per job |")
print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
for jobs, servers, policy, n, w, us, c, cus, m, kib in rows:
    print(f"| {jobs:,} | {servers} + {servers} | {policy} | {n} | {w:.2f} | {us:.1f} | {c:.2f} | {cus:.1f} | {m:,} | {kib:.2f} |")
if failure:
    sys.exit(f"bench_scale: {failure}")
PY
