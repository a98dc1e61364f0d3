#!/usr/bin/env bash
# `aryl history` on a large database: writes a synthetic canonical trace of JOBS jobs (100 users,
# 8 tenants, one job in ten with a time limit below its run time, so some end timeout), runs it
# through `aryl simulate --policy fifo --db` (aryl's own writer of the history table), then times
# filtered queries, each RUNS times (median printed, with the rows it returned).
#   scripts/bench_history.sh [JOBS]          default 1000000
# Environment: RUNS (5), ARYL (build/aryl), KEEP (a folder to keep the trace and database in;
# default: a temporary one, removed), REUSE=1 (time the queries on KEEP's database as it is).
set -euo pipefail
cd "$(dirname "$0")/.."
ARYL=${ARYL:-build/aryl}
[ -x "$ARYL" ] || { echo "bench_history: $ARYL is not built (scripts/setup.sh, or set ARYL)" >&2; exit 1; }
/usr/bin/python3 - "$ARYL" "${RUNS:-5}" "${1:-1000000}" "${KEEP:-}" "${REUSE:-}" <<'PY'
import os, random, shutil, statistics, subprocess, sys, tempfile, time

aryl, runs, jobs, keep, reuse = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5] == "1"
work = keep or tempfile.mkdtemp(prefix="aryl-history-")
os.makedirs(work, exist_ok=True)
try:
    trace, db = os.path.join(work, "trace.csv"), os.path.join(work, "history.db")
    if reuse and not (keep and os.path.exists(db)):
        sys.exit("bench_history: REUSE=1 needs KEEP with a history.db from an earlier run")
    if not reuse:
        # Arrivals every 2 s on average: a million jobs over about 23 simulated days, on 1,600
        # training servers of 8 GPUs (a third of them busy on average), so the queue stays short.
        r = random.Random(51)
        with open(trace, "w") as f:
            f.write("job_id,submit_s,gpus,duration_s,user,tenant,time_limit\n")
            t = 0.0
            for i in range(jobs):
                t += r.expovariate(0.5)
                d = r.choice([60, 300, 900, 3600]) * r.uniform(0.5, 2)
                limit = str(int(d * 0.5)) if r.random() < 0.1 else ""
                f.write(f"j{i},{t:.1f},{r.choice([1, 1, 2, 4, 8])},{d:.0f},u{r.randrange(100)},t{r.randrange(8)},"
                        f"{limit}\n")
        start = time.monotonic()
        subprocess.run([aryl, "simulate", "--quiet", "--policy", "fifo", "--trace", trace, "--servers", "1600",
                        "--out", os.path.join(work, "out"), "--db", db], check=True, stdout=subprocess.DEVNULL)
        print(f"{jobs} jobs simulated and written to {db} in {time.monotonic() - start:.1f} s "
              f"({os.path.getsize(db) / 1e6:.0f} MB)")
    print(f"load average before the queries: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)")
    queries = [
        ["--user", "u7", "--outcome", "timeout", "--since", "1970-01-10", "--until", "1970-01-20"],
        ["--user", "u7", "--since", "1970-01-10", "--until", "1970-01-11"],
        ["--tenant", "t3", "--outcome", "done", "--since", "1970-01-05T12:00", "--until", "1970-01-06"],
        ["--outcome", "timeout", "--since", "1970-01-20"],
        ["--user", "u7", "--outcome", "timeout"],
    ]
    print(f"| query | rows | median of {runs} (s) | min (s) | max (s) |")
    print("|---|---:|---:|---:|---:|")
    for q in queries:
        times, rows = [], 0
        for _ in range(runs):
            t0 = time.monotonic()
            out = subprocess.run([aryl, "history", "--db", db, "--csv", *q], check=True, capture_output=True,
                                 text=True).stdout
            times.append(time.monotonic() - t0)
            rows = out.count("\n") - 1
        print(f"| `aryl history --db FILE {' '.join(q)}` | {rows} | {statistics.median(times):.3f} | "
              f"{min(times):.3f} | {max(times):.3f} |")
finally:
    if not keep:
        shutil.rmtree(work, ignore_errors=True)
PY
