#!/usr/bin/env bash
# How a design choice generalises beyond the setup it was chosen on, without the evaluation
# windows: aryl against SJF, SJF + backfill, SRTF, 2D-LAS and FIFO + backfill on the tuning
# window and three more Philly windows (2017-10-01..14, 11-16..30, 12-01..16), in
# docs/results.md's setup with one setting changed at a time (training servers, inference
# trace and servers, elastic fraction). Per variant: the geometric means over the windows (and seeds) of
# aryl's mean JCT, of its p95 JCT over the best baseline's and of its mean slowdown over the
# best baseline's, and the largest of each ratio (above 1: a baseline beats aryl there).
#   scripts/variants.sh                                   # the defaults
#   ARGS="--set scheduler.reserve_stretch=0" NAME=off scripts/variants.sh
#   VARIANTS="s40 s48" scripts/variants.sh                # some variants only
#   SEEDS=4 scripts/variants.sh                           # each window with seeds 1..4
# Environment: ARYL (build/aryl), JOBS (runs at a time, default 2), WORK (folder for the runs,
# default /tmp/aryl-variants; baseline runs found there are reused), NAME (aryl's runs' folder),
# SEEDS (default 1: the seed draws which jobs are elastic and the checkpoint times; the means
# and largest ratios are then over every window and seed, each seed against its own baselines).
# About 24 runs per variant and seed, under a second to a few seconds each.
set -euo pipefail
cd "$(dirname "$0")/.."
ARYL=${ARYL:-build/aryl}
[ -x "$ARYL" ] || { echo "variants: $ARYL is not built (scripts/setup.sh, or set ARYL)" >&2; exit 1; }
SEEDS=${SEEDS:-1}
[[ $SEEDS =~ ^[1-9][0-9]{0,2}$ ]] || { echo "variants: SEEDS='$SEEDS' is not a whole number from 1 to 999" >&2; exit 1; }
exec /usr/bin/python3 - "$ARYL" "${JOBS:-2}" "${WORK:-/tmp/aryl-variants}" "${NAME:-aryl}" "${ARGS:-}" "${VARIANTS:-}" "$SEEDS" <<'PY'
import json, math, os, shlex, subprocess, sys
from concurrent.futures import ThreadPoolExecutor

aryl, jobs, work, name, extra, chosen = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], shlex.split(sys.argv[5]), sys.argv[6].split()
seeds = range(1, int(sys.argv[7]) + 1)
windows = [("2017-10-14", "2017-10-29"), ("2017-10-01", "2017-10-14"), ("2017-11-16", "2017-11-30"), ("2017-12-01", "2017-12-16")]
sg = "../shared/traces/servegen/derived/"
variants = {
    "default": [],
    "s56": ["--set", "cluster.training.servers=56"],
    "s48": ["--set", "cluster.training.servers=48"],
    "s40": ["--set", "cluster.training.servers=40"],
    "mmid": ["--set", f"inference.trace={sg}language_m-mid_total_rate.csv"],
    "r1": ["--set", f"inference.trace={sg}reason_deepseek-r1_total_rate.csv"],
    "img": ["--set", f"inference.trace={sg}multimodal_mm-image_total_rate.csv"],
    "i16": ["--set", "cluster.inference.servers=16"],
    "e25": ["--set", "jobs.elastic_fraction=0.25"],
    "e100": ["--set", "jobs.elastic_fraction=1.0"],
}
for v in chosen:
    if v not in variants:
        sys.exit(f"variants: no variant '{v}' (known: {' '.join(variants)})")
if chosen:
    variants = {k: v for k, v in variants.items() if k in chosen}
baselines = {"sjf": ["--policy", "baseline"], "sjf-backfill": ["--policy", "baseline", "--set", "scheduler.backfill=true"],
             "srtf": ["--policy", "srtf"], "las": ["--policy", "las"],
             "fifo-backfill": ["--policy", "fifo", "--set", "scheduler.backfill=true"]}

def run_dir(folder, v, run, i, seed):  # seed 1 keeps the folder names of runs made before seeds
    return f"{work}/{folder}/{v}/{run}-{i}" + ("" if seed == 1 else f"-s{seed}")

def command(out, policy, window, variant, seed):
    return [aryl, "simulate", "--seed", str(seed), "--trace", "../shared/traces/philly-sia/philly.csv", "--trace-format", "philly",
            "--placement", "consolidated", "--servers", "64", "--gpus-per-server", "8", "--out", out, "--quiet",
            "--set", "cluster.inference.servers=64", "--set", "cluster.inference.gpu_type=T4",
            "--set", "inference.format=servegen", "--set", f"inference.trace={sg}language_m-small_total_rate.csv",
            "--set", f"trace.from={window[0]}", "--set", f"trace.to={window[1]}"] + variants[variant] + policy

runs = []
for v in variants:
    for i, w in enumerate(windows):
        for seed in seeds:
            for b, policy in baselines.items():
                out = run_dir("base", v, b, i, seed)
                if not os.path.exists(f"{out}/summary.json"):
                    runs.append((out, command(out, policy, w, v, seed)))
            out = run_dir(name, v, "aryl", i, seed)
            runs.append((out, command(out, ["--policy", "aryl"] + extra, w, v, seed)))

def run(r):
    out, cmd = r
    os.makedirs(out, exist_ok=True)
    p = subprocess.run(cmd, capture_output=True, text=True)
    return None if p.returncode == 0 else f"{shlex.join(cmd)}\n{p.stderr.strip()}"

with ThreadPoolExecutor(jobs) as ex:
    failed = [f for f in ex.map(run, runs) if f]
for f in failed:
    print(f"variants: a run failed: {f}", file=sys.stderr)
if failed:
    sys.exit(1)

def summary(path):
    with open(f"{path}/summary.json") as f:
        return json.load(f)

def gmean(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs))

print(f"| variant ({name}) | mean JCT (s) | p95 ratio | slowdown ratio | largest p95 ratio | largest slowdown ratio |")
print("|---|---:|---:|---:|---:|---:|")
for v in variants:
    jct, p95, slow = [], [], []
    for i in range(len(windows)):
        for seed in seeds:
            a = summary(run_dir(name, v, "aryl", i, seed))
            bs = [summary(run_dir("base", v, b, i, seed)) for b in baselines]
            jct.append(a["mean_jct_s"])
            p95.append(a["p95_jct_s"] / min(b["p95_jct_s"] for b in bs))
            slow.append(a["mean_slowdown"] / min(b["mean_slowdown"] for b in bs))
    print(f"| {v} | {gmean(jct):,.0f} | {gmean(p95):.3f} | {gmean(slow):.3f} | {max(p95):.3f} | {max(slow):.3f} |")
PY
