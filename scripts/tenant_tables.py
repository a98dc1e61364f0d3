#!/usr/bin/env python3
"""Appends to results.md the sections of scripts/experiments.sh's tenant and estimate runs:
tenants isolated vs pooled with borrowing vs aryl, and jobs without estimates.

  tenant_tables.py WORK RESULTS_MD

WORK holds the runs (ten-<mode>-w<i>, est-<fraction>-w<i>, main-w<i>-<policy>) and
windows.txt; every figure comes from their jobs.csv and summary.json.
"""
import csv
import json
import os
import sys


def jobs(run):
    with open(os.path.join(run, "jobs.csv"), newline="") as f:
        return [r for r in csv.DictReader(f) if r["outcome"] == "done"]


def summary(run):
    with open(os.path.join(run, "summary.json")) as f:
        return json.load(f)


def mean(v):
    return sum(v) / len(v) if v else 0.0


def n(x):
    return f"{x:,.0f}"


def per_tenant(rows):
    out = {}
    for r in rows:
        out.setdefault(r["tenant"], []).append(r)
    return out


def tenant_section(work, windows, label):
    lines = []
    modes = [("iso", "isolated VCs (SJF, no borrowing)"), ("pool", "pooled with borrowing (SJF)"),
             ("aryl", "aryl (borrowing + loaning + elasticity)")]
    verdicts = []
    for w in windows:
        runs = {m: os.path.join(work, f"ten-{m}-{w}") for m, _ in modes}
        if not all(os.path.exists(os.path.join(r, "jobs.csv")) for r in runs.values()):
            continue
        data = {m: jobs(r) for m, r in runs.items()}
        sums = {m: summary(r) for m, r in runs.items()}
        # The tuning window counts in the verdicts below; its table would repeat the evaluation ones'.
        table = [] if label[w].endswith("(tuning)") else lines
        table.append(f"### {label[w]}")
        table.append("| setup | mean JCT (s) | p95 JCT (s) | mean queuing (s) | p95 queuing (s) | preemptions | "
                     "quota reclaims (late) | quota reclaim p99 (s) |")
        table.append("|---|---|---|---|---|---|---|---|")
        for m, title in modes:
            s = sums[m]
            table.append(f"| {title} | {n(s['mean_jct_s'])} | {n(s['p95_jct_s'])} | {n(s['mean_queue_s'])} | "
                         f"{n(s['p95_queue_s'])} | "
                         f"{s.get('preemptions', 0):,} | {s.get('quota_reclaims', 0):,} "
                         f"({s.get('quota_reclaims_late', 0)}) | {s.get('quota_reclaim_latency_p99_s', 0):.1f} |")
        table.append("")
        # Per tenant, only the worst tenant's ratio to its isolated mean JCT is printed (the verdicts
        # below); ties go to the tenant with the larger GPU demand, as the walk is by demand.
        by = {m: per_tenant(data[m]) for m in data}
        demand = {t: sum(float(r["gpus"]) * float(r["duration_s"]) for r in rs) for t, rs in by["iso"].items()}
        worst = {"pool": (0, ""), "aryl": (0, "")}
        for t in sorted(by["iso"], key=lambda t: -demand[t]):
            iso = mean([float(r["jct_s"]) for r in by["iso"][t]])
            for m in ("pool", "aryl"):
                ratio = mean([float(r["jct_s"]) for r in by[m].get(t, [])]) / iso if iso > 0 else 0
                if ratio > worst[m][0]:
                    worst[m] = (ratio, t)
        overall = {m: mean([float(r["jct_s"]) for r in data[m]]) for m in data}
        for m in ("pool", "aryl"):
            ratio, t = worst[m]
            why = ""
            if ratio > 1.10:
                # Time queued and time running (JCT - queued), the tenant's means, against isolated.
                def parts(rs):
                    return (mean([float(r["queued_s"]) for r in rs]),
                            mean([float(r["jct_s"]) - float(r["queued_s"]) for r in rs]))
                q_iso, run_iso = parts(by["iso"][t])
                q_m, run_m = parts(by[m][t])
                elastic = sum(1 for r in by[m][t] if r["elastic"] == "1")
                slow = sum(float(r["below_speed_s"]) for r in by[m][t]) / max(1.0, run_m * len(by[m][t]))
                why = (f" Its jobs queue {n(q_m)} s on average against {n(q_iso)} s isolated, but run "
                       f"{run_m / run_iso:.2f}x as long ({n(run_m)} s against {n(run_iso)} s): {elastic} of its "
                       f"{len(by[m][t])} jobs are elastic, and its jobs run below their requested speed (fewer "
                       f"workers, loaned GPUs, overheads) {100 * slow:.0f}% of their running time.")
            verdicts.append((label[w], m, overall["iso"] / overall[m] if overall[m] else 0, worst[m], why))
    if not lines:
        return []
    head = ["## Tenants: Philly's VCs isolated, pooled with borrowing, and aryl",
            "Each VC of the window is a tenant with a quota of training GPUs in proportion to its jobs' "
            "GPU-seconds (`tenants.from_demand`, raised to its largest job), fair share across tenants "
            "(docs/tenants.md, \"Tenants and quotas\"). *Isolated*: no tenant borrows (each runs within "
            "its quota, as Philly ran its VCs: a partition of GPUs, not of machines). *Pooled*: idle quota is "
            "lent and taken back through quota reclaims. Both SJF inside each tenant, without loaning or "
            "elasticity; *aryl* adds inference loaning and elasticity to the pooled setup, and a tenant's quota "
            "also guarantees its elastic jobs their requested sizes (quota growth, docs/tenants.md).", ""]
    tail = ["Against the targets (pooled must beat isolated on overall mean JCT, and no tenant's "
            "mean JCT may be more than 10% worse than isolated):", ""]
    for wl, m, speedup, (ratio, t), why in verdicts:
        name = "pooled" if m == "pool" else "aryl"
        tail.append(f"- {wl}, {name}: overall mean JCT {speedup:.2f}x better than isolated "
                    f"({'met' if speedup > 1 else 'NOT met'}); worst tenant {t or '-'} at {ratio:.2f}x its isolated "
                    f"mean JCT ({'met' if ratio <= 1.10 else 'NOT met'}).{why}")
    tail.append("")
    return head + lines + tail


