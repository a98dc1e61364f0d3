#!/usr/bin/python3
"""A client's submit survives a scheduler killed right after answering it, and a journal
compacted during the run and at the restart still accounts for every job once.

    test_live_restart_submit.py --aryl BUILD/aryl --source SOURCE_DIR [--dir TMP]

On loopback: `aryl serve --state --no-workload` (speedup 1, journal compacted every 2 ended
jobs), one training agent t0 of 4 GPUs. Five 1-GPU jobs of 1 s are submitted (ids 0..4) and
run to their end, then a 4-GPU job of 6 s ("late"); the moment `aryl submit` prints its id,
serve gets SIGKILL. A second serve on the same port and state file carries the run on; a
client's next job ("after") is submitted to it, and once nothing is active the second serve
is stopped with SIGTERM.

Checks: late got id 5 and after id 6 (never 5 again); the second serve restores jobs 0..4
as ended (folded into final records, some at its start-up) and job 5 as active; jobs.csv
lists jobs 0..6 once each, all done; events.log, carried on by the second serve, finishes each
once, late and after after the restores; the state file holds at most 1 row of an ended job (compaction every 2) and the final records
of all 7 jobs, each once. No process is left, no port bound; every process is stopped by its
pid, also when a check fails.
"""

import json
import os
import re
import sqlite3
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from live_harness import check, main, outcomes, read, wait_for  # noqa: E402

DEADLINE_S = 120  # the whole test; CTest's TIMEOUT is longer


def serve_argv(aryl, bed, out, token, port):
    return [aryl, "serve", "--token-file", token, "--port", str(port), "--port-file", os.path.join(bed, "port"),
            "--work-dir", os.path.join(bed, "work"), "--state", os.path.join(bed, "state.db"), "--no-workload",
            "--servers", "1", "--set", "cluster.training.gpus_per_server=4", "--set", "cluster.inference.servers=0",
            "--speedup", "1", "--out", out, "--stop-grace", "3", "--agent-wait", "30",
            "--set", "jobs.restart_overhead_s=0", "--set", "jobs.scale_overhead_s=0",
            "--set", "run.check_invariants=true", "--set", "live.state_compact_every=2"]


def client(aryl, port, token, *args):
    return subprocess.run([aryl, *args, "--port", str(port), "--token-file", token], capture_output=True, text=True,
                          timeout=20)


def submit(aryl, port, token, name, gpus, duration):
    """The id `aryl submit` prints, or what went wrong."""
    r = client(aryl, port, token, "submit", "--name", name, "--gpus", str(gpus), "--duration", str(duration))
    if r.returncode == 0 and r.stdout.strip().isdigit():
        return int(r.stdout)
    return f"rc {r.returncode}: {r.stderr.strip()}"


def idle(aryl, port, token):
    r = client(aryl, port, token, "status", "--json")
    return r.returncode == 0 and json.loads(r.stdout)["jobs"] == []


