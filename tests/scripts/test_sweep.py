"""scripts/sweep.py against the real aryl binary: a Slurm array task i runs grid point i, the table
holds each run's summary.json, a failing point fails the sweep by name, a runs file's lines run
as written.

  test_sweep.py --aryl build/aryl --source . TEST_NAME
"""
import argparse
import csv
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile

ARGS = None


def sweep(*args, check=None):
    """Runs sweep.py; check=True/False asserts its exit status is zero/non-zero."""
    r = subprocess.run([sys.executable, os.path.join(ARGS.source, "scripts", "sweep.py"), *args],
                       cwd=ARGS.source, capture_output=True, text=True)
    if check is not None and (r.returncode == 0) != check:
        raise AssertionError(f"sweep.py {shlex.join(args)} exited {r.returncode}\n{r.stdout}\n{r.stderr}")
    return r


def listed(grid):
    return sweep("--list", *grid, check=True).stdout.splitlines()


def read_table(out):
    with open(os.path.join(out, "results.csv"), newline="") as f:
        return list(csv.DictReader(f))


def summary(out, name):
    with open(os.path.join(out, name, "summary.json")) as f:
        return json.load(f)


def expect(ok, message):
    if not ok:
        raise AssertionError(message)


def slurm_array_task_i_runs_the_local_sweeps_point_i(tmp):
    # A space in the path checks the script's quoting; a fixed flag checks it is passed on.
    out = os.path.join(tmp, "sweep out")
    grid = ["--aryl", ARGS.aryl, "--out", out, "--policies", "fifo,aryl", "--seeds", "1,2",
            "--set", "synthetic.jobs=30,50", "--", "--set", "jobs.elastic_fraction=0.7"]
    commands = listed(grid)
    expect(len(commands) == 8, f"2 policies x 2 seeds x 2 job counts should be 8 points, --list gave {commands}")
    script = os.path.join(tmp, "array.sh")
    sweep("--emit-slurm", script, *grid, check=True)
    text = open(script).read()
    m = re.search(r"^#SBATCH --array=0-(\d+)$", text, re.M)
    expect(m and int(m.group(1)) == len(commands) - 1, f"array range should be 0-{len(commands) - 1}:\n{text}")
    gather = re.search(r"^#\s+(cd .* --collect .*)$", text, re.M)
    expect(gather, f"no gather command documented in the script:\n{text}")

    def task(i):
        env = dict(os.environ, SLURM_ARRAY_TASK_ID=str(i), PYTHON=sys.executable)
        return subprocess.run(["bash", script], env=env, capture_output=True, text=True)

    for i in (5, 0):
        r = task(i)
        expect(r.returncode == 0, f"task {i} failed: {r.stdout}\n{r.stderr}")
        expect(r.stdout.splitlines()[0] == commands[i],
               f"task {i} ran\n  {r.stdout.splitlines()[0]}\nbut --list says point {i} is\n  {commands[i]}")
    # Before every task has run, gathering names a point that has not.
    r = subprocess.run(["bash", "-c", gather.group(1).replace("python3", shlex.quote(sys.executable), 1)],
                       capture_output=True, text=True)
    expect(r.returncode != 0 and "point 1 (0001_fifo_s2_synthetic.jobs=30) missing" in r.stderr,
           f"gathering with tasks 1..4, 6, 7 not run should fail naming point 1:\n{r.stderr}")
    for i in (1, 2, 3, 4, 6, 7):
        r = task(i)
        expect(r.returncode == 0 and r.stdout.splitlines()[0] == commands[i],
               f"task {i}: exit {r.returncode}, ran {r.stdout}\nexpected {commands[i]}\n{r.stderr}")
    r = subprocess.run(["bash", "-c", gather.group(1).replace("python3", shlex.quote(sys.executable), 1)],
                       capture_output=True, text=True)
    expect(r.returncode == 0, f"gathering after every task failed:\n{r.stderr}")
    rows = read_table(out)
    expect([r["status"] for r in rows] == ["ok"] * 8, f"statuses {[r['status'] for r in rows]}")
    for i, row in enumerate(rows):
        # The point's own settings reached aryl: policy and seed echo in its summary, jobs count.
        s = summary(out, row["name"])
        cmd = shlex.split(commands[i])
        expect(cmd[cmd.index("--policy") + 1] == s["policy"] and int(cmd[cmd.index("--seed") + 1]) == s["seed"],
               f"point {i}: {commands[i]} wrote a summary for {s['policy']} seed {s['seed']}")
        expect(s["jobs_submitted"] == int(row["synthetic.jobs"]),
               f"point {i}: synthetic.jobs={row['synthetic.jobs']} but {s['jobs_submitted']} jobs submitted")


