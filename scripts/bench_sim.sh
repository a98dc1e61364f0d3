#!/usr/bin/env bash
# Simulation speed: the whole Philly trace (82,247 jobs, 109 days) pooled on 352 x 8 V100
# training GPUs with 200 T4 inference servers on ServeGen m-small demand, policy aryl.
# Target: <= 2 s wall on a quiet machine and < 1 GiB peak memory (a simulation runs on one thread;
# it is not pinned, since which core is quieter varies on a shared machine). Prints each run
# and the median. INSTRUCTIONS=1: also one run under callgrind (valgrind, not part of
# scripts/setup.sh), whose instruction count the machine's load does not change.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/aryl ] || scripts/setup.sh
runs=${RUNS:-5}
python3 - "$runs" "${INSTRUCTIONS:-0}" <<'PY'
import json, re, resource, statistics, subprocess, sys, tempfile, time
runs, instructions = int(sys.argv[1]), sys.argv[2] == "1"
walls, rss = [], []
for i in range(runs + instructions):
    out = tempfile.mkdtemp()
    cmd = ["build/aryl", "simulate", "--trace", "../shared/traces/philly-sia/philly.csv",
           "--trace-format", "philly", "--policy", "aryl", "--servers", "352", "--gpus-per-server", "8",
           "--out", out, "--quiet", "--set", "cluster.inference.servers=200",
           "--set", "inference.format=servegen",
           "--set", "inference.trace=../shared/traces/servegen/derived/language_m-small_total_rate.csv"]
    if i == runs:
        r = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/callgrind.out"] + cmd,
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        count = int(re.search(r"Collected : (\d+)", r.stderr).group(1))
        print(f"instructions {count / 1e9:.2f} G (callgrind)")
        break
    t0 = time.monotonic()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    walls.append(time.monotonic() - t0)
    # ru_maxrss of waited-for children is the largest child so far (KiB on Linux).
    rss.append(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
    s = json.load(open(out + "/summary.json"))
    print(f"run {i + 1}: wall {walls[-1]:.2f} s (sim_wall_s {s['sim_wall_s']:.2f}), jobs {s['jobs_completed']:,}, "
          f"events {s['events']:,}, peak RSS so far {rss[-1]:.0f} MiB")
print(f"median wall {statistics.median(walls):.2f} s over {runs} runs (min {min(walls):.2f}, max {max(walls):.2f}); "
      f"peak RSS {max(rss):.0f} MiB")
PY
