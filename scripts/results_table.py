#!/usr/bin/env python3
"""Writes docs/results.md from the runs of scripts/experiments.sh.

  results_table.py WORK OUT.md        the whole document from the runs in WORK
  results_table.py --describe RUN     one line naming a run's setup (plot titles)

Every parameter printed comes from the runs themselves: config.json (the effective settings
aryl writes beside its outputs), summary.json and jobs.csv; none is assumed here.
"""
import csv
import datetime
import json
import math
import os
import statistics
import sys

NAMES = {  # how tables name the policies
    "baseline": "SJF (`baseline`)",
    "sjf-backfill": "SJF + backfill",
    "loan-only": "loan-only",
    "elastic-only": "elastic-only",
    "aryl": "aryl",
    "fifo": "strict FIFO (`fifo`)",
    "fifo-backfill": "FIFO + backfill",
    "srtf": "SRTF",
    "las": "LAS (2D-LAS)",
}
# Keys that differ between the main runs of one window by design.
PER_RUN_KEYS = {"policy", "scheduler.backfill", "run.out"}


def load(path):
    with open(path) as f:
        return json.load(f)


def config(run):
    return load(os.path.join(run, "config.json"))


def summary(run):
    return load(os.path.join(run, "summary.json"))


def jobs(run):
    with open(os.path.join(run, "jobs.csv")) as f:
        return list(csv.DictReader(f))


def rescales_per_elastic(run):
    """Scale-ins plus scale-outs of completed elastic jobs, per completed elastic job."""
    n = changes = 0
    for r in jobs(run):
        if r["outcome"] == "done" and r["elastic"] == "1":
            n += 1
            changes += int(r["scale_ins"]) + int(r["scale_outs"])
    return changes / n if n else 0.0


def fmt_s(x):
    return f"{x:,.0f}"


def ratio(a, b):
    return a / b if b > 0 else math.inf


def fmt_r(x):
    return "inf" if math.isinf(x) else f"{x:.2f}x"


def fmt_eff(s, key):
    """A work efficiency of summary `s`; runs made before aryl reported it show n/a."""
    return f"{s[key]:.3f}" if key in s else "n/a"


def span_s(cfg, jl):
    """The submission window in seconds: trace.from..to if set, else first to last submit."""
    if cfg["trace.from"] and cfg["trace.to"]:
        d = datetime.datetime.fromisoformat(cfg["trace.to"]) - datetime.datetime.fromisoformat(cfg["trace.from"])
        return d.total_seconds()
    submits = [float(r["submit_s"]) for r in jl]
    return max(submits) - min(submits) if submits else 0.0


def offered_load(cfg, jl):
    """GPU-seconds of the window's jobs over the training cluster's GPU-seconds in the window,
    and the same counting only the part of each job inside the window."""
    window = span_s(cfg, jl)
    cap = cfg["cluster.training.servers"] * cfg["cluster.training.gpus_per_server"] * window
    if cap <= 0:
        return 0.0, 0.0
    total = sum(int(r["gpus"]) * float(r["duration_s"]) for r in jl)
    inside = sum(int(r["gpus"]) * max(0.0, min(float(r["duration_s"]), window - float(r["submit_s"]))) for r in jl)
    return total / cap, inside / cap


def describe(cfg):
    """One line: trace, window, clusters."""
    window = f"{cfg['trace.from']}..{cfg['trace.to']}" if cfg["trace.from"] else "whole trace"
    vc = f" VC {cfg['trace.vc']}" if cfg["trace.vc"] else ""
    return (f"{os.path.basename(cfg['trace.file'])}{vc} {window}, "
            f"{cfg['cluster.training.servers']} x {cfg['cluster.training.gpus_per_server']} {cfg['cluster.training.gpu_type']}"
            f" + {cfg['cluster.inference.servers']} x {cfg['cluster.inference.gpus_per_server']} {cfg['cluster.inference.gpu_type']}")


def eff(cfg, w):
    return w ** cfg["model.eff_exponent"]


def best_rate(cfg, n, elastic):
    """Fastest rate a job of n requested workers can have on its home type (speed 1 relative to
    it): any size from min to max workers if elastic, on the fewest servers that hold them,
    paying the cross-server factor when that is two or more (docs/throughput_model.md)."""
    per_server = cfg["cluster.training.gpus_per_server"]
    sizes = [n]
    if elastic:
        lo = max(1, math.floor(n * cfg["jobs.min_workers_fraction"]))
        hi = math.ceil(n * cfg["jobs.max_workers_factor"])
        sizes = range(lo, hi + 1)
    best = 0.0
    for w in sizes:
        loc = 1.0 if w <= per_server else cfg["model.cross_server_eff"]
        best = max(best, w * eff(cfg, w) / (n * eff(cfg, n)) * loc)
    return best


def jct_bound(cfg, jl):
    """Mean JCT with no queuing at all and every job at its fastest rate for its whole run."""
    return statistics.fmean(float(r["duration_s"]) / best_rate(cfg, int(r["gpus"]), r["elastic"] == "1") for r in jl)


class Doc:
    def __init__(self, work):
        self.work = work
        self.lines = []

    def w(self, s=""):
        self.lines.append(s)

    def run(self, name):
        return os.path.join(self.work, name)

    def has(self, name):
        return os.path.exists(os.path.join(self.work, name, "summary.json"))

    def listing(self, name):
        path = os.path.join(self.work, name)
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return [line.rstrip("\n").split("|", 1) for line in f if line.strip()]


