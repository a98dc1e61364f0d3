#!/usr/bin/python3
"""A restarted scheduler keeps every node and every exit of a live inventory: `aryl serve --join 1
--state FILE` takes its cluster from the first agent (a0), machine x1 joins once the run has
started, and one real command job runs on each. serve is killed with -9; both jobs exit 0 while it
is away. A second serve with the same arguments takes the cluster from the file, a0 and the
joined x1 with it, adopts both jobs and applies their exits: nothing runs twice.

    test_live_join_restart.py --aryl BUILD/aryl --source SOURCE_DIR [--dir TMP]

On loopback: agents a0 and x1 of 2 V100 GPUs each, speedup 1, --no-workload; two 2-GPU jobs
whose command (/bin/sh) appends "job rank pid" to a file at each start and sleeps 4 s.

Checks: both agents are in the cluster after the restart (status lists a0 and x1); the commands
started once per rank (4 lines); the second serve adopts jobs 0 and 1 and drops no exit; once
stopped, jobs.csv lists both jobs once, done; events.log has x1's join once. No process is left,
no port bound; every process is stopped by its pid, also on a failure.
"""

import os
import re
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from live_harness import check, main, read, wait_for  # noqa: E402
from serve_bed import Bed  # noqa: E402

DEADLINE_S = 120


def run(a, work, procs):
    bed = Bed(a, work, procs, "live-join-restart-test-token")
    starts = os.path.join(work, "starts")
    script = os.path.join(work, "job.sh")
    with open(script, "w") as f:
        f.write(f'echo "$ARYL_JOB_ID $ARYL_RANK $$" >> {starts}\nsleep 4\n')
    args = ["--join", "1", "--no-workload", "--set", "cluster.inference.servers=0", "--speedup", "1",
            "--state", os.path.join(bed.dir, "state.db")]
    serve = bed.serve(args)
    if not serve:
        return None
    port = bed.port
    bed.agent("a0", 2)
    if not bed.run_starts():
        return [port]
    bed.agent("x1", 2)
    log = os.path.join(bed.dir, "serve.log")
    if not check(wait_for(lambda: "server x1 (2 x V100) joined the running cluster" in read(log), 30, "x1 to join"),
                 "x1 joins the running cluster"):
        return [port]
    def submit(name):  # the worker's argv goes last, after the connection's flags
        r = subprocess.run([bed.aryl, "submit", "--port", str(port), "--token-file", bed.token, "--name", name, "--gpus",
                            "2", "--duration", "4", "--", "/bin/sh", script], capture_output=True, text=True, timeout=20)
        return int(r.stdout) if r.returncode == 0 and r.stdout.strip().isdigit() else r.stderr.strip()

    ids = [submit(f"j{i}") for i in (0, 1)]
    if not check(ids == [0, 1], f"two jobs are taken ({ids})"):
        return [port]
    if not check(wait_for(lambda: len(read(starts).splitlines()) == 4, 20, "both jobs' workers to start"),
                 "both jobs run, one on each machine"):
        return [port]
    time.sleep(1)
    serve.kill()
    serve.wait()
    agent_logs = lambda: "".join(read(os.path.join(bed.dir, f"agent-{n}", "agent.log")) for n in ("a0", "x1"))
    check(wait_for(lambda: len(re.findall(r"exit job \d rank \d: code 0", agent_logs())) == 4, 20,
                   "the workers to exit while serve is away"), "every worker exits 0 while serve is away")
    serve2 = bed.serve(args, log="serve-2.log", port=port)
    if not serve2:
        return [port]
    if not bed.run_starts("serve-2.log"):
        return [port]
    status = bed.status()
    names = sorted(s["name"] for s in status["servers"]) if status else []
    check(names == ["a0", "x1"], f"the restarted cluster has a0 and the joined x1 ({names})")
    check(wait_for(lambda: bed.idle(), 20, "both jobs to end"), "both jobs end")
    log2 = read(os.path.join(bed.dir, "serve-2.log"))
    check(re.search(r"adopted: jobs 0, 1;", log2) is not None, "the second serve adopts jobs 0 and 1")
    check("dropped" not in log2, "the second serve drops no exit report")
    if not bed.stop(serve2):
        return [port]
    lines = read(starts).splitlines()
    check(len(lines) == 4, f"each job's command started once per rank ({lines})")
    rows = sorted((r["name"], r["outcome"]) for r in bed.rows("jobs.csv"))
    check(rows == [("j0", "done"), ("j1", "done")], f"jobs.csv: both jobs once, done ({rows})")
    check(len(re.findall(r"scheduler join server=x1", bed.events())) == 1, "events.log has x1's join once")
    return [port]


if __name__ == "__main__":
    sys.exit(main("live-join-restart", DEADLINE_S, run, ("serve.log", "serve-2.log", "agent-a0/agent.log",
                                                         "agent-x1/agent.log")))