def local_sweep_table_holds_each_runs_summary(tmp):
    out = os.path.join(tmp, "s")
    grid = ["--aryl", ARGS.aryl, "--out", out, "--policies", "fifo,aryl", "--seeds", "1,2",
            "--set", "synthetic.jobs=60"]
    sweep("--jobs", "2", *grid, check=True)
    rows = read_table(out)
    expect(len(rows) == 4, f"expected 4 rows, got {len(rows)}")
    expect([(r["policy"], r["seed"]) for r in rows] == [("fifo", "1"), ("fifo", "2"), ("aryl", "1"), ("aryl", "2")],
           f"rows out of grid order: {[(r['policy'], r['seed']) for r in rows]}")
    for field in ("mean_queue_s", "mean_jct_s", "makespan_s", "gpu_usage"):
        expect(field in rows[0], f"table lacks {field}: {list(rows[0])}")
    for row in rows:
        s = summary(out, row["name"])
        expect(row["policy"] == s["policy"] and int(row["seed"]) == s["seed"], f"{row['name']}: {s}")
        for key, value in s.items():
            if key in ("policy", "seed"):
                continue
            got = row[key]
            same = (float(got) == value) if isinstance(value, (int, float)) else got == str(value)
            expect(same, f"{row['name']}: table {key}={got}, summary.json {key}={value}")
    jcts = {row["mean_jct_s"] for row in rows}
    expect(len(jcts) > 1, f"every point has the same mean JCT {jcts}: the points did not differ")
    md = open(os.path.join(out, "results.md")).read().splitlines()
    expect(len(md) == 2 + len(rows), f"results.md should have a header, a rule and 4 rows:\n" + "\n".join(md))

    # A point's command run by hand gives the same figures (runs are deterministic).
    cmd = shlex.split(listed(grid)[3].split(" ", 1)[1])
    cmd[cmd.index("--out") + 1] = os.path.join(tmp, "by-hand")
    subprocess.run(cmd, check=True, capture_output=True, cwd=ARGS.source)
    again = json.load(open(os.path.join(tmp, "by-hand", "summary.json")))
    swept = summary(out, rows[3]["name"])
    for key in swept:
        expect(key == "sim_wall_s" or again[key] == swept[key],
               f"point 3 by hand: {key}={again[key]}, in the sweep {swept[key]}")


def failing_point_fails_the_sweep_by_name(tmp):
    out = os.path.join(tmp, "s")
    grid = ["--aryl", ARGS.aryl, "--out", out, "--policies", "fifo,no-such-policy", "--set", "synthetic.jobs=30"]
    r = sweep(*grid, check=False)
    expect(r.returncode != 0, "a sweep with a failing point exited 0")
    expect("point 1 (0001_no-such-policy_s1_synthetic.jobs=30) failed" in r.stderr and
           "--policy no-such-policy" in r.stderr and "no-such-policy" in r.stderr.split("--policy no-such-policy", 1)[1],
           f"the failure should name point 1, its command and aryl's complaint:\n{r.stderr}")
    rows = read_table(out)
    expect(rows[0]["status"] == "ok" and rows[0]["mean_jct_s"] != "", f"the good point still completes: {rows[0]}")
    expect(rows[1]["status"].startswith("failed"), f"the bad point's row: {rows[1]}")
    r = sweep("--point", "1", *grid, check=False)
    expect(r.returncode != 0 and "point 1 (0001_no-such-policy" in r.stderr, f"--point 1:\n{r.stderr}")


def bad_grid_arguments_are_refused_by_name(tmp):
    out = os.path.join(tmp, "s")
    for args, named in ((["--set", "synthetic.jobs"], "synthetic.jobs"),
                        (["--seeds", "1,x"], "'x'"),
                        (["--set", "seed=1,2"], "seed"),
                        (["--", "--policy", "fifo"], "--policy"),
                        (["--", "--list"], "--list"),
                        (["--point", "9"], "--point 9")):
        r = sweep("--aryl", ARGS.aryl, "--out", out, *args, check=False)
        expect(r.returncode != 0 and named in r.stderr, f"{args}: exit {r.returncode}, stderr {r.stderr}")
    expect(not os.path.exists(out), "a refused grid should run nothing")


