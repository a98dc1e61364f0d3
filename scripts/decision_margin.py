#!/usr/bin/env python3
"""How late one job may end before a run's decisions change: the timing margin of a live run
compared with its simulation (docs/live.md, "Fidelity").

For each job of a small trace (job_id,submit_s,gpus,duration_s[,...]), the job is simulated
ending LATE seconds after its estimate (an `estimate_s` column holding its duration, the
duration raised by LATE), for each LATE in --late; the first LATE that changes any job's
decisions (start, rescale, preempt, finish, with allocations, times left out) is printed, with
the jobs it changes and the run's mean JCT against the unchanged run's.

  scripts/decision_margin.py --trace tests/e2e/data/small.csv -- --servers 2 \
      --set cluster.inference.servers=1
"""
import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile


def decisions(events_log):
    out = {}
    with open(events_log) as f:
        for line in f:
            parts = line.split()
            if len(parts) < 4 or parts[1] != "scheduler" or parts[2] not in ("start", "rescale", "preempt", "finish"):
                continue
            out.setdefault(parts[3], []).append(" ".join([parts[2]] + parts[4:]).split(" | ")[0])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--aryl", default="build/aryl")
    ap.add_argument("--trace", required=True)
    ap.add_argument("--late", default="1,2,4,6,8,10,12,15,20,30", help="seconds late to try, comma-separated")
    ap.add_argument("simulate_args", nargs="*", help="after --: more `aryl simulate` arguments")
    a = ap.parse_args()
    with open(a.trace, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows or "duration_s" not in rows[0]:
        sys.exit(f"decision_margin: {a.trace}: needs a header with duration_s and at least one job")
    lates = [float(x) for x in a.late.split(",")]
    work = tempfile.mkdtemp(prefix="decision-margin-")

    def run(late_job, late):
        path = os.path.join(work, "trace.csv")
        with open(path, "w", newline="") as f:
            fields = [k for k in rows[0] if k != "estimate_s"] + ["estimate_s"]
            w = csv.DictWriter(f, fieldnames=fields)
            w.writeheader()
            for i, r in enumerate(rows):
                d = float(r["duration_s"])
                w.writerow({**{k: r[k] for k in fields[:-1]}, "duration_s": d + (late if i == late_job else 0),
                            "estimate_s": d})
        out = os.path.join(work, "out")
        p = subprocess.run([a.aryl, "simulate", "--quiet", "--trace", path, "--out", out] + a.simulate_args,
                           capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"decision_margin: aryl simulate failed: {p.stderr.strip()}")
        with open(os.path.join(out, "summary.json")) as f:
            jct = json.load(f)["mean_jct_s"]
        return decisions(os.path.join(out, "events.log")), jct

    ref, ref_jct = run(-1, 0)
    print(f"on time: mean JCT {ref_jct:.1f} s")
    for i, r in enumerate(rows):
        for late in lates:
            got, jct = run(i, late)
            changed = sorted(j for j in set(ref) | set(got) if ref.get(j) != got.get(j))
            if changed:
                print(f"{r['job_id']}: {late:g} s late changes {' '.join(changed)} (mean JCT {jct:.1f} s)")
                break
        else:
            print(f"{r['job_id']}: no change up to {lates[-1]:g} s late")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
