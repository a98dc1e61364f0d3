#!/usr/bin/python3
"""Soak test: many seeded random fault plans in simulated time, invariants checked on every
event. Each plan is one `aryl simulate --check-invariants` run with random faults
(faults.random.*) drawn from its seed: server crashes, worker crashes and inference surges,
and (unless --kinds crashes) agent disconnects, lossy and slow agent links, failed and
slow checkpoints, scheduler crashes, and server faults on inference servers too. A run that fails (an invariant violated, a stall, a crash of aryl itself) or
that does not account for every job (done + failed = submitted) is a violation, reported with
the command that reproduces it. The first violating seed is rerun and its events.log compared
byte for byte.

    scripts/soak.py [--synthetic N] [--philly N] [--jobs P] [--kinds all|crashes] [--out DIR]

Prints per workload: plans run, violations, lost GPU-hours, recovery times, failed jobs,
reclaim latency and SLO misses, servers lost and agents reconciled, checkpoint faults that cost
work, and the wall time.
"""
import argparse
import concurrent.futures
import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

TIMEOUT_S = 120  # a run that takes longer than this is hung (they take well under a second)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAULTS = ["--set", "faults.random.server_crash_per_day=2", "--set", "faults.random.mean_down_s=3600",
          "--set", "faults.random.worker_crash_per_day=40", "--set", "faults.random.surge_per_day=6"]
# Per training server-day: 2 disconnects (5 min on average) and 2 bad links (10 min, heartbeats
# 5 s late and 20% of them lost); over the cluster, 100 failed and 100 slow checkpoints a day
# (on a random job: most find it not running); 4 scheduler crashes a day (2 min away on average);
# server crashes, disconnects and bad links strike inference servers too.
LINK_AND_CHECKPOINT_FAULTS = [
    "--set", "faults.random.disconnect_per_day=2", "--set", "faults.random.mean_disconnect_s=300",
    "--set", "faults.random.link_per_day=2", "--set", "faults.random.mean_link_s=600",
    "--set", "faults.random.link_delay_s=5", "--set", "faults.random.link_loss=0.2",
    "--set", "faults.random.checkpoint_fail_per_day=100", "--set", "faults.random.checkpoint_slow_per_day=100",
    "--set", "faults.random.mean_checkpoint_slow_s=300",
    "--set", "faults.random.scheduler_crash_per_day=4", "--set", "faults.random.mean_scheduler_down_s=120",
    "--set", "faults.random.inference_servers=true"]
WORKLOADS = {
    # The built-in synthetic workload, small: 300 jobs on 8 + 4 servers.
    "synthetic": ["--set", "synthetic.jobs=300", "--servers", "8", "--set", "cluster.inference.servers=4"],
    # A week of Philly VC 11cb48 with loaning and elasticity (the default policy, aryl).
    "philly": ["--trace", "../shared/traces/philly-sia/philly.csv", "--trace-format", "philly",
               "--set", "trace.vc=11cb48", "--set", "trace.from=2017-10-02", "--set", "trace.to=2017-10-09",
               "--servers", "16", "--set", "cluster.inference.servers=8"],
}


def command(aryl, workload, seed, out, kinds):
    return [aryl, "simulate", "--quiet", "--check-invariants", "--seed", str(seed), "--out", out] + \
        WORKLOADS[workload] + FAULTS + (LINK_AND_CHECKPOINT_FAULTS if kinds == "all" else [])


def count_events(path):
    """Servers lost, agents reconciled, checkpoint faults that cost work and scheduler crashes,
    from events.log."""
    counts = {"lost": 0, "reconcile": 0, "ckptfail": 0, "away": 0}
    with open(path) as f:
        for line in f:
            words = line.split(" ", 3)
            if len(words) > 2 and words[2] in counts:
                counts[words[2]] += 1
    return counts


def run_one(aryl, workload, seed, base, kinds):
    out = os.path.join(base, f"{workload}-{seed}")
    cmd = command(aryl, workload, seed, out, kinds)
    try:
        p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"workload": workload, "seed": seed, "cmd": cmd, "out": out, "code": -2,
                "error": f"hung: no result within {TIMEOUT_S} s"}
    result = {"workload": workload, "seed": seed, "cmd": cmd, "out": out, "code": p.returncode,
              "error": p.stderr.strip()[-2000:]}
    if p.returncode == 0:
        with open(os.path.join(out, "summary.json")) as f:
            s = json.load(f)
        result["summary"] = s
        result["counts"] = count_events(os.path.join(out, "events.log"))
        if s["jobs_completed"] + s["jobs_failed"] != s["jobs_submitted"]:
            result["code"] = -1
            result["error"] = (f"jobs not accounted for: {s['jobs_completed']} done + {s['jobs_failed']} failed "
                               f"!= {s['jobs_submitted']} submitted")
    return result


