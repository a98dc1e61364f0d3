#!/usr/bin/python3
"""`aryl status` filters, sorts and formats the queue as squeue does, `--watch` redraws until
a signal, and `aryl show node` tells what runs on a server and when its agent was last heard.

    test_live_status_filters.py --aryl BUILD/aryl --source SOURCE_DIR [--dir TMP]

On loopback: `aryl serve --no-workload --policy fifo` without backfill, training agents t0 and
t1 of 4 GPUs each. Job quick (1 GPU, 1 s, tenant nlp) runs to its end; then a (4 GPUs, vision),
b (2 GPUs, nlp) and c (8 GPUs, vision: waits behind them) are submitted, each 600 s long.

Checks: --state running lists a and b, PD lists c, CD lists quick (the ended jobs asked for);
--tenant vision lists a and c; --sort -jobid and --sort gpus order the rows; --server t1 keeps
the jobs with workers there; --user matches nothing without identities; --format prints the
named columns and, with --json, keeps only their keys; an unknown column, state or node is
refused naming the flag or the known nodes (exit 2); --watch 0.2 prints a table at least twice
and SIGINT or SIGTERM ends it with 0; `show node t0` lists each job with workers there with as
many ranks, an address and an agent heard within seconds; `show JOB` still works; --help lists
every flag. Serve is stopped with SIGTERM; no process is left, no port bound.
"""

import json
import os
import signal
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from live_harness import check, job, read, wait_for  # noqa: E402
from live_harness import main  # noqa: E402
from serve_bed import Bed  # noqa: E402

DEADLINE_S = 100


def ids(bed, *args):
    r = bed.client("status", "--json", *args)
    if not check(r.returncode == 0, f"status --json {' '.join(args)} answers (rc {r.returncode}: {r.stderr.strip()})"):
        return None
    return [j["job_id"] for j in json.loads(r.stdout)["jobs"]]


def watch_ends_on(bed, procs, sig, name):
    """`status --watch 0.2` prints at least two tables, then `sig` ends it with 0."""
    out = os.path.join(bed.dir, f"watch-{name}.out")
    p = procs.start(f"watch {name}", [bed.aryl, "status", "--watch", "0.2", "--format", "jobid,state", "--port",
                                      str(bed.port), "--token-file", bed.token],
                    os.path.join(bed.dir, f"watch-{name}.log"), stdout=open(out, "w"))
    check(wait_for(lambda: read(out).count("JOBID") >= 2, 10, "two tables"),
          f"status --watch 0.2 prints its table again ({read(out).count('JOBID')} tables)")
    p.send_signal(sig)
    try:
        rc = p.wait(timeout=5)
    except Exception:  # noqa: BLE001 (a timeout: the harness kills it)
        rc = None
    check(rc == 0, f"{name} ends status --watch with exit 0 (got {rc})")