def main(work, out):
    d = Doc(work)
    w = d.w
    windows = d.listing("windows.txt")          # [[w0, "2017-10-14..2017-10-29"], ...]
    policies = [line[0] for line in d.listing("policies.txt")]
    sweep_w = open(os.path.join(work, "sweep_window.txt")).read().strip()
    tuned = len(windows) > 1
    role = {wid: ("tuning" if tuned and i == 0 else "evaluation") for i, (wid, _) in enumerate(windows)}
    order = [wid for wid, _ in windows if role[wid] == "evaluation"] + [wid for wid, _ in windows if role[wid] == "tuning"]
    cfgs = {wid: config(d.run(f"main-{wid}-aryl")) for wid, _ in windows}
    S = {(wid, p): summary(d.run(f"main-{wid}-{p}")) for wid, _ in windows for p in policies}
    RESC = {(wid, p): rescales_per_elastic(d.run(f"main-{wid}-{p}")) for wid, _ in windows for p in policies}
    for (wid, p), s in S.items():
        assert s["jobs_completed"] == s["jobs_submitted"], (wid, p)
    # Every main run of a window ran the same setup but for its policy: the printed
    # parameters hold for each of them.
    for wid, _ in windows:
        ref = {k: v for k, v in cfgs[wid].items() if k not in PER_RUN_KEYS}
        for p in policies:
            c = {k: v for k, v in config(d.run(f"main-{wid}-{p}")).items() if k not in PER_RUN_KEYS}
            assert c == ref, f"main-{wid}-{p} differs from main-{wid}-aryl in " + \
                ", ".join(k for k in set(c) | set(ref) if c.get(k) != ref.get(k))
    c0 = cfgs[order[0]]
    label = {wid: (f"{cfgs[wid]['trace.from']}..{cfgs[wid]['trace.to']}" if cfgs[wid]["trace.from"] else "whole trace")
             for wid, _ in windows}
    jl = {wid: jobs(d.run(f"main-{wid}-baseline")) for wid, _ in windows}

    w("# Results: capacity loaning and elastic scaling on public traces")
    w("")
    w(f"Generated by `scripts/experiments.sh` on {datetime.date.today()}; every figure and every parameter")
    w("below comes from the runs it makes (config.json, summary.json and jobs.csv of each), with the")
    w("invariant checker on.")
    w("")
    w("## Setup")
    if tuned:
        tw = [wid for wid in order if role[wid] == "tuning"][0]
        w(f"- **Tuning window** {label[tw]}: aryl's design choices (`scheduler.free_gpus_first`,")
        w("  the paid-scaling rule's `scheduler.preempt_ratio` and")
        w("  `scheduler.rescale_cooldown_s`, ...; docs/decisions/) were chosen on it. **Evaluation windows** "
          + ", ".join(label[wid] for wid in order if role[wid] == "evaluation") + ":")
        w("  never used for tuning. The all-policies tables are the evaluation windows'; the comparisons give")
        w(f"  the tuning window too, for reference. The sweeps and robustness variants run on {label[sweep_w]}, the")
        w("  design-choice ablations on the tuning window and on that evaluation window.")
    pooled = "" if c0["trace.format"] != "philly" else (
        f", virtual cluster {c0['trace.vc']}" if c0["trace.vc"] else ", all virtual clusters pooled")
    longest = max(float(r["duration_s"]) for wid in order for r in jl[wid])
    w(f"- Training jobs: `{os.path.basename(c0['trace.file'])}` ({c0['trace.format']}){pooled}, durations as recorded "
      f"(the longest {longest / 86400:.1f} days).")
    w("")
    w("| window | role | jobs | multi-GPU jobs | offered load | offered load inside the window |")
    w("|---|---|---|---|---|---|")
    for wid in order:
        load, inside = offered_load(cfgs[wid], jl[wid])
        multi = sum(1 for r in jl[wid] if int(r["gpus"]) > 1)
        w(f"| {label[wid]} | {role[wid]} | {len(jl[wid]):,} | {100 * multi / len(jl[wid]):.0f}% | {load:.2f} | {inside:.2f} |")
    w("")
    w("Offered load: GPU-seconds of the window's jobs over the training cluster's GPU-seconds in the")
    w("window; \"inside\" counts only the part of each job before the window ends.")
    w("")
    it = c0["cluster.inference.gpu_type"]
    tt = c0["cluster.training.gpu_type"]
    w(f"- Training cluster: {c0['cluster.training.servers']} servers x {c0['cluster.training.gpus_per_server']} {tt}"
      f" (speed {c0['gpu_speed.' + tt]:g}).")
    demand = f"`{os.path.basename(c0['inference.trace'])}` ({c0['inference.format']})" if c0["inference.trace"] else "a seeded synthetic daily cycle"
    w(f"- Inference cluster: {c0['cluster.inference.servers']} servers x {c0['cluster.inference.gpus_per_server']} {it}"
      f" (speed {c0['gpu_speed.' + it]:g} of a {tt}), demand from {demand}")
    w(f"  scaled so its peak needs {100 * c0['inference.peak_utilisation']:.0f}% of the servers, plus "
      f"{100 * c0['inference.headroom']:.0f}% headroom, checked every {c0['inference.interval_s']} s; reclaim grace "
      f"{c0['inference.grace_s']} s. Idle inference servers are loaned to "
      + ("any training job." if c0["scheduler.inelastic_on_loaned"] else "elastic training jobs."))
    w(f"- Jobs: {100 * c0['jobs.elastic_fraction']:.0f}% elastic (seeded), elastic min = max(1, floor(n x "
      f"{c0['jobs.min_workers_fraction']:g})), max = ceil(n x {c0['jobs.max_workers_factor']:g}) workers; restart overhead "
      f"{c0['jobs.restart_overhead_s']:g} s, scaling overhead {c0['jobs.scale_overhead_s']:g} s.")
    if "scheduler.scale_horizon" in c0:
        w(f"- aryl's elastic changes pay for themselves (docs/elastic.md, \"What a change of size must pay\"):"
          f" extras valued over their expected holding time (`scale_horizon={c0['scheduler.scale_horizon']}`),"
          f" a change's full cost plus a {c0['scheduler.rescale_margin_s']:g} s margin, a"
          f" {c0['scheduler.rescale_cooldown_s']:g} s cooldown, sizes whose GPUs each do at least"
          f" {c0['scheduler.min_extra_efficiency']:g} of a GPU's work at the minimum; a queued job preempts jobs whose"
          f" remaining time is above {c0['scheduler.preempt_ratio']:g}x its run plus their restart"
          f" (at most {c0['scheduler.max_preemptions']} preemptions a job).")
        floor = c0.get("scheduler.elastic_floor", "min")
        long_s = c0.get("scheduler.long_job_s", 0)
        w(f"- Elastic jobs start at their {'request' if floor == 'request' else 'minimum'} (`elastic_floor={floor}`, docs/elastic.md,"
          " \"The floor of an elastic job\")"
          + (f"; those predicted to run {long_s:,.0f} s or more start only on their fastest GPU type (`long_job_s`)"
             if long_s > 0 else "")
          + ("; a queued job takes extra workers' GPUs of a type before free GPUs of a slower one (`free_gpus_first=false`)."
             if not c0.get("scheduler.free_gpus_first", True) else "; a queued job takes free GPUs of any type before extra workers' GPUs."))
    w(f"- Checkpoints: every {c0['jobs.checkpoint_interval_s']:g} s of a job's run and at every stop; a stop's"
      f" checkpoint takes {c0['jobs.checkpoint_s']:g} s + {c0['jobs.checkpoint_per_gpu_s']:g} s per worker"
      f" (+-{100 * c0['jobs.checkpoint_jitter']:.0f}%), and a reclaimed server returns only once every job on it"
      " has checkpointed: reclaims take time and can miss their deadline.")
    w(f"- Throughput: eff(w) = w^{c0['model.eff_exponent']:g}, times {c0['model.cross_server_eff']:g} when a job's"
      f" workers span two or more servers (docs/throughput_model.md); {c0['placement']} placement; seed {c0['seed']}.")
    w("- JCT, queuing, **slowdown**, below-speed GPU-hours, GPU usage, **work efficiency** (raw and")
    w("  speed-weighted) and percentiles as summary.json gives them: docs/simulation.md, \"Measures\".")
    w("")

    def service_table(wid):
        w("| policy | mean queuing (s) | p95 queuing (s) | mean JCT (s) | p95 JCT (s) | mean slowdown | p95 slowdown |")
        w("|---|---|---|---|---|---|---|")
        for p in policies:
            s = S[(wid, p)]
            w(f"| {NAMES.get(p, p)} | {fmt_s(s['mean_queue_s'])} | {fmt_s(s['p95_queue_s'])} | {fmt_s(s['mean_jct_s'])} | "
              f"{fmt_s(s['p95_jct_s'])} | {s['mean_slowdown']:.2f} | {s['p95_slowdown']:.2f} |")
        w("")

    for wid in [wid for wid in order if role[wid] != "tuning"]:
        w(f"## {role[wid].capitalize()} window {label[wid]}: all policies")
        service_table(wid)

    losses = []
    for wid in order:
        a = S[(wid, "aryl")]
        for r in [p for p in policies if p != "aryl"]:
            b = S[(wid, r)]
            for key, what in (("mean_queue_s", "mean queuing"), ("mean_jct_s", "mean JCT"), ("mean_slowdown", "mean slowdown")):
                if b[key] < a[key]:
                    losses.append((wid, r, what, a[key], b[key]))
    w("## Where aryl loses")
    if not losses:
        w("Nowhere in the main tables: aryl has the lowest mean queuing, JCT and slowdown in every window.")
        w("")
    else:
        w("Every main-table mean where another policy beats aryl (aryl's value / the other's):")
        w("")
        for wid, r, what, av, bv in losses:
            f = (lambda x: f"{x:.2f}") if what == "mean slowdown" else (lambda x: f"{fmt_s(x)} s")
            w(f"- {label[wid]} ({role[wid]}): {what}, {NAMES.get(r, r)} {f(bv)} against aryl's {f(av)}.")
        w("")
        w("Slowdown splits into two parts (means over jobs): time queued and time running, each over")
        w("the job's duration at its requested size; a policy that starts jobs early at a lower speed")
        w("moves slowdown from the first part to the second.")
        w("")
        split = {}
        for wid in order:
            for p in policies:
                q = run_part = 0.0
                rows = jobs(d.run(f"main-{wid}-{p}"))
                for r in rows:
                    sd, jct = float(r["slowdown"]), float(r["jct_s"])
                    qp = sd * float(r["queued_s"]) / jct if jct > 0 else 0.0
                    q += qp
                    run_part += sd - qp
                split[(wid, p)] = (q / len(rows), run_part / len(rows))
        w("SRTF and LAS preempt running jobs for any shorter (SRTF) or less-served (LAS) one, so a short")
        w("job rarely waits behind a long one; aryl preempts for a queued job only past its ratio and at most")
        w("a set number of times per job (docs/preemption.md, \"Preemption for short jobs\"), and starts elastic")
        w(f"jobs at their {'request' if c0.get('scheduler.elastic_floor', 'min') == 'request' else 'minimum'},"
          " on loaned inference GPUs (slower) when the training GPUs are full: what")
        w("slowdown it keeps is from running, not from queuing. Per window, aryl against the policy with the")
        w("lowest mean slowdown:")
        w("")
        for wid in order:
            best = min((p for p in policies if p != "aryl"), key=lambda p: S[(wid, p)]["mean_slowdown"])
            (qa, ra), (qb, rb) = split[(wid, "aryl")], split[(wid, best)]
            w(f"- {label[wid]}: aryl {qa:.2f} from queuing + {ra:.2f} from running; {NAMES.get(best, best)} "
              f"{qb:.2f} + {rb:.2f}; below-speed GPU-h {fmt_s(S[(wid, 'aryl')]['below_speed_gpu_hours'])} against "
              f"{fmt_s(S[(wid, best)]['below_speed_gpu_hours'])} and SJF's {fmt_s(S[(wid, 'baseline')]['below_speed_gpu_hours'])}.")
        w("")

    # The paper's claims, each against the baseline it is measured against here.
    claims = [
        ("aryl vs strict FIFO (`fifo`): mean queuing", "fifo", "mean_queue_s", 1.53, False),
        ("aryl vs strict FIFO (`fifo`): mean JCT", "fifo", "mean_jct_s", 1.50, False),
        ("aryl vs strict FIFO (`fifo`): GPU usage while arriving", "fifo", "window_gpu_usage", 1.0, True),
        ("aryl vs FIFO + backfill: mean queuing", "fifo-backfill", "mean_queue_s", 1.53, False),
        ("aryl vs FIFO + backfill: mean JCT", "fifo-backfill", "mean_jct_s", 1.50, False),
        ("aryl vs FIFO + backfill: GPU usage while arriving", "fifo-backfill", "window_gpu_usage", 1.0, True),
        ("aryl vs SJF (`baseline`): mean queuing", "baseline", "mean_queue_s", 3.0, False),
        ("aryl vs SJF (`baseline`): mean JCT", "baseline", "mean_jct_s", 1.25, False),
    ]
    w("## Against the paper's claims")
    w("Targets are the paper's factors. Each row names the policy aryl is measured against; the FIFO")
    w("factors are checked against both strict FIFO and FIFO + backfill, the latter being the FIFO most")
    w("clusters run. The last column asks whether the factor holds in every evaluation window.")
    w("")
    w("| comparison | " + " | ".join(f"{label[wid]} ({role[wid]})" for wid in order) + " | target | met in every evaluation window |")
    w("|---|" + "---|" * len(order) + "---|---|")
    for name, rival, key, target, higher_better in claims:
        if rival not in policies:
            continue
        rs = {wid: (ratio(S[(wid, 'aryl')][key], S[(wid, rival)][key]) if higher_better
                    else ratio(S[(wid, rival)][key], S[(wid, 'aryl')][key])) for wid in order}
        met = all(rs[wid] >= target for wid in order if role[wid] == "evaluation")
        w(f"| {name} | " + " | ".join(fmt_r(rs[wid]) for wid in order) + f" | >= {target:.2f}x | {'yes' if met else 'NO'} |")
    w("")
    if "fifo" in policies and all("work_efficiency" in S[(wid, "aryl")] for wid in order):
        w("GPU usage counts GPU-seconds held, waste included, so with the same work offered it rises by")
        w("finishing more work inside the window or by holding GPUs the work does not need. aryl's work")
        w("efficiency against strict FIFO's (GPU-seconds held per GPU-second needed): " + ", ".join(
            f"{label[wid]} {S[(wid, 'aryl')]['work_efficiency']:.3f} / {S[(wid, 'fifo')]['work_efficiency']:.3f}"
            for wid in order) + ".")
        w("")
    rigid = [p for p in ("baseline", "sjf-backfill", "fifo", "fifo-backfill", "srtf", "las") if p in policies]
    others = [p for p in policies if p not in ("aryl", "loan-only", "elastic-only")]
    seeds_file = os.path.join(work, "seeds.txt")
    seeds = int(open(seeds_file).read()) if os.path.exists(seeds_file) else 1  # seeds.txt: SEEDS
    w("## Elastic decisions that pay for themselves: the targets")
    w("Each row in every window; the last column asks whether it holds in every evaluation window.")
    w("Work efficiency is compared with the best (lowest) rigid policy's; rescales are scale-ins plus")
    w("scale-outs of completed elastic jobs (moves to faster GPUs are counted apart, in events.log).")
    w("")
    w("| target | " + " | ".join(f"{label[wid]} ({role[wid]})" for wid in order) + " | met in every evaluation window |")
    w("|---|" + "---|" * len(order) + "---|")

    missed = {}  # target name -> evaluation windows where it is not met

    def target_row(name, value, ok, fmt):
        vals = {wid: value(wid) for wid in order}
        missed[name] = [wid for wid in order if role[wid] == "evaluation" and not ok(vals[wid])]
        w(f"| {name} | " + " | ".join(fmt(vals[wid]) for wid in order) + f" | {'NO' if missed[name] else 'yes'} |")

    jct_targets = [("baseline", 1.30), ("srtf", 1.15), ("sjf-backfill", 1.0), ("fifo-backfill", 1.0), ("las", 1.0)]
    for rival, t in jct_targets:
        if rival in policies:
            target_row(f"mean JCT vs {NAMES[rival]} >= {t:.2f}x" if t > 1 else f"mean JCT better than {NAMES[rival]}",
                       lambda wid, r=rival: ratio(S[(wid, r)]["mean_jct_s"], S[(wid, "aryl")]["mean_jct_s"]),
                       lambda v, t=t: v >= t if t > 1 else v > 1, fmt_r)
    for key, what in (("p95_jct_s", "p95 JCT"), ("mean_slowdown", "mean slowdown")):
        def best_other(wid, key=key):
            return min(others, key=lambda p: S[(wid, p)][key] if p != "aryl" else math.inf)
        target_row(f"{what} no worse than any baseline (aryl / best baseline)",
                   lambda wid, key=key: S[(wid, "aryl")][key] / S[(wid, best_other(wid))][key],
                   lambda v: v <= 1.0, lambda v: f"{v:.3f}")
    for key, what in (("work_efficiency", "raw"), ("work_efficiency_speed_weighted", "speed-weighted")):
        if all(key in S[(wid, "aryl")] for wid in order):
            target_row(f"work efficiency ({what}) within 10% of the rigid policies' (aryl / best rigid)",
                       lambda wid, key=key: S[(wid, "aryl")][key] / min(S[(wid, p)][key] for p in rigid),
                       lambda v: v <= 1.10, lambda v: f"{v:.3f}")
    target_row("rescales per elastic job <= 2", lambda wid: RESC[(wid, "aryl")], lambda v: v <= 2.0, lambda v: f"{v:.2f}")
    w("")
    def missed_in(prefix):
        return sorted({wid for name, wids in missed.items() if name.startswith(prefix) for wid in wids})

    if any(missed.values()):
        w("Where a row says NO, why (figures from the runs):")
        for wid in missed_in("mean JCT vs"):
            exact = ", ".join(f"{ratio(S[(wid, r)]['mean_jct_s'], S[(wid, 'aryl')]['mean_jct_s']):.4f}x vs {NAMES[r]}"
                              for r, t in jct_targets if t > 1 and r in policies)
            w(f"- **Mean JCT, {label[wid]}** ({exact}). The JCT bound below (no queuing, every job at its fastest size")
            w("  for its whole run) gives the window's room: SJF's distance to it and the share aryl closes.")
        for wid in missed_in("p95 JCT"):
            best = min(others, key=lambda p: S[(wid, p)]["p95_jct_s"])
            mine = {r["job"]: r for r in jobs(d.run(f"main-{wid}-aryl")) if r["outcome"] == "done"}
            theirs = {r["job"]: r for r in jobs(d.run(f"main-{wid}-{best}")) if r["outcome"] == "done"}
            cut = S[(wid, best)]["p95_jct_s"]
            over = [r for k, r in mine.items() if float(r["jct_s"]) > cut and k in theirs and float(theirs[k]["jct_s"]) <= cut]
            elastic = [r for r in over if r["elastic"] == "1"]
            stretch = statistics.fmean(float(r["jct_s"]) / float(r["duration_s"]) for r in over) if over else 0
            w(f"- **p95 JCT, {label[wid]}.** {len(over)} jobs end above {NAMES.get(best, best)}'s p95 JCT"
              f" ({fmt_s(cut)} s) under aryl and below it under {NAMES.get(best, best)};")
            ran = sum(float(r["jct_s"]) - float(r["queued_s"]) for r in over)
            loaned = sum(float(r["on_loaned_s"]) for r in over)
            w(f"  {len(elastic)} of them are elastic, and their JCT is {stretch:.2f}x their duration on average: long")
            w("  stretches at their minimum workers or on loaned GPUs, where the rival runs each job at its")
            w(f"  requested size once started ({100 * loaned / ran if ran > 0 else 0:.0f}% of their running time was on loaned GPUs).")
            if (wid, "elastic-only") in S:
                eo = S[(wid, "elastic-only")]["p95_jct_s"] / cut
                if eo > 1:
                    w(f"  Without loaning (`elastic-only`) the ratio is {eo:.3f}, so loaned GPUs do not cause it: elastic")
                    w("  jobs run at their minimum while queued base demand takes every freed GPU, the trade-off of")
                    w("  base demand first that buys the mean queuing and JCT above. The floor that removes this tail,")
                    w("  and the GPU-hours it costs: docs/elastic.md, \"The floor of an elastic job\".")
                else:
                    w(f"  Without loaning (`elastic-only`) the ratio is {eo:.3f}: the loaned GPUs' lower speed is the cause.")
            if seeds > 1:
                w(f"  The same ratio with seeds 1 to {seeds}: \"The targets over seeds\" below.")
        for wid in missed_in("mean slowdown"):
            best = min(others, key=lambda p: S[(wid, p)]["mean_slowdown"])
            w(f"- **Mean slowdown, {label[wid]}.** {NAMES.get(best, best)} preempts "
              f"{S[(wid, best)]['preemptions']:,} times against aryl's {S[(wid, 'aryl')]['preemptions']:,}; aryl's")
            w("  slowdown is from running (the split below): elastic jobs at their minimum and on loaned GPUs.")
        for wid in missed_in("work efficiency") + missed_in("rescales"):
            w(f"- **{label[wid]}**: see the ablations (\"Design choices\") for which rule moves it.")
        w("")

    if seeds > 1:
        def seed_run(wid, s, p):
            return f"main-{wid}-{p}" if s == 1 else f"seed-{wid}-{s}-{p}"
        SS = {}
        for wid in order:
            for s in range(1, seeds + 1):
                for p in ["aryl"] + others:
                    run = seed_run(wid, s, p)
                    if s > 1:  # the main run's settings but for the seed
                        mine = config(d.run(run))
                        ref = {k: v for k, v in config(d.run(f"main-{wid}-{p}")).items() if k not in ("seed", "run.out")}
                        c = {k: v for k, v in mine.items() if k not in ("seed", "run.out")}
                        assert c == ref, f"{run} differs from main-{wid}-{p} in " + \
                            ", ".join(k for k in set(c) | set(ref) if c.get(k) != ref.get(k))
                        assert mine.get("seed") == s, f"{run} did not run with seed {s}"
                    SS[(wid, s, p)] = summary(d.run(run))
                    assert SS[(wid, s, p)]["jobs_completed"] == SS[(wid, s, p)]["jobs_submitted"], run

        def spread(xs, fmt):
            return f"{fmt(min(xs))} / {fmt(statistics.median(xs))} / {fmt(max(xs))}"

        w("### The targets over seeds")
        w(f"The main runs again with seeds 1 to {seeds} (seed 1: the tables above). The seed draws which jobs are")
        w("elastic and each stop's checkpoint time; the trace and every other setting are the same, and all")
        w("policies of a seed get the same draw. Ratios as in the targets above, each seed against its own")
        w("baselines; min / median / max over the seeds, and how many seeds miss the target.")
        w("")
        w("| window | p95 JCT: aryl / best baseline | seeds above 1 | mean slowdown: aryl / best baseline | seeds above 1 |"
          + (" mean JCT vs SJF (>= 1.30x) |" if "baseline" in others else "")
          + (" mean JCT vs SRTF (>= 1.15x) |" if "srtf" in others else ""))
        w("|---|---|---|---|---|" + "---|" * sum(p in others for p in ("baseline", "srtf")))
        for wid in order:
            cells = []
            for key in ("p95_jct_s", "mean_slowdown"):
                rs = [SS[(wid, s, "aryl")][key] / min(SS[(wid, s, p)][key] for p in others)
                      for s in range(1, seeds + 1)]
                cells += [spread(rs, lambda v: f"{v:.3f}"), f"{sum(r > 1 for r in rs)} of {seeds}"]
            for rival, t in (("baseline", 1.30), ("srtf", 1.15)):
                if rival in others:
                    rs = [ratio(SS[(wid, s, rival)]["mean_jct_s"], SS[(wid, s, "aryl")]["mean_jct_s"])
                          for s in range(1, seeds + 1)]
                    cells.append(spread(rs, fmt_r) + f" ({sum(r < t for r in rs)} below)")
            w(f"| {label[wid]} ({role[wid]}) | " + " | ".join(cells) + " |")
        w("")

    w("### JCT bound under the locality model")
    w("With no queuing at all and every job at its fastest size for its whole run (elastic jobs at the")
    w("size between min and max with the highest rate, rigid jobs at their request, each on the fewest")
    w("servers that hold it, paying the cross-server factor when that is two or more):")
    w("")
    w("| window | bound (s) | SJF mean JCT (s) | aryl mean JCT (s) | SJF / bound | SJF / aryl | aryl's share of the gap |")
    w("|---|---|---|---|---|---|---|")
    for wid in order:
        bound = jct_bound(cfgs[wid], jl[wid])
        b, a = S[(wid, "baseline")]["mean_jct_s"], S[(wid, "aryl")]["mean_jct_s"]
        share = (b - a) / (b - bound) if b > bound else math.nan
        w(f"| {label[wid]} ({role[wid]}) | {fmt_s(bound)} | {fmt_s(b)} | {fmt_s(a)} | {b / bound:.2f}x | {b / a:.2f}x | {100 * share:.0f}% |")
    w("")

    sw = label[sweep_w]
    w(f"## Misprediction sweep (error up to +-25%; window {sw}, {role[sweep_w]})")
    w("| mispredicted jobs | strict FIFO queuing | FIFO + backfill queuing | SJF queuing | aryl queuing | aryl vs strict FIFO queuing | aryl vs FIFO + backfill queuing | aryl vs strict FIFO JCT | aryl vs SJF queuing | aryl vs SJF JCT | aryl mean slowdown |")
    w("|---|---|---|---|---|---|---|---|---|---|---|")
    for f in ["0", "0.2", "0.4", "0.6"]:
        fi, fb, ba, ar = (summary(d.run(f"mis-{f}-{p}")) for p in ("fifo", "fifo-backfill", "baseline", "aryl"))
        w(f"| {100 * config(d.run(f'mis-{f}-aryl'))['jobs.mispredict_fraction']:.0f}% | {fmt_s(fi['mean_queue_s'])} | "
          f"{fmt_s(fb['mean_queue_s'])} | {fmt_s(ba['mean_queue_s'])} | {fmt_s(ar['mean_queue_s'])} | "
          f"{fmt_r(ratio(fi['mean_queue_s'], ar['mean_queue_s']))} | {fmt_r(ratio(fb['mean_queue_s'], ar['mean_queue_s']))} | "
          f"{fmt_r(ratio(fi['mean_jct_s'], ar['mean_jct_s']))} | "
          f"{fmt_r(ratio(ba['mean_queue_s'], ar['mean_queue_s']))} | {fmt_r(ratio(ba['mean_jct_s'], ar['mean_jct_s']))} | "
          f"{ar['mean_slowdown']:.2f} |")
    w("")
    w("Targets: >= 1.76x lower mean queuing than FIFO (the paper's; here against FIFO + backfill too)")
    w("and >= 1.2x lower mean JCT than SJF, with 60% of predictions wrong; SJF and aryl mispredict alike.")
    for wid in order:
        if wid == sweep_w or role[wid] != "evaluation" or not d.has(f"mis-{wid}-aryl"):
            continue
        fb, ba, ar = (summary(d.run(f"mis-{wid}-{p}")) for p in ("fifo-backfill", "baseline", "aryl"))
        w(f"With 60% mispredicted on {label[wid]} ({role[wid]}): aryl vs FIFO + backfill queuing "
          f"{fmt_r(ratio(fb['mean_queue_s'], ar['mean_queue_s']))}, aryl vs SJF JCT {fmt_r(ratio(ba['mean_jct_s'], ar['mean_jct_s']))}.")
    w("")
    base = S[(sweep_w, "baseline")]
    w(f"## Elastic fraction sweep (aryl; window {sw}, {role[sweep_w]}; SJF does not depend on it)")
    w("| elastic jobs | mean queuing (s) | mean JCT (s) | mean slowdown | below-speed GPU-h | vs SJF queuing | vs SJF JCT | scale-ins | scale-outs |")
    w("|---|---|---|---|---|---|---|---|---|")
    for e in ["0.25", "0.5", "0.75", "1"]:
        s = summary(d.run(f"ela-{e}-aryl"))
        w(f"| {100 * config(d.run(f'ela-{e}-aryl'))['jobs.elastic_fraction']:.0f}% | {fmt_s(s['mean_queue_s'])} | "
          f"{fmt_s(s['mean_jct_s'])} | {s['mean_slowdown']:.2f} | {fmt_s(s['below_speed_gpu_hours'])} | "
          f"{fmt_r(ratio(base['mean_queue_s'], s['mean_queue_s']))} | {fmt_r(ratio(base['mean_jct_s'], s['mean_jct_s']))} | "
          f"{s['scale_ins']:,} | {s['scale_outs']:,} |")
    w("")

    variants = d.listing("variants.txt")
    if variants:
        w(f"## Robustness: one setting changed (window {sw}, {role[sweep_w]})")
        w("Same setup as that window's main runs with the one setting named changed (`scripts/experiments.sh`).")
        w("")
        w("| variant | jobs | aryl vs strict FIFO queuing | aryl vs strict FIFO JCT | aryl vs SJF queuing | aryl vs SJF JCT | aryl vs SJF slowdown | usage while arriving (strict FIFO / SJF / aryl) |")
        w("|---|---|---|---|---|---|---|---|")
        for i, lab in variants:
            fi, ba, ar = (summary(d.run(f"rob-{i}-{p}")) for p in ("fifo", "baseline", "aryl"))
            w(f"| {lab} | {ar['jobs_completed']:,} | {fmt_r(ratio(fi['mean_queue_s'], ar['mean_queue_s']))} | "
              f"{fmt_r(ratio(fi['mean_jct_s'], ar['mean_jct_s']))} | {fmt_r(ratio(ba['mean_queue_s'], ar['mean_queue_s']))} | "
              f"{fmt_r(ratio(ba['mean_jct_s'], ar['mean_jct_s']))} | {fmt_r(ratio(ba['mean_slowdown'], ar['mean_slowdown']))} | "
              f"{fi['window_gpu_usage']:.3f} / {ba['window_gpu_usage']:.3f} / {ar['window_gpu_usage']:.3f} |")
        w("")
        lost = [(i, lab) for i, lab in variants
                if any(summary(d.run(f"rob-{i}-baseline"))[k] < summary(d.run(f"rob-{i}-aryl"))[k]
                       for k in ("mean_queue_s", "mean_jct_s"))]
        for i, lab in lost:
            w(f"aryl loses to SJF with **{lab}**. Mean queuing (s) by job class, SJF / aryl:")
            w("")
            w("| jobs | count | SJF | aryl |")
            w("|---|---|---|---|")
            classes = {}
            for p in ("baseline", "aryl"):
                for r in jobs(d.run(f"rob-{i}-{p}")):
                    k = ("elastic" if r["elastic"] == "1" else "rigid") + (", multi-GPU" if int(r["gpus"]) > 1 else ", one GPU")
                    classes.setdefault(k, {}).setdefault(p, []).append(float(r["queued_s"]))
            for k in sorted(classes):
                w(f"| {k} | {len(classes[k]['aryl']):,} | {fmt_s(statistics.fmean(classes[k]['baseline']))} | "
                  f"{fmt_s(statistics.fmean(classes[k]['aryl']))} |")
            w("")

    ablations = d.listing("ablations.txt")
    if ablations:
        tw = order[-1]
        small = config(d.run("abl-0-small"))
        cols = [("tune", tw, f"{label[tw]} ({role[tw]})")]
        if tuned:
            cols.append(("eval", sweep_w, f"{label[sweep_w]} ({role[sweep_w]})"))
        w("## Design choices (aryl with one knob changed; docs/decisions/)")
        w(f"Mean JCT / p95 JCT / mean queuing in seconds, mean slowdown, preemptions, rescales per elastic")
        w(f"job, work efficiency (speed-weighted). `small`: {describe(small)}.")
        w("")
        heads = "JCT / p95 JCT / queuing | slowdown | preemptions | rescales per elastic job | work efficiency"
        w("| aryl with | " + " | ".join(f"{c[2]}: {heads}" for c in cols) + f" | small: {heads} |")
        w("|---|" + "---|---|---|---|---|" * (len(cols) + 1))

        def cells(run):
            s = summary(run)
            return (f"{fmt_s(s['mean_jct_s'])} / {fmt_s(s['p95_jct_s'])} / {fmt_s(s['mean_queue_s'])} | "
                    f"{s['mean_slowdown']:.2f} | {s['preemptions']:,} | {rescales_per_elastic(run):.2f} | "
                    f"{fmt_eff(s, 'work_efficiency_speed_weighted')}")

        for i, lab in ablations:
            row = [d.run(f"main-{wid}-aryl" if i == "0" else f"abl-{i}-{tag}") for tag, wid, _ in cols]
            row.append(d.run(f"abl-{i}-small"))
            w(f"| {lab} | " + " | ".join(cells(r) for r in row) + " |")
        for p in ["baseline", "elastic-only"]:
            row = [d.run(f"main-{wid}-{p}") for _, wid, _ in cols] + [d.run(f"abl-{p}-small")]
            w(f"| ({NAMES[p]}, for reference) | " + " | ".join(cells(r) for r in row) + " |")
        w("")
        # Consolidation moves only when a job is spread and GPUs are free: how often it did.
        def consolidations(run):
            path = os.path.join(run, "events.log")
            if not os.path.exists(path):
                return None
            with open(path, errors="replace") as f:
                return sum(" | consolidate onto " in line for line in f)
        counts = []
        for i, lab in ablations:
            row = [d.run(f"main-{wid}-aryl" if i == "0" else f"abl-{i}-{tag}") for tag, wid, _ in cols]
            row.append(d.run(f"abl-{i}-small"))
            n = [consolidations(r) for r in row]
            if any(n):
                counts.append(f"{lab}: " + " / ".join("?" if x is None else f"{x:,}" for x in n))
        w("Consolidations (events.log lines `consolidate onto`, per column): " +
          ("; ".join(counts) if counts else "none in any run") +
          ". Where a row is not listed it made none: with the efficiency floor on, growth seldom spreads a job, "
          "and spreads left by base demand happen when no GPU is free.")
        w("")

    fault_runs = d.listing("faults.txt")
    if fault_runs:
        fc = config(d.run("flt-0-aryl"))
        w("## Faults: server and worker crashes, slow checkpoints, inference surges")
        w(f"{describe(fc)}, with seeded random faults (docs/faults.md): a crashed training server is back")
        w(f"after an exponential time of mean {fc['faults.random.mean_down_s']:g} s; its loss is noticed after "
          f"{fc['faults.missed_heartbeats']} missed heartbeats of {fc['faults.heartbeat_s']:g} s; jobs restart from their")
        w(f"last checkpoint (every {fc['jobs.checkpoint_interval_s']:g} s) and fail after {fc['faults.max_retries']} restarts.")
        w("Lost GPU-h: work since the last checkpoint plus GPUs held while stalled. Recovery: a crashed")
        w("job's time from its first crash to running again (queuing included).")
        w("")
        w("| faults | policy | mean queuing (s) | mean JCT (s) | failed jobs | lost GPU-h | recovery p50 / max (s) | reclaim latency p50 / p99 (s) | reclaim SLO misses (latest, s) |")
        w("|---|---|---|---|---|---|---|---|---|")
        for i, lab in fault_runs:
            for p in ("baseline", "aryl"):
                s = summary(d.run(f"flt-{i}-{p}"))
                w(f"| {lab} | {NAMES.get(p, p)} | {fmt_s(s['mean_queue_s'])} | {fmt_s(s['mean_jct_s'])} | "
                  f"{s['jobs_failed']} | {s['lost_gpu_hours']:.1f} | {fmt_s(s['recovery_p50_s'])} / {fmt_s(s['recovery_max_s'])} | "
                  f"{s['reclaim_latency_p50_s']:.1f} / {s['reclaim_latency_p99_s']:.1f} | "
                  f"{s['reclaim_slo_misses']} ({s['reclaim_max_late_s']:.1f}) |")
        w("")
        w("- Means are over the jobs that completed. Under crashes the jobs that exhaust their restarts")
        w("  are mostly the long ones (they meet the most crashes), so mean JCT over the survivors falls:")
        w("  compare failed jobs and lost GPU-hours across rows, not the means.")
        w("- Most reclaims hand back servers no job runs on, at once, so reclaim latency percentiles are")
        w("  often 0; the SLO column counts the reclaims that waited for checkpoints past the grace period")
        w(f"  ({fc['inference.grace_s']} s), with the latest return past its deadline. Slow checkpoints cost aryl")
        w("  inference SLO misses, not training time; SJF lends nothing, so it has none to miss.")
        w("")
        w("![Faults: lost GPU-hours, failed jobs, SLO misses and mean JCT per scenario](plots/faults.png)")
        w("")

    multi = d.listing("multi.txt")
    if multi:
        mc = config(d.run("multi-0"))
        mj = jobs(d.run("multi-0"))
        load, inside = offered_load(mc, mj)
        sizes = {}
        for r in mj:
            sizes[int(r["gpus"])] = sizes.get(int(r["gpus"]), 0) + 1
        per = mc["cluster.training.gpus_per_server"]
        span = sum(1 for r in mj if int(r["gpus"]) > per)
        w("## Many multi-GPU jobs: Philly jobs of 4 GPUs or more")
        w(f"{describe(mc)}: the trace's jobs of >= 4 GPUs only ({len(mj):,} jobs; sizes "
          + ", ".join(f"{g}: {n:,}" for g, n in sorted(sizes.items()))
          + f"), offered load {load:.2f} ({inside:.2f} inside the window). {100 * span / len(mj):.0f}% of the jobs ask for more")
        w(f"than one server's {per} GPUs and pay the cross-server factor {mc['model.cross_server_eff']:g} at their requested size;")
        w("elastic extras beyond one server pay it too. Other settings as in the main runs.")
        w("")
        w("| run | mean queuing (s) | mean JCT (s) | p95 JCT (s) | mean slowdown | p95 slowdown | below-speed GPU-h | loaned GPU-h | usage while arriving | preemptions |")
        w("|---|---|---|---|---|---|---|---|---|---|")
        ms = {lab: summary(d.run(f"multi-{i}")) for i, lab in multi}
        for i, lab in multi:
            s = ms[lab]
            assert s["jobs_completed"] == s["jobs_submitted"], lab
            w(f"| {lab} | {fmt_s(s['mean_queue_s'])} | {fmt_s(s['mean_jct_s'])} | {fmt_s(s['p95_jct_s'])} | "
              f"{s['mean_slowdown']:.2f} | {s['p95_slowdown']:.2f} | {fmt_s(s['below_speed_gpu_hours'])} | "
              f"{fmt_s(s['loaned_gpu_hours'])} | {s['window_gpu_usage']:.3f} | {s['preemptions']:,} |")
        w("")
        pairs = [(a, b) for a, b in (("aryl", "SJF (baseline)"), ("aryl, locality off", "SJF (baseline), locality off"))
                 if a in ms and b in ms]
        for a, b in pairs:
            w(f"- {a} against {b}: mean queuing {fmt_r(ratio(ms[b]['mean_queue_s'], ms[a]['mean_queue_s']))}, "
              f"mean JCT {fmt_r(ratio(ms[b]['mean_jct_s'], ms[a]['mean_jct_s']))}, "
              f"mean slowdown {fmt_r(ratio(ms[b]['mean_slowdown'], ms[a]['mean_slowdown']))} (above 1x aryl is better).")
        if len(pairs) == 2:
            on, off = pairs
            w(f"- The cross-server cost takes aryl's mean JCT from {fmt_s(ms[off[0]]['mean_jct_s'])} s to "
              f"{fmt_s(ms[on[0]]['mean_jct_s'])} s and SJF's from {fmt_s(ms[off[1]]['mean_jct_s'])} s to "
              f"{fmt_s(ms[on[1]]['mean_jct_s'])} s.")
        w("")

    w("## Plots")
    w(f"Main runs of the window {sw} ({role[sweep_w]}).")
    w("")
    w("![JCT CDF](plots/jct_cdf.png)")
    w("")
    w("![Slowdown CDF](plots/slowdown_cdf.png)")
    w("")
    w("![Queue, usage and loaned servers over time](plots/timeline.png)")
    text = "\n".join(d.lines) + "\n"
    with open(out, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--describe":
        print(describe(config(sys.argv[2])))
    elif len(sys.argv) == 3:
        main(sys.argv[1], sys.argv[2])
    else:
        sys.exit(__doc__)
