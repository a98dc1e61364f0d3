#!/usr/bin/python3
"""Runs a grid of `aryl simulate` configurations and tabulates their summaries (docs/sweep.md).

  scripts/sweep.py --out sweeps/a --policies fifo,aryl --seeds 1-3 \
      --set synthetic.jobs=500,2000 -- --servers 32 --check-invariants
  scripts/sweep.py --out sweeps/b --runs runs.tsv      one named run per line: NAME<TAB>FLAGS

The grid is policies x each --set axis (in the order given) x seeds, seeds varying fastest; point i
is always the same command for the same grid arguments, which is what lets a Slurm job array
(--emit-slurm) run point $SLURM_ARRAY_TASK_ID on its own and --collect gather the table later.
A list of runs that no grid describes (scripts/experiments.sh's, each with its own settings) is
given with --runs instead; line i is then point i, with the same runner, table and modes.
Only the standard library is used, so any python3 >= 3.8 runs it.
"""
import argparse
import concurrent.futures
import csv
import itertools
import json
import os
import re
import shlex
import subprocess
import sys
import time

# Settings the grid itself owns: a fixed flag or axis may not set them behind its back.
OWNED_FLAGS = {"--policy", "--seed", "--out", "--mode", "--speedup"}
OWNED_KEYS = {"policy", "seed", "run.out", "run.mode", "run.speedup"}
# sweep.py's own modes; after `--` they would silently become simulate flags.
SWEEP_FLAGS = {"--list", "--point", "--collect", "--emit-slurm", "--jobs", "--sbatch", "--runs"}
# A run's directory is its name under --out, so a name is one plain path component.
RUN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._=+-]*")
# The Markdown table's columns (when present); the CSV has every field of summary.json.
MD_FIELDS = ["jobs_completed", "mean_queue_s", "mean_jct_s", "p95_jct_s", "makespan_s", "gpu_usage",
             "training_gpu_usage", "loaned_server_hours", "preemptions", "scale_outs"]
STDERR_TAIL = 15


class GridError(Exception):
    pass


def parse_seeds(text):
    seeds = []
    for part in text.split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part.strip())
        if not m:
            raise GridError(f"--seeds: '{part}' is not a seed or a range a-b of seeds")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if hi < lo:
            raise GridError(f"--seeds: range '{part}' is empty")
        seeds.extend(range(lo, hi + 1))
    return seeds


def parse_axis(text):
    key, eq, values = text.partition("=")
    if not eq or not key:
        raise GridError(f"--set '{text}': expected key=value1,value2,...")
    if key in OWNED_KEYS:
        raise GridError(f"--set '{text}': {key} is set by the grid (use --policies, --seeds, --out)")
    return key, values.split(",")


def check_fixed(flags):
    for i, flag in enumerate(flags):
        name, _, value = flag.partition("=")
        if name in SWEEP_FLAGS:
            raise GridError(f"'{flag}' is a sweep.py flag: put it before `--` (after it come simulate flags)")
        if name == "--set" and not value and i + 1 < len(flags):
            value = flags[i + 1]
        if name in OWNED_FLAGS or (name == "--set" and value.split("=", 1)[0] in OWNED_KEYS):
            shown = f"--set {value}" if name == "--set" else flag
            raise GridError(f"fixed simulate flag '{shown}' is set by the grid (use --policies, --seeds, --out)")