def estimate_section(work, windows, label):
    lines = ["## Jobs without an estimate",
             "aryl with 0%, 50% and 100% of jobs without a duration estimate (`jobs.unestimated_fraction`, "
             "seeded; docs/round.md, \"Jobs without an estimate\"), against 2D-LAS (`las`, which needs none) "
             "and aryl with every estimate exact (the 0% run). Mean JCT in seconds.", "",
             "| window | jobs without estimate | aryl mean JCT | aryl p95 JCT | 2D-LAS mean JCT | aryl exact mean JCT | "
             "2D-LAS / aryl | aryl / aryl exact |",
             "|---|---|---|---|---|---|---|---|"]
    verdicts = []
    for w in windows:
        exact = os.path.join(work, f"main-{w}-aryl")
        las = os.path.join(work, f"main-{w}-las")
        if not (os.path.exists(os.path.join(exact, "summary.json")) and os.path.exists(os.path.join(las, "summary.json"))):
            continue
        se, sl = summary(exact), summary(las)
        for frac, run in (("0%", exact), ("50%", os.path.join(work, f"est-0.5-{w}")),
                          ("100%", os.path.join(work, f"est-1-{w}"))):
            if not os.path.exists(os.path.join(run, "summary.json")):
                continue
            s = summary(run)
            r_las = sl["mean_jct_s"] / s["mean_jct_s"] if s["mean_jct_s"] else 0
            r_exact = s["mean_jct_s"] / se["mean_jct_s"] if se["mean_jct_s"] else 0
            lines.append(f"| {label[w]} | {frac} ({s.get('jobs_without_estimate', 0):,}) | {n(s['mean_jct_s'])} | "
                         f"{n(s['p95_jct_s'])} | {n(sl['mean_jct_s'])} | {n(se['mean_jct_s'])} | {r_las:.2f}x | "
                         f"{r_exact:.2f} |")
            if frac == "100%":
                verdicts.append((label[w], r_las, r_exact, s["mean_queue_s"], se["mean_queue_s"]))
    if len(lines) == 5:
        return []
    lines.append("")
    lines.append("Against the issue's targets with no estimates at all (aryl at least 1.2x better than 2D-LAS, "
                 "and within 15% of aryl with exact estimates):")
    lines.append("")
    for wl, r_las, r_exact, q, q_exact in verdicts:
        lines.append(f"- {wl}: {r_las:.2f}x better than 2D-LAS ({'met' if r_las >= 1.2 else 'NOT met'}); "
                     f"{100 * (r_exact - 1):+.1f}% against exact estimates ({'met' if r_exact <= 1.15 else 'NOT met'}); "
                     f"mean queuing {n(q)} s against {n(q_exact)} s with exact estimates.")
    lines.append("")
    lines.append("Estimates decide the order of the queue and the values of elastic sizes; where aryl's queue stays "
                 "short (loaning and elasticity start most jobs at once), there is little order to get wrong, so "
                 "these windows test the estimator mildly. 2D-LAS loses to aryl here for what it lacks (loaning, "
                 "elasticity, preemption only past a ratio), not for its lack of estimates.")
    lines.append("")
    return lines


def main():
    work, md = sys.argv[1], sys.argv[2]
    label, windows = {}, []
    with open(os.path.join(work, "windows.txt")) as f:
        for line in f:
            w, span = line.rstrip("\n").split("|", 1)
            label[w] = span
            windows.append(w)
    # Evaluation windows first (w1..), then the tuning window w0.
    order = windows[1:] or windows
    for w in windows:
        label[w] = label[w] + (" (tuning)" if w == "w0" and len(windows) > 1 else " (evaluation)")
    # Tenants and estimates also on the tuning window, the most contended (where quota growth
    # was checked), after the evaluation windows.
    tuning = [w for w in windows if w not in order]
    out = tenant_section(work, order + tuning, label) + estimate_section(work, order + tuning, label)
    if out:
        with open(md, "a") as f:
            f.write("\n" + "\n".join(out))


if __name__ == "__main__":
    main()
