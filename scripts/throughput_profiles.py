#!/usr/bin/python3
"""The figures of docs/throughput_model.md, sections 1 and 2, from the Pollux goodput profiles:
the scaling exponent `e` fitted per model and GPU type, the median eff(w) curves, and the per-GPU
throughput of each GPU type relative to V100 (section 3, locality: tests/solvers/test_locality.cpp).

  scripts/throughput_profiles.py SIA_TRACES     the profiles' sia/traces folder (<model>/placements-<type>.csv)

Method (docs/throughput_model.md, "Data and method"): with the per-GPU batch b fixed,
eff(w, b) = t(1, b) / t(w, b); *packed* takes each w on the fewest nodes measured (placements-*.csv,
one digit per node, and scalability-*.csv); the reference batch is the largest measured at the
largest w; e is the least-squares slope through the origin of ln eff on ln w, w >= 2.
"""
import csv
import math
import os
import statistics
import sys
from collections import defaultdict

TYPES = {"aws": "T4", "azure": "V100", "dgx-ext": "A100", "rtx": "RTX", "quad": "Quadro"}
NODE_GPUS = {"aws": 4, "azure": 8, "dgx-ext": 8, "rtx": 8, "quad": 4}
MODELS = ["bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3"]
RATIO_MODELS = ["bert", "cifar10", "deepspeech2", "imagenet", "yolov3"]  # ncf is host-bound


def points(root, model, kind):
    """(workers, nodes, batch) -> mean step time, from both files of a model and GPU type."""
    found = defaultdict(list)
    with open(os.path.join(root, model, f"placements-{kind}.csv")) as f:
        for r in csv.DictReader(f):
            p = r["placement"]
            found[(sum(map(int, p)), len(p), int(r["local_bsz"]))].append(float(r["step_time"]))
    path = os.path.join(root, model, f"scalability-{kind}.csv")
    if os.path.exists(path):
        with open(path) as f:
            for r in csv.DictReader(f):
                found[(int(r["num_replicas"]), int(r["num_nodes"]), int(r["local_bsz"]))].append(
                    float(r["step_time"]))
    return {k: statistics.mean(v) for k, v in found.items()}


def packed(pts, one_node=False):
    """(w, b) -> step time on the fewest nodes measured for w (one node only if asked)."""
    fewest = {}
    for (w, n, _b) in pts:
        if not one_node or n == 1:
            fewest[w] = min(fewest.get(w, n), n)
    return {(w, b): t for (w, n, b), t in pts.items() if fewest.get(w) == n}


def reference_batch(sel):
    wmax = max(w for w, _ in sel)
    return max(b for w, b in sel if w == wmax)


def slope(sel, b, wmax=None):
    xs = [(math.log(w), math.log(sel[(1, b)] / sel[(w, b)]))
          for (w, bb) in sel if bb == b and w >= 2 and (wmax is None or w <= wmax) and (1, b) in sel]
    return sum(x * y for x, y in xs) / sum(x * x for x, _ in xs) if xs else None