def read_runs(path):
    """[(name, flags, where)] of a runs file: NAME<TAB>FLAGS per line, FLAGS split as a POSIX shell would
    (quotes and backslashes, no expansion); blank lines and lines starting with # are skipped."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise GridError(f"--runs {path}: {e.strerror}")
    runs, seen = [], {}
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"--runs {path}:{number}"
        name, tab, text = line.partition("\t")
        if not tab:
            raise GridError(f"{where}: expected NAME<TAB>FLAGS, found no tab")
        if not RUN_NAME.fullmatch(name):
            raise GridError(f"{where}: run name '{name}' is not letters, digits and ._=+- (not starting with . = + -)")
        if name in seen:
            raise GridError(f"{where}: run name '{name}' is also the name on line {seen[name]}")
        seen[name] = number
        try:
            flags = shlex.split(text)
        except ValueError as e:
            raise GridError(f"{where}: {e}")
        runs.append((name, flags, where))
    if not runs:
        raise GridError(f"--runs {path}: no runs in it")
    return runs


def flag_value(flags, flag):
    """The last value given to `flag` (as `flag V` or `flag=V`), or None."""
    value = None
    for i, word in enumerate(flags):
        if word == flag and i + 1 < len(flags):
            value = flags[i + 1]
        elif word.startswith(flag + "="):
            value = word[len(flag) + 1:]
    return value


class Grid:
    def __init__(self, args):
        self.aryl, self.out = args.aryl, args.out
        self.runs_file = args.runs
        if args.runs is not None:
            self._runs(args)
            return
        self.policies = (args.policies if args.policies is not None else "aryl").split(",")
        if any(not p for p in self.policies):
            raise GridError(f"--policies '{args.policies}': empty policy name")
        self.seeds = parse_seeds(args.seeds if args.seeds is not None else "1")
        self.axes = [parse_axis(a) for a in args.set]
        keys = [k for k, _ in self.axes]
        if len(set(keys)) != len(keys):
            raise GridError(f"--set: a key appears twice among {keys}")
        self.fixed = args.fixed
        check_fixed(self.fixed)
        self.points = [self._point(i, combo) for i, combo in enumerate(
            itertools.product(self.policies, *[values for _, values in self.axes], self.seeds))]

    def _runs(self, args):
        given = [flag for flag, value in (("--policies", args.policies), ("--seeds", args.seeds),
                                          ("--set", args.set or None), ("-- FLAGS", args.fixed or None))
                 if value is not None]
        if given:
            raise GridError(f"--runs gives each run's flags in full: {', '.join(given)} would belong to a grid")
        self.policies, self.seeds, self.axes, self.fixed = [], [], [], []
        self.points = [self._run(i, *run) for i, run in enumerate(read_runs(args.runs))]

    def _run(self, index, name, flags, where):
        out = os.path.join(self.out, name)
        for i, word in enumerate(flags):
            setting = flags[i + 1] if word == "--set" and i + 1 < len(flags) else word[len("--set="):] \
                if word.startswith("--set=") else ""
            if setting.startswith("run.out="):
                raise GridError(f"{where}: '--set {setting}': a run's output directory is OUT/NAME")
        # A run may name its own directory where its command has it, as long as it is OUT/NAME.
        given = flag_value(flags, "--out")
        if given is not None and os.path.normpath(given) != os.path.normpath(out):
            raise GridError(f"{where}: '--out {given}': run {name} writes into {out}")
        cmd = [self.aryl, "simulate"] + flags + ([] if given is not None else ["--out", out])
        seed = flag_value(flags, "--seed")
        return {"index": index, "name": name, "policy": flag_value(flags, "--policy"),
                "seed": int(seed) if seed is not None and seed.isdigit() else None, "settings": [],
                "out": out, "cmd": cmd}

    def _point(self, index, combo):
        policy, settings, seed = combo[0], list(zip([k for k, _ in self.axes], combo[1:-1])), combo[-1]
        label = "_".join([f"{index:04d}", policy, f"s{seed}"] + [f"{k}={v}" for k, v in settings])
        name = re.sub(r"[^A-Za-z0-9._=+-]", "-", label)
        out = os.path.join(self.out, name)
        cmd = [self.aryl, "simulate", "--policy", policy, "--seed", str(seed)]
        for k, v in settings:
            cmd += ["--set", f"{k}={v}"]
        cmd += self.fixed + ["--mode", "simulated", "--quiet", "--out", out]
        return {"index": index, "name": name, "policy": policy, "seed": seed, "settings": settings,
                "out": out, "cmd": cmd}

    def arguments(self):
        """The grid arguments in canonical form (ending with `-- fixed flags`, so a mode flag goes
        before them): sweep.py with these expands to the same points."""
        if self.runs_file is not None:
            return ["--aryl", self.aryl, "--out", self.out, "--runs", self.runs_file]
        a = ["--aryl", self.aryl, "--out", self.out, "--policies", ",".join(self.policies),
             "--seeds", ",".join(map(str, self.seeds))]
        for k, values in self.axes:
            a += ["--set", f"{k}={','.join(values)}"]
        return a + (["--"] + self.fixed if self.fixed else [])


def describe(point):
    return f"{point['index']} {shlex.join(point['cmd'])}"


def run_point(point):
    """Runs one point into its own directory; its stdout and stderr are kept there."""
    os.makedirs(point["out"], exist_ok=True)
    summary = os.path.join(point["out"], "summary.json")
    if os.path.exists(summary):
        os.remove(summary)  # a failed rerun must not leave the last run's figures behind
    start = time.monotonic()
    with open(os.path.join(point["out"], "stdout.txt"), "wb") as so, \
            open(os.path.join(point["out"], "stderr.txt"), "wb") as se:
        try:
            code = subprocess.run(point["cmd"], stdout=so, stderr=se).returncode
        except OSError as e:
            se.write(f"cannot run {point['cmd'][0]}: {e}\n".encode())
            code = 127
    with open(os.path.join(point["out"], "exit_code.txt"), "w") as f:
        f.write(f"{code}\n")
    return code, time.monotonic() - start


def read_result(point):
    """(status, summary or None) of a point from its directory."""
    path = os.path.join(point["out"], "summary.json")
    if not os.path.exists(path):
        try:
            with open(os.path.join(point["out"], "exit_code.txt")) as f:
                return f"failed (exit {f.read().strip()})", None
        except OSError:
            started = os.path.exists(os.path.join(point["out"], "stderr.txt"))
            return ("unfinished (killed, or still running)" if started else "missing (not run)"), None
    with open(path) as f:
        summary = json.load(f)
    # A named run without --policy or --seed takes them from its config: nothing to compare.
    if any(point[k] is not None and summary.get(k) != point[k] for k in ("policy", "seed")):
        return "stale", None  # written by another grid's point of the same name
    return "ok", summary


def failure_report(point, status):
    lines = [f"point {point['index']} ({point['name']}) {status}: {shlex.join(point['cmd'])}"]
    try:
        with open(os.path.join(point["out"], "stderr.txt"), errors="replace") as f:
            tail = f.read().splitlines()[-STDERR_TAIL:]
        lines += ["  | " + line for line in tail]
    except OSError:
        pass
    return "\n".join(lines)


def fmt(value):
    if isinstance(value, float):
        return f"{value:.6g}"
    return "" if value is None else str(value)


def write_tables(grid, results):
    """results: [(point, status, summary)] in point order. Returns the CSV and Markdown paths."""
    fields = []
    for _, _, summary in results:
        for k in summary or {}:
            if k not in fields and k not in ("policy", "seed"):
                fields.append(k)
    keys = [k for k, _ in grid.axes]
    head = ["point", "name", "status", "policy", "seed"] + keys

    def given(p, s, key):  # a named run without the flag shows what its summary says
        value = p[key] if p[key] is not None else (s or {}).get(key)
        return "" if value is None else str(value)

    csv_path, md_path = os.path.join(grid.out, "results.csv"), os.path.join(grid.out, "results.md")
    with open(csv_path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(head + fields)
        for p, status, s in results:
            # repr of a float reads back as the same float: the CSV keeps summary.json's figures exactly.
            w.writerow([p["index"], p["name"], status, given(p, s, "policy"), given(p, s, "seed")] +
                       [v for _, v in p["settings"]] +
                       [repr(s[k]) if s and isinstance(s.get(k), float) else (s or {}).get(k, "") for k in fields])
    md_fields = [k for k in MD_FIELDS if k in fields]
    # A grid point's name repeats its policy, seed and settings; a named run's is all there is.
    named = grid.runs_file is not None
    with open(md_path, "w") as f:
        cols = ["point"] + (["name"] if named else []) + ["policy", "seed"] + keys + md_fields
        align = ["---" if c in ("name", "policy") or c in keys else "---:" for c in cols]
        f.write("| " + " | ".join(cols) + " |\n|" + "|".join(align) + "|\n")
        for p, status, s in results:
            figures = [fmt(s.get(k)) for k in md_fields] if s else [status] + [""] * (len(md_fields) - 1)
            f.write("| " + " | ".join([str(p["index"])] + ([p["name"]] if named else []) +
                                      [given(p, s, "policy"), given(p, s, "seed")] +
                                      [v for _, v in p["settings"]] + figures) + " |\n")
    return csv_path, md_path


def collect(grid):
    results = [(p,) + read_result(p) for p in grid.points]
    csv_path, md_path = write_tables(grid, results)
    bad = [(p, status) for p, status, _ in results if status != "ok"]
    for p, status in bad:
        print(failure_report(p, status), file=sys.stderr)
    print(f"{len(grid.points) - len(bad)} of {len(grid.points)} points ok; table in {csv_path} and {md_path}",
          file=sys.stderr)
    return 1 if bad else 0


def sweep(grid, jobs):
    n = len(grid.points)
    os.makedirs(grid.out, exist_ok=True)
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(run_point, p): p for p in grid.points}
        for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
            p = futures[future]
            code, seconds = future.result()
            print(f"[{done}/{n}] point {p['index']} {p['name']}: {'ok' if code == 0 else f'exit {code}'} "
                  f"({seconds:.1f} s)", file=sys.stderr)
    return collect(grid)


def emit_slurm(grid, path, sbatch):
    here = os.getcwd()
    me = os.path.abspath(__file__)
    args = shlex.join(grid.arguments())
    os.makedirs(grid.out, exist_ok=True)
    log = os.path.join(os.path.abspath(grid.out), "slurm-%A_%a.log")
    lines = ["#!/bin/bash",
             "#SBATCH --job-name=aryl-sweep",
             f"#SBATCH --array=0-{len(grid.points) - 1}",
             "#SBATCH --ntasks=1",
             "#SBATCH --cpus-per-task=1",
             f"#SBATCH --output={log}"]
    lines += [f"#SBATCH {opt}" for opt in sbatch]
    lines += [f"# Written by scripts/sweep.py: task i runs grid point i of {len(grid.points)}",
              f"# (list them: cd {shlex.quote(here)} && python3 {shlex.quote(me)} --list {args}).",
              "# When every task has finished, gather the table (exits non-zero naming any failed point):",
              f"#   cd {shlex.quote(here)} && python3 {shlex.quote(me)} --collect {args}",
              "set -euo pipefail",
              f"cd {shlex.quote(here)}",
              f'exec "${{PYTHON:-python3}}" {shlex.quote(me)} --point "$SLURM_ARRAY_TASK_ID" {args}']
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{path}: {len(grid.points)} array tasks; submit with: sbatch {path}", file=sys.stderr)


def main(argv):
    if "--" in argv:
        cut = argv.index("--")
        argv, fixed = argv[:cut], argv[cut + 1:]
    else:
        fixed = []
    ap = argparse.ArgumentParser(
        description="Run a grid of `aryl simulate` configurations, or a list of named runs (--runs), in parallel "
                    "and tabulate their summaries. Flags after `--` are passed to every point of a grid.",
        usage="%(prog)s --out DIR {[--policies P,..] [--seeds S,..] [--set key=v1,v2]... | --runs FILE} "
              "[--list | --point I | --collect | --emit-slurm FILE] [--jobs N] [-- simulate flags...]")
    ap.add_argument("--out", required=True, help="sweep directory: one subdirectory per point, results.csv/.md")
    ap.add_argument("--aryl", default="build/aryl", help="the aryl binary (default build/aryl)")
    ap.add_argument("--policies", help="comma-separated policies (default aryl)")
    ap.add_argument("--seeds", help="comma-separated seeds or ranges a-b (default 1)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=V1,V2",
                    help="a grid axis: a config key and its comma-separated values (repeatable)")
    ap.add_argument("--runs", metavar="FILE",
                    help="instead of a grid, the runs in FILE: one NAME<TAB>simulate flags per line; "
                         "each runs `aryl simulate FLAGS --out OUT/NAME`")
    ap.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)),
                    help="runs at once (default: the cores this process may use)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--list", action="store_true", help="print the numbered commands and exit")
    mode.add_argument("--point", type=int, metavar="I", help="run only point I (a job-array task)")
    mode.add_argument("--collect", action="store_true", help="only write the table from the points' outputs")
    mode.add_argument("--emit-slurm", metavar="FILE", help="write a Slurm job-array script, one task per point")
    ap.add_argument("--sbatch", action="append", default=[], metavar="OPTION",
                    help="with --emit-slurm: an extra #SBATCH line, e.g. --sbatch=--time=02:00:00 (repeatable)")
    args = ap.parse_args(argv)
    args.fixed = fixed
    try:
        grid = Grid(args)
    except GridError as e:
        ap.error(str(e))
    if args.jobs < 1:
        ap.error(f"--jobs {args.jobs}: must be at least 1")

    if args.list:
        for p in grid.points:
            print(describe(p))
        return 0
    if args.emit_slurm:
        emit_slurm(grid, args.emit_slurm, args.sbatch)
        return 0
    if args.collect:
        return collect(grid)
    if not os.access(grid.aryl, os.X_OK):
        ap.error(f"--aryl {grid.aryl}: no executable there (build it, or pass --aryl PATH)")
    if args.point is not None:
        if not 0 <= args.point < len(grid.points):
            ap.error(f"--point {args.point}: the grid has points 0..{len(grid.points) - 1}")
        p = grid.points[args.point]
        print(describe(p), flush=True)
        code, _ = run_point(p)
        if code != 0:
            print(failure_report(p, f"failed with exit {code}"), file=sys.stderr)
        return code
    return sweep(grid, args.jobs)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
