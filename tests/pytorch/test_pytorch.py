#!/usr/bin/python3
"""A real PyTorch job under `aryl serve`: it scales in and out and resumes from its checkpoint.

    test_pytorch.py --aryl BUILD/aryl --source SOURCE_DIR [--dir TMP]

scripts/testbed.sh runs `aryl serve` (ARYL_BIN = the given binary) and one agent: t0 with 4
GPUs, no inference server. Every job's workers are examples/pytorch/train.py. The trace:
  a  t=0    elastic, 2 GPUs, 1..4 workers, 300 s: alone, it starts with 4 workers;
  b  t=100  inelastic, 2 GPUs, 60 s: a scales in to 2 to make room, and out to 4 once b is done.
The regrowth gains about 40 s, less than the default rescale margin and within the cooldown of the
scale-in, so the test sets both to 0: it proves the mechanism (checkpoint, relaunch, resume), and
tests/solvers/test_paid_scaling.cpp proves the rule that would hold the job at 2.
At --speedup 5 that is about a minute (each launch also pays torch's start-up, a few seconds).

Checks: serve exits 0; jobs.csv has both jobs once; events.log rescales job-0 down and up; job
0's rank-0 worker log shows world sizes 4 and 2, every launch resuming at the step of the last
checkpoint before it (at least one at a step > 0) and its first step the next one, the final
checkpoint at the last step, and the loss lower at the end than at the start; no process is
left. Exits 77 (CTest: skipped) when /usr/bin/python3 cannot import torch.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

PYTHON = "/usr/bin/python3"  # Debian's, with python3-torch; not a python3 on PATH
TRACE = ("job_id,submit_s,gpus,duration_s,elastic,min_workers,max_workers\n"
         "a,0,2,300,1,1,4\n"
         "b,100,2,60,0,2,2\n")
SPEEDUP = 5
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)
    return ok


def read(path):
    with open(path, errors="replace") as f:
        return f.read()


def leftover_workers(testbed_dir):
    """Processes still running whose environment points into the testbed folder."""
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if testbed_dir.encode() in f.read():
                    left.append(int(pid))
        except OSError:
            pass
    return left


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--aryl", required=True, help="the aryl binary to test")
    p.add_argument("--source", required=True, help="the source tree (scripts/, examples/)")
    p.add_argument("--dir", help="testbed folder (default: a fresh temporary one, removed on success)")
    a = p.parse_args()

    probe = subprocess.run([PYTHON, "-c", "import torch, torch.distributed as d; assert d.is_gloo_available()"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        print(f"skipped: {PYTHON} cannot import torch with gloo (scripts/setup_pytorch.sh installs it)")
        return 77
    train = os.path.join(os.path.abspath(a.source), "examples", "pytorch", "train.py")
    if " " in train:
        print(f"FAIL live.worker_command is split on spaces: {train} has one")
        return 1

    work = a.dir or tempfile.mkdtemp(prefix="aryl-test-pytorch-")
    if a.dir:
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
    testbed, out = os.path.join(work, "testbed"), os.path.join(work, "out")
    trace = os.path.join(work, "trace.csv")
    with open(trace, "w") as f:
        f.write(TRACE)

    env = dict(os.environ, ARYL_BIN=os.path.abspath(a.aryl))
    for var in ("PYTHONHOME", "PYTHONPATH"):  # the workers run Debian's python3
        env.pop(var, None)
    cmd = [os.path.join(a.source, "scripts", "testbed.sh"), "--dir", testbed, "--training", "1",
           "--inference", "0", "--gpus", "4", "--",
           "--trace", trace, "--speedup", str(SPEEDUP), "--out", out,
           "--set", f"live.worker_command={PYTHON} {train}",
           "--set", "jobs.scale_overhead_s=0", "--set", "jobs.restart_overhead_s=0",
           "--set", "run.check_invariants=true",
           "--set", "scheduler.rescale_margin_s=0", "--set", "scheduler.rescale_cooldown_s=0"]
    print("running:", " ".join(cmd), flush=True)
    began = time.monotonic()
    run = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240)
    print(run.stdout)
    print(f"testbed ran {time.monotonic() - began:.1f} s", flush=True)
    if not check(run.returncode == 0, f"testbed.sh exits 0 (got {run.returncode})"):
        for log in ("serve.log", "agent-t0/agent.log", "agent-t0/logs/0-0.log", "agent-t0/logs/1-0.log"):
            path = os.path.join(testbed, log)
            if os.path.exists(path):
                print(f"--- last lines of {path}\n" + "".join(read(path).splitlines(True)[-15:]))
        return 1

    # Both jobs, once each.
    rows = read(os.path.join(out, "jobs.csv")).splitlines()[1:]
    ids = sorted(r.split(",")[0] for r in rows)
    check(ids == ["0", "1"], f"jobs.csv lists jobs 0 and 1 once each (got {ids})")

    # The scheduler rescales job-0 down (b arrives) and up (b is done).
    events = read(os.path.join(out, "events.log"))
    sizes = [int(m.group(2)) for m in
             re.finditer(r"scheduler (start|rescale) job-0 workers=(\d+)", events)]
    print(f"job-0 start/rescale sizes: {sizes}")
    down = [i for i, (a_, b) in enumerate(zip(sizes, sizes[1:])) if b < a_]
    check(sizes[:1] == [4] and down, "job-0 starts with 4 workers and has a rescale that decreases them")
    check(down and any(b > a_ for a_, b in zip(sizes[down[0]:], sizes[down[0] + 1:])) and sizes[-1:] == [4],
          "job-0 grows again after that decrease, back to 4 workers (4 -> 2 -> 4)")

    # Job 0's rank-0 log: every launch in order, appended by the agent.
    log = read(os.path.join(testbed, "agent-t0", "logs", "0-0.log"))
    launches, last_ckpt, first_loss, last_loss, total = [], 0, None, None, None
    for line in log.splitlines():
        if m := re.match(r"start job=0 world_size=(\d+) total_steps=(\d+) resumed_step=(\d+)$", line):
            launches.append({"world_size": int(m.group(1)), "resumed": int(m.group(3)),
                             "checkpoint_before": last_ckpt, "first_step": None})
            total = int(m.group(2))
        elif m := re.match(r"step=(\d+) loss=([0-9.eE+-]+) world_size=(\d+)$", line):
            if launches and launches[-1]["first_step"] is None:
                launches[-1]["first_step"] = int(m.group(1))
            loss = float(m.group(2))
            first_loss = loss if first_loss is None else first_loss
            last_loss = loss
        elif m := re.match(r"checkpoint step=(\d+) reason=(\w+)$", line):
            last_ckpt = int(m.group(1))
    for i, l in enumerate(launches):
        print(f"launch {i}: {l}")
    # Three launches; the first prints nothing if its workers are stopped while still starting up.
    check(len(launches) >= 2, f"job 0's rank 0 started training in at least 2 launches (got {len(launches)})")
    check({4, 2} <= {l["world_size"] for l in launches}, "job 0 ran with world sizes 4 and 2")
    check(all(l["resumed"] == l["checkpoint_before"] for l in launches),
          "every launch resumes at the step of the last checkpoint written before it")
    check(all(l["first_step"] == l["resumed"] + 1 for l in launches if l["first_step"] is not None),
          "every launch's first step follows the checkpointed one")
    check(any(l["resumed"] > 0 and l["first_step"] == l["resumed"] + 1 for l in launches[1:]),
          "a relaunch resumed past step 0 and continued from there")
    check(total is not None and f"checkpoint step={total} reason=done" in log,
          f"the final checkpoint is at the last step ({total})")
    check(first_loss is not None and last_loss < first_loss,
          f"the loss went down: {first_loss} at the start, {last_loss} at the end")
    check(os.path.getsize(os.path.join(testbed, "agent-t0", "logs", "1-0.log")) > 0, "job 1 ran a worker")

    # Nothing left behind: the testbed's processes and every worker.
    for entry in read(os.path.join(testbed, "pids")).split("\n"):
        if entry.strip():
            pid = int(entry.split()[0])
            check(not os.path.exists(f"/proc/{pid}") or "Z" in read(f"/proc/{pid}/stat").split()[2],
                  f"process {entry.strip()} is gone")
    left = leftover_workers(testbed)
    check(not left, f"no worker process is left (found {left})")

    if failures:
        print(f"{len(failures)} check(s) failed; the testbed is kept in {work}")
        return 1
    if not a.dir:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
