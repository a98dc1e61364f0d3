#!/usr/bin/python3
"""A full journal disk stops no work: `aryl serve --state` on a small tmpfs that is then filled.
While the journal cannot be written the running job goes on and ends, a submit is refused naming
the state file's trouble, /metrics says the journal is failing, and no agent is told to shut
down; once space returns, everything kept is journaled (the job's end once) and submits are
taken again.

    test_live_full_disk.py --aryl BUILD/aryl --source SOURCE_DIR [--dir TMP]

Needs root (it mounts a 4 MiB tmpfs for the state file, unmounted on every way out); skipped,
exit 77, otherwise. On loopback: one training agent t0 of 2 GPUs, speedup 1, --no-workload.
"""

import os
import re
import sqlite3
import subprocess
import sys
import urllib.request

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from live_harness import check, main, read, wait_for  # noqa: E402
from serve_bed import Bed  # noqa: E402

DEADLINE_S = 120


def metric(port, name):
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    except OSError:
        return None
    m = re.search(rf"^{name} (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


def fill(path):
    """Writes zeros into `path` until the filesystem is full."""
    with open(path, "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass


def run(a, work, procs):
    bed = Bed(a, work, procs, "live-full-disk-test-token")
    fs = os.path.join(work, "state-fs")
    os.makedirs(fs)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", fs]).returncode != 0:
        check(False, "a 4 MiB tmpfs is mounted for the state file")
        return None
    try:
        return with_fs(bed, fs)
    finally:
        subprocess.run(["umount", "-l", fs])


def with_fs(bed, fs):
    metrics_file = os.path.join(bed.dir, "metrics-port")
    serve = bed.serve(["--no-workload", "--servers", "1", "--set", "cluster.training.gpus_per_server=2",
                       "--set", "cluster.inference.servers=0", "--speedup", "1", "--state", os.path.join(fs, "state.db"),
                       "--metrics-port", "0", "--metrics-port-file", metrics_file])
    if not serve:
        return None
    ports = [bed.port]
    bed.agent("t0", 2)
    if not bed.run_starts():
        return ports
    mport = int(read(metrics_file))
    ports.append(mport)
    first = bed.submit("--name", "long", "--gpus", "2", "--duration", "12")
    if not check(first == 0, f"job 0 is taken before the disk fills ({first})"):
        return ports
    agent_log = os.path.join(bed.dir, "agent-t0", "agent.log")
    check(wait_for(lambda: "launch job 0 rank 1" in read(agent_log), 20, "job 0 to launch"), "job 0 runs")
    fill(os.path.join(fs, "filler"))
    log = os.path.join(bed.dir, "serve.log")
    check(wait_for(lambda: "cannot write" in read(log), 20, "a journal write to fail"),
          "serve logs that the state file cannot be written")
    refused = bed.submit("--name", "refused", "--gpus", "1", "--duration", "2")
    check(isinstance(refused, str) and "the state file cannot be written" in refused,
          f"a submit is refused while the journal fails ({refused})")
    check(metric(mport, "aryl_journal_failing") == 1, "/metrics: aryl_journal_failing 1")
    check(wait_for(lambda: re.search(r"exit job 0 rank \d: code 0", read(agent_log)), 30, "job 0 to end"),
          "job 0 runs to its end while the journal fails")
    check("shut down" not in read(agent_log), "the agent is not told to shut down")
    os.remove(os.path.join(fs, "filler"))
    check(wait_for(lambda: "written again" in read(log), 20, "the journal to recover"),
          "serve logs that the state file is written again")
    check(metric(mport, "aryl_journal_failing") == 0, "/metrics: aryl_journal_failing 0 once recovered")
    after = bed.submit("--name", "after", "--gpus", "1", "--duration", "2")
    check(after == 1, f"a submit is taken again once the journal recovers, with the next id ({after})")
    check(wait_for(lambda: bed.idle(), 30, "job 1 to end"), "job 1 runs and ends")
    if not bed.stop(serve):
        return ports
    db = sqlite3.connect(f"file:{os.path.join(fs, 'state.db')}?mode=ro", uri=True)
    ended = db.execute("select count(*) from ended").fetchone()[0] + \
        db.execute("select count(*) from jobs where status='ended'").fetchone()[0]
    db.close()
    check(ended >= 1, f"the state file holds the jobs' ends ({ended} rows)")
    rows = bed.rows("jobs.csv")
    outcomes = sorted((r["name"], r["outcome"]) for r in rows)
    check(outcomes == [("after", "done"), ("long", "done")], f"jobs.csv: both jobs done once ({outcomes})")
    return ports


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("skipped: mounting a tmpfs needs root")
        sys.exit(77)
    sys.exit(main("live-full-disk", DEADLINE_S, run, ("serve.log", "agent-t0/agent.log")))