def named_runs_run_each_line_as_written(tmp):
    # A space in the path checks the runs file's quoting; the first run places its own --out.
    out = os.path.join(tmp, "runs out")
    runs = os.path.join(tmp, "runs.tsv")
    flags = [["--policy", "fifo", "--seed", "2", "--out", os.path.join(out, "small-fifo"), "--quiet",
              "--set", "synthetic.jobs=30"],
             ["--set", "synthetic.jobs=40", "--set", "jobs.elastic_fraction=0.7"],
             ["--policy", "no-such-policy", "--set", "synthetic.jobs=30"]]
    names = ["small-fifo", "default-policy", "bad"]
    with open(runs, "w") as f:
        f.write("# name<TAB>flags\n\n")
        for name, fl in zip(names, flags):
            f.write(f"{name}\t{shlex.join(fl)}\n")
    grid = ["--aryl", ARGS.aryl, "--out", out, "--runs", runs]
    wanted = [[ARGS.aryl, "simulate"] + flags[0],
              [ARGS.aryl, "simulate"] + flags[1] + ["--out", os.path.join(out, "default-policy")],
              [ARGS.aryl, "simulate"] + flags[2] + ["--out", os.path.join(out, "bad")]]
    commands = listed(grid)
    expect([shlex.split(c.split(" ", 1)[1]) for c in commands] == wanted and
           [c.split(" ", 1)[0] for c in commands] == ["0", "1", "2"],
           "--list should give each line's flags unchanged, in file order, with --out OUT/NAME appended where "
           "the line has none:\n" + "\n".join(commands))

    r = sweep("--jobs", "2", *grid, check=False)
    expect(r.returncode != 0 and "point 2 (bad) failed" in r.stderr and "--policy no-such-policy" in r.stderr,
           f"the failing run should fail the sweep, named with its command:\n{r.stderr}")
    rows = read_table(out)
    expect([row["name"] for row in rows] == names, f"rows out of file order: {[row['name'] for row in rows]}")
    expect([row["status"] for row in rows[:2]] == ["ok", "ok"] and rows[2]["status"].startswith("failed"),
           f"statuses {[row['status'] for row in rows]}")
    for row, jobs in zip(rows[:2], (30, 40)):
        s = summary(out, row["name"])
        expect(s["jobs_submitted"] == jobs, f"{row['name']}: {s['jobs_submitted']} jobs submitted, its line says {jobs}")
        expect(row["policy"] == s["policy"] and int(row["seed"]) == s["seed"],
               f"{row['name']}: table says {row['policy']} seed {row['seed']}, summary.json {s['policy']} seed {s['seed']}")
        for key, value in s.items():
            if isinstance(value, (int, float)) and key != "seed":
                expect(float(row[key]) == value, f"{row['name']}: table {key}={row[key]}, summary.json {value}")
    expect((rows[0]["policy"], rows[0]["seed"]) == ("fifo", "2"), f"run 0's own --policy and --seed: {rows[0]}")
    md = open(os.path.join(out, "results.md")).read()
    expect(all(f"| {i} | {n} |" in md for i, n in enumerate(names)), f"results.md should name each run:\n{md}")

    # A job-array task runs the same command as --list, from the same runs file.
    script = os.path.join(tmp, "array.sh")
    sweep("--emit-slurm", script, *grid, check=True)
    env = dict(os.environ, SLURM_ARRAY_TASK_ID="1", PYTHON=sys.executable)
    r = subprocess.run(["bash", script], env=env, capture_output=True, text=True)
    expect(r.returncode == 0 and r.stdout.splitlines()[0] == commands[1],
           f"task 1: exit {r.returncode}, ran {r.stdout}\nexpected {commands[1]}\n{r.stderr}")


def bad_runs_files_are_refused_by_file_and_line(tmp):
    out = os.path.join(tmp, "s")
    runs = os.path.join(tmp, "runs.tsv")
    cases = [("a\t--policy fifo\nb --policy fifo\n", [], f"{runs}:2: expected NAME<TAB>FLAGS"),
             ("a\t--policy fifo\n\na\t--policy aryl\n", [], f"{runs}:3: run name 'a' is also the name on line 1"),
             ("../up\t--policy fifo\n", [], f"{runs}:1: run name '../up'"),
             ("a\t--out elsewhere\n", [], f"{runs}:1: '--out elsewhere'"),
             ("a\t--set run.out=elsewhere\n", [], f"{runs}:1: '--set run.out=elsewhere'"),
             ("a\t--set 'unclosed\n", [], f"{runs}:1: No closing quotation"),
             ("# only a comment\n", [], f"{runs}: no runs in it"),
             ("a\t--policy fifo\n", ["--policies", "fifo"], "--policies would belong to a grid"),
             ("a\t--policy fifo\n", ["--", "--servers", "2"], "-- FLAGS would belong to a grid")]
    for text, more, named in cases:
        with open(runs, "w") as f:
            f.write(text)
        r = sweep("--aryl", ARGS.aryl, "--out", out, "--runs", runs, *more, check=False)
        expect(r.returncode != 0 and named in r.stderr, f"{text!r} {more}: exit {r.returncode}, stderr {r.stderr}")
    r = sweep("--aryl", ARGS.aryl, "--out", out, "--runs", os.path.join(tmp, "none.tsv"), check=False)
    expect(r.returncode != 0 and "none.tsv" in r.stderr, f"a missing runs file: {r.stderr}")
    expect(not os.path.exists(out), "a refused runs file should run nothing")


TESTS = {f.__name__: f for f in (slurm_array_task_i_runs_the_local_sweeps_point_i,
                                  local_sweep_table_holds_each_runs_summary,
                                  failing_point_fails_the_sweep_by_name,
                                  bad_grid_arguments_are_refused_by_name,
                                  named_runs_run_each_line_as_written,
                                  bad_runs_files_are_refused_by_file_and_line)}

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--aryl", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("test", choices=sorted(TESTS))
    ARGS = ap.parse_args()
    ARGS.aryl = os.path.abspath(ARGS.aryl)
    tmp = tempfile.mkdtemp(prefix="aryl-sweep-test-")
    # A terminated test (a CTest timeout, Ctrl-C) still removes its directory.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        TESTS[ARGS.test](tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{ARGS.test}: passed")