def section1(root):
    fits, within, smallest, curves = {}, {}, {}, {}
    for m in MODELS:
        for k in TYPES:
            pts = points(root, m, k)
            sel = packed(pts)
            b = reference_batch(sel)
            fits[(m, k)] = slope(sel, b)
            within[(m, k)] = slope(sel, b, NODE_GPUS[k])
            smallest[(m, k)] = slope(sel, min(bb for w, bb in sel if w == 1))
            curves[(m, k)] = {w: sel[(1, b)] / sel[(w, b)] for (w, bb) in sel if bb == b and (1, b) in sel}
    v = list(fits.values())
    print(f"## 1. e over {len(v)} model x type fits")
    print(f"packed: median {statistics.median(v):.3f}, mean {statistics.mean(v):.3f}; within a node "
          f"(w up to a node's GPUs): median {statistics.median([x for x in within.values() if x is not None]):.3f}; "
          f"at the smallest batch: median {statistics.median(smallest.values()):.3f}")
    print("by type (packed): " + ", ".join(
        f"{n} {statistics.median([e for (m, k), e in fits.items() if k == t]):.3f}" for t, n in TYPES.items()))
    for label, d in (("packed", fits), ("within a node", within)):
        lo = min((e, m, k) for (m, k), e in d.items() if e is not None)
        hi = max((e, m, k) for (m, k), e in d.items() if e is not None)
        print(f"range ({label}): {hi[0]:+.2f} ({hi[1]} on {TYPES[hi[2]]}) to {lo[0]:+.2f} ({lo[1]} on {TYPES[lo[2]]})")
    print("\nmedian eff(w), reference batch, packed:")
    ws = [2, 4, 8, 16, 24, 32, 64]
    print("| w | " + " | ".join(map(str, ws)) + " |")
    medians = {}
    for label, kinds in (("8-GPU servers (V100, A100, RTX)", ["azure", "dgx-ext", "rtx"]), ("T4, 4-GPU servers", ["aws"])):
        row = []
        for w in ws:
            v = [curves[(m, k)][w] for m in MODELS for k in kinds if w in curves[(m, k)]]
            row.append(f"{statistics.median(v):.2f}" if v else "–")
            if v:
                medians.setdefault(label, {})[w] = statistics.median(v)
        print(f"| {label} | " + " | ".join(row) + " |")
    eight = medians["8-GPU servers (V100, A100, RTX)"]
    def fit_curve(limit):
        xs = [(math.log(w), math.log(e)) for w, e in eight.items() if w <= limit]
        return sum(x * y for x, y in xs) / sum(x * x for x, _ in xs)
    print(f"fit to the 8-GPU median curve: {fit_curve(8):.3f} (w <= 8), {fit_curve(10**9):.3f} (all)")


def section2(root):
    print("\n## 2. per-GPU throughput relative to V100, 1 GPU")
    rows = {"median (equal batch)": {}, "geometric mean": {}, "peak vs peak, median": {}}
    for k, n in TYPES.items():
        if k == "azure":
            continue
        eq, peak = [], []
        for m in RATIO_MODELS:
            v = {b: t for (w, _n, b), t in points(root, m, "azure").items() if w == 1 and _n == 1}
            x = {b: t for (w, _n, b), t in points(root, m, k).items() if w == 1 and _n == 1}
            b = max(set(v) & set(x))
            eq.append(v[b] / x[b])
            peak.append(max(bb / t for bb, t in x.items()) / max(bb / t for bb, t in v.items()))
        rows["median (equal batch)"][n] = statistics.median(eq)
        rows["geometric mean"][n] = math.exp(statistics.mean(map(math.log, eq)))
        rows["peak vs peak, median"][n] = statistics.median(peak)
    v = {b: t for (w, n, b), t in points(root, "ncf", "azure").items() if w == 1 and n == 1}
    x = {b: t for (w, n, b), t in points(root, "ncf", "aws").items() if w == 1 and n == 1}
    r = [v[b] / x[b] for b in set(v) & set(x)]
    print(f"ncf, left out: T4 over V100 at equal batch {min(r):.1f}x to {max(r):.1f}x (host-bound)")
    names = [n for k, n in TYPES.items() if k != "azure"]
    print("| | " + " | ".join(names) + " |")
    for label, r in rows.items():
        print(f"| {label} | " + " | ".join(f"{r[n]:.2f}" for n in names) + " |")


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.exit("usage: scripts/throughput_profiles.py SIA_TRACES (the profiles' sia/traces folder)")
    try:
        section1(sys.argv[1])
        section2(sys.argv[1])
    except (OSError, KeyError, ValueError) as e:
        sys.exit(f"throughput_profiles: {sys.argv[1]}: {e}")


if __name__ == "__main__":
    main()