def run(a, work, procs):
    bed = Bed(a, work, procs, "live-status-filters-test-token")
    serve = bed.serve(["--no-workload", "--servers", "2", "--set", "cluster.training.gpus_per_server=4",
                       "--set", "cluster.inference.servers=0", "--speedup", "1", "--policy", "fifo", "--set", "scheduler.backfill=false",
                       "--set", "jobs.restart_overhead_s=0", "--set", "jobs.scale_overhead_s=0"])
    if not serve:
        return None
    bed.agent("t0", 4)
    bed.agent("t1", 4)
    if not bed.run_starts():
        return [bed.port]

    help_text = bed.client("status", "--help").stdout
    missing = [f for f in ("--user", "--tenant", "--state", "--server", "--sort", "--format", "--json", "--watch",
                           "--all") if f not in help_text]
    check(not missing, f"status --help lists every flag (missing {missing})")
    check("node NAME" in bed.client("show", "--help").stdout, "show --help tells of show node NAME")

    quick = bed.submit("--name", "quick", "--gpus", "1", "--duration", "1", "--tenant", "nlp")
    check(quick == 0, f"quick gets id 0 ({quick})")
    if not check(wait_for(lambda: ids(bed, "--state", "CD") == [0], 30, "quick to end"),
                 "--state CD lists quick once it is done (the ended jobs asked for)"):
        return [bed.port]
    got = [bed.submit("--name", n, "--gpus", g, "--duration", "600", "--tenant", t)
           for n, g, t in (("a", "4", "vision"), ("b", "2", "nlp"), ("c", "8", "vision"))]
    if not check(got == [1, 2, 3], f"a, b, c get ids 1, 2, 3 ({got})"):
        return [bed.port]
    if not check(wait_for(lambda: ids(bed, "--state", "running") == [1, 2], 20, "a and b to run"),
                 "--state running lists a and b"):
        return [bed.port]
    check(ids(bed, "--state", "PD") == [3], "--state PD (Slurm's pending) lists c")
    check(ids(bed, "--state", "queued,CD") == [3, 0], "--state queued,CD lists c, then the ended quick")
    check(ids(bed, "--tenant", "vision") == [1, 3], "--tenant vision lists a and c")
    check(ids(bed, "--sort", "-jobid") == [3, 2, 1], "--sort -jobid lists the jobs by id, descending")
    check(ids(bed, "--sort", "gpus") == [2, 1, 3], "--sort gpus lists b (2), a (4), c (8)")
    check(ids(bed, "--user", "alice") == [], "--user matches no job without identities")
    s = bed.status()
    on_t1 = [j["job_id"] for j in s["jobs"] if any(p.split(":")[0] == "t1" for p in j.get("servers", "").split())]
    check(on_t1 and ids(bed, "--server", "t1") == on_t1, f"--server t1 keeps the jobs with workers there ({on_t1})")

    r = bed.client("status", "--format", "jobid,tenant,state", "--sort", "jobid")
    rows = [line.split() for line in r.stdout.splitlines()]
    check(r.returncode == 0 and rows == [["JOBID", "TENANT", "STATE"], ["1", "vision", "running"],
                                         ["2", "nlp", "running"], ["3", "vision", "queued"]],
          f"--format prints only the named columns ({rows})")
    r = bed.client("status", "--format", "jobid,state", "--json")
    keys = {k for j in json.loads(r.stdout)["jobs"] for k in j} if r.returncode == 0 else None
    check(keys == {"job_id", "state"}, f"--format with --json keeps only the columns' keys ({keys})")
    r = bed.client("status", "--format", "jobid,nodes")
    check(r.returncode == 2 and "--format" in r.stderr and "'nodes' is not a column" in r.stderr
          and "jobid" in r.stderr, f"an unknown column is refused naming the flag and the valid ones ({r.stderr.strip()})")
    r = bed.client("status", "--state", "pending")
    check(r.returncode == 2 and "--state: 'pending'" in r.stderr, f"an unknown state is refused ({r.stderr.strip()})")
    r = bed.client("status", "--watch", "0")
    check(r.returncode == 2 and "--watch" in r.stderr, f"--watch 0 is refused naming the flag ({r.stderr.strip()})")

    watch_ends_on(bed, procs, signal.SIGINT, "SIGINT")
    watch_ends_on(bed, procs, signal.SIGTERM, "SIGTERM")

    r = bed.client("show", "node", "t0", "--json")
    if check(r.returncode == 0, f"show node t0 answers ({r.stderr.strip()})"):
        n = json.loads(r.stdout)
        print(f"show node t0: {n}", flush=True)
        expect = {}
        for j in bed.status()["jobs"]:
            for p in j.get("servers", "").split():
                if p.split(":")[0] == "t0":
                    expect[j["job_id"]] = int(p.split(":")[1])
        got = {j["job_id"]: j["workers"] for j in n["jobs"]}
        check(expect and got == expect, f"show node t0 lists the jobs with workers there ({got}, status: {expect})")
        check(all(len(j["ranks"]) == j["workers"] and len(set(j["ranks"])) == j["workers"] for j in n["jobs"]),
              "each job on t0 has as many ranks there as workers")
        check(n["name"] == "t0" and n["gpus"] == 4 and n["state"] == "up" and n["mode"] == "training"
              and "hold" not in n, f"show node t0 gives its size, state and mode ({n})")
        check(n.get("address") == "127.0.0.1", f"show node t0 gives its agent's address ({n.get('address')})")
        check(0 <= n.get("heard_s", -1) < 10, f"t0's agent was heard within seconds ({n.get('heard_s')})")
        version = subprocess.run([bed.aryl, "--version"], capture_output=True, text=True).stdout.split()
        check(version and version[0] == "aryl" and n.get("agent_version") == version[-1],
              f"show node t0 gives its agent's version ({n.get('agent_version')}, aryl --version: {version})")
    r = bed.client("show", "node", "t0")
    check(r.returncode == 0 and "NodeName=t0" in r.stdout and "Address=127.0.0.1" in r.stdout
          and "LastHeard=" in r.stdout and "RANKS" in r.stdout, f"show node t0 as text ({r.stdout})")
    r = bed.client("show", "node", "t9")
    check(r.returncode == 2 and "t9" in r.stderr and "t0, t1" in r.stderr,
          f"an unknown node is refused naming the known ones ({r.stderr.strip()})")
    r = bed.client("show", "1")
    check(r.returncode == 0 and "JobId=1 Name=a" in r.stdout, f"show JOB still shows a job ({r.stdout[:80]})")
    r = bed.client("show", "x1")
    check(r.returncode == 2 and "not a job id" in r.stderr, f"show of a bad id says so ({r.stderr.strip()})")

    check(job(bed.status(), 1).get("state") == "running", "a still runs")
    bed.stop(serve)
    return [bed.port]


if __name__ == "__main__":
    sys.exit(main("live-status-filters", DEADLINE_S, run, ("serve.log", "agent-t0/agent.log", "agent-t1/agent.log")))