def quantile(values, q):
    """numpy.percentile(values, 100 * q), method "linear": summary.json's definition."""
    if not values:
        return 0.0
    v = sorted(values)
    h = q * (len(v) - 1)
    lo = int(h)
    return v[lo] if lo + 1 >= len(v) else v[lo] + (h - lo) * (v[lo + 1] - v[lo])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--synthetic", type=int, default=800, help="plans on the synthetic workload")
    ap.add_argument("--philly", type=int, default=200, help="plans on the Philly week")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="runs at once")
    ap.add_argument("--kinds", choices=["all", "crashes"], default="all",
                    help="fault kinds: all, or crashes (server and worker crashes and surges only)")
    ap.add_argument("--out", help="keep the runs here (default: a temporary folder, removed)")
    ap.add_argument("--aryl", default=os.path.join(ROOT, "build", "aryl"))
    args = ap.parse_args()
    base = args.out or tempfile.mkdtemp(prefix="aryl-soak-")
    os.makedirs(base, exist_ok=True)
    violations = []
    try:
        for workload, count in (("synthetic", args.synthetic), ("philly", args.philly)):
            if count <= 0:
                continue
            start = time.monotonic()
            with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
                results = list(pool.map(lambda s: run_one(args.aryl, workload, s, base, args.kinds),
                                        range(1, count + 1)))
            wall = time.monotonic() - start
            ok = [r for r in results if r["code"] == 0]
            bad = [r for r in results if r["code"] != 0]
            violations += bad
            sums = [r["summary"] for r in ok]
            recov_p50 = [s["recovery_p50_s"] for s in sums if s["recoveries"] > 0]
            recov_max = [s["recovery_max_s"] for s in sums if s["recoveries"] > 0]
            print(f"{workload}: {len(results)} plans, {len(bad)} violations, wall {wall:.0f} s")
            if sums:
                print(f"  lost GPU-hours per plan: median {quantile([s['lost_gpu_hours'] for s in sums], 0.5):.1f}, "
                      f"max {max(s['lost_gpu_hours'] for s in sums):.1f}")
                print(f"  recovery (crash to running again): median of plans' p50 {quantile(recov_p50, 0.5):.0f} s, "
                      f"worst {max(recov_max, default=0):.0f} s")
                print(f"  failed jobs (retries exhausted): {sum(s['jobs_failed'] for s in sums)} of "
                      f"{sum(s['jobs_submitted'] for s in sums)}")
                print(f"  reclaim latency p99 (median over plans) {quantile([s['reclaim_latency_p99_s'] for s in sums], 0.5):.1f} s, "
                      f"SLO misses {sum(s['reclaim_slo_misses'] for s in sums)}")
                counts = {k: sum(r["counts"][k] for r in ok) for k in ("lost", "reconcile", "ckptfail", "away")}
                print(f"  servers lost {counts['lost']}, agents reconciled (workers of moved jobs stopped) "
                      f"{counts['reconcile']}, checkpoint faults that cost work {counts['ckptfail']}, "
                      f"scheduler crashes {counts['away']}")
            for r in bad:
                print(f"  VIOLATION seed {r['seed']}: {r['error'].splitlines()[0] if r['error'] else r['code']}")
                print(f"    reproduce: (cd {ROOT} && {' '.join(r['cmd'])})")
        if violations:
            first = violations[0]
            again = first["out"] + "-again"
            subprocess.run(command(args.aryl, first["workload"], first["seed"], again, args.kinds), cwd=ROOT,
                           capture_output=True)
            same = filecmp.cmp(os.path.join(first["out"], "events.log.partial"),
                               os.path.join(again, "events.log.partial"), shallow=False) \
                if os.path.exists(os.path.join(again, "events.log.partial")) else False
            print(f"rerun of seed {first['seed']}: events.log {'identical' if same else 'DIFFERENT'}")
            return 1
        return 0
    finally:
        if not args.out:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
