#!/usr/bin/python3
"""A testbed started from another folder keeps its relative paths there, and its agents stop
when serve ends for good.

    test_live_shutdown.py --aryl BUILD/aryl --source SOURCE_DIR [--dir TMP]

scripts/testbed.sh is run from the test's work folder with `--dir testbed` and serve's
`--out out` (both relative): one training agent of 2 GPUs, a trace of one 2-GPU job of 20 s at
speedup 20.

Checks: the testbed exits 0; its folder and serve's outputs are under the work folder (the
caller's), not under the source tree; the job is done; the agent was told by serve that it shut
down for good and stopped on its own (its log says so before the testbed's stop could);
serve's and the agent's log lines start with an ISO-8601 UTC time. No process is left.
"""

import os
import re
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from live_harness import check, main, outcomes, read  # noqa: E402

DEADLINE_S = 60
TRACE = "job_id,submit_s,gpus,duration_s\nonly,0,2,20\n"
STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z ")


def run(a, work, procs):
    with open(os.path.join(work, "trace.csv"), "w") as f:
        f.write(TRACE)
    testbed = procs.start("testbed", [
        os.path.join(a.source, "scripts", "testbed.sh"), "--dir", "testbed", "--training", "1", "--inference", "0",
        "--gpus", "2", "--", "--trace", "trace.csv", "--speedup", "20", "--out", "out", "--stop-grace", "3",
        "--set", "jobs.restart_overhead_s=0"],
        os.path.join(work, "testbed.out"), cwd=work, env=dict(os.environ, ARYL_BIN=os.path.abspath(a.aryl)))
    try:
        rc = testbed.wait(timeout=40)
    except subprocess.TimeoutExpired:
        return check(False, "the testbed ends within 40 s")
    check(rc == 0, f"the testbed exits 0 (got {rc})")
    bed = os.path.join(work, "testbed")
    check(os.path.isfile(os.path.join(bed, "pids")), "--dir testbed is the caller's folder's testbed/")
    done, rows = outcomes(os.path.join(work, "out"))
    check(done == {"0": "done"} and rows == 1, f"serve's --out out is the caller's out/, with the job done ({done})")
    agent_log = read(os.path.join(bed, "agent-t0", "agent.log"))
    told = agent_log.find("the scheduler shut down for good (the run is over): stopping")
    check(told >= 0, "the agent is told serve shut down for good")
    check(told >= 0 and "stopped" in agent_log[told:], "and stops on its own")
    for name, text in (("serve.log", read(os.path.join(bed, "serve.log"))), ("agent.log", agent_log)):
        lines = [line for line in text.splitlines() if line]
        unstamped = [line for line in lines if not STAMP.match(line)]
        check(lines and not unstamped, f"every line of {name} starts with its UTC time ({unstamped[:2]})")
    return None


def testbed_pids(work):
    """Every pid scripts/testbed.sh listed: the test stops them too."""
    return [int(line.split()[0]) for line in read(os.path.join(work, "testbed", "pids")).splitlines()
            if line.split()[:1] and line.split()[0].isdigit()]


if __name__ == "__main__":
    sys.exit(main("live-shutdown", DEADLINE_S, run, ("serve.log", "agent-t0/agent.log"), testbed_pids))