def run(a, work, procs):
    bed, out = os.path.join(work, "testbed"), os.path.join(work, "out")
    os.makedirs(bed)
    token = os.path.join(bed, "token")
    with open(os.open(token, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write("live-restart-submit-test-token\n")
    aryl = os.path.abspath(a.aryl)
    log1, log2 = os.path.join(bed, "serve.log"), os.path.join(bed, "serve-2.log")

    serve = procs.start("serve", serve_argv(aryl, bed, out, token, 0), log1,
                        stdout=open(os.path.join(bed, "serve.out"), "w"))
    if not check(wait_for(lambda: read(os.path.join(bed, "port")).strip(), 30, "serve's port"), "serve listens"):
        return
    port = int(read(os.path.join(bed, "port")))
    folder = os.path.join(bed, "agent-t0")
    os.makedirs(folder)
    procs.start("agent t0", [aryl, "agent", "--port", str(port), "--token-file", token, "--name", "t0", "--gpu-type",
                             "V100", "--gpus", "4", "--pool", "training", "--work-dir", folder],
                os.path.join(folder, "agent.log"))
    if not check(wait_for(lambda: "the run starts" in read(log1), 40, "the run to start"), "the run starts"):
        return

    early = [submit(aryl, port, token, f"early{i}", 1, 1) for i in range(5)]
    if not check(early == [0, 1, 2, 3, 4], f"the first five submits get ids 0..4 ({early})"):
        return
    if not check(wait_for(lambda: idle(aryl, port, token), 40, "the first five jobs to end"),
                 "the first five jobs end"):
        return
    late = submit(aryl, port, token, "late", 4, 6)
    serve.kill()  # at once: the answer is all the client has
    serve.wait()
    if not check(late == 5, f"the submit answered just before the kill got id 5 ({late})"):
        return

    serve2 = procs.start("serve 2", serve_argv(aryl, bed, out, token, port), log2,
                         stdout=open(os.path.join(bed, "serve-2.out"), "w"))
    if not check(wait_for(lambda: "the run starts" in read(log2), 40, "the second serve's run to start"),
                 "the second serve carries the run on"):
        return
    after = submit(aryl, port, token, "after", 1, 1)
    check(after == 6, f"the next submit gets id 6, not the killed serve's last one again ({after})")
    if not check(wait_for(lambda: idle(aryl, port, token), 40, "the late and after jobs to end"),
                 "late and after end"):
        return
    serve2.terminate()
    try:
        rc = serve2.wait(timeout=30)
    except subprocess.TimeoutExpired:
        check(False, "the second serve ends within 30 s of SIGTERM")
        return
    if not check(rc == 0, f"the second serve exits 0 (got {rc})"):
        return

    log = read(log2)
    m = re.search(r"(\d+) jobs ended, (\d+) were running, (\d+) queued", log)
    check(m is not None and m.group(1) == "5" and int(m.group(2)) + int(m.group(3)) == 1,
          f"the second serve finds jobs 0..4 ended and job 5 active ({m.group(0) if m else 'no line'})")
    check(re.search(r"state .*: folded 1 ended job into final records", log) is not None,
          "the second serve folds the ends since the last compaction at its start")
    ends, listed = outcomes(out)
    check(sorted(ends) == [str(i) for i in range(7)] and listed == 7,
          f"jobs.csv lists jobs 0 to 6 once each (got {sorted(ends)} in {listed} rows)")
    check(all(o == "done" for o in ends.values()), f"every job's outcome is done ({list(ends.values())})")
    events = read(os.path.join(out, "events.log"))
    restored = sorted(int(j) for j in re.findall(r"scheduler restore job-(\d+) name=\S+ outcome=done", events))
    check(restored == [0, 1, 2, 3, 4], f"events.log restores jobs 0..4 as done, from the journal ({restored})")
    check(len(re.findall(r"scheduler restore job-5 ", events)) == 1, "events.log restores job 5 once, as active")
    # events.log is carried on: 0..4 finished before the kill, late and after in the carried-on run.
    finished = sorted(int(j) for j in re.findall(r"scheduler finish job-(\d+)", events))
    check(finished == list(range(7)), f"jobs 0 to 6 finish once each over the whole run ({finished})")
    check(events.find("scheduler finish job-4 ") < events.find("scheduler restore job-0 ")
          < events.find("scheduler finish job-5 "), "the first serve's finishes come before the restores, then late's")

    db = sqlite3.connect(os.path.join(bed, "state.db"))
    try:
        job_rows = db.execute("SELECT count(*) FROM jobs WHERE status = 'ended'").fetchone()[0]
        folded = [r[0] for chunk, in db.execute("SELECT records FROM ended") for r in json.loads(chunk)]
    finally:
        db.close()
    check(job_rows <= 1, f"the state file keeps at most 1 ended job's row unfolded ({job_rows})")
    check(sorted(folded) == list(range(7)), f"the state file keeps the final record of jobs 0..6 once each ({folded})")
    return port


def run_ports(a, work, procs):
    port = run(a, work, procs)
    return [port] if port else None


if __name__ == "__main__":
    sys.exit(main("live-restart-submit", DEADLINE_S, run_ports, ("serve.log", "serve-2.log", "agent-t0/agent.log")))
