#!/usr/bin/python3
"""A client's job is submitted when it reaches the scheduler: events.log and jobs.csv agree on
that time, and its queuing and JCT are counted from it.

    test_live_submit_time.py --aryl BUILD/aryl --source SOURCE_DIR [--dir TMP]

On loopback: `aryl serve --no-workload --speedup 10`, one training agent t0 of 8 GPUs. Nothing
happens for 3 s (30 simulated s: the scheduler has no event in that time), then `aryl submit
--gpus 8 --duration 20`; once it is done serve is stopped with SIGTERM.

Checks: jobs.csv's submit_s is the time of events.log's submit line (the same text) and is at
least 25 s (the 3 s waited, at 10x, less slack); the job queued under 5 simulated s (the
cluster was empty) and its JCT is its 20 s of work plus under 10 s; the submit line comes before
the job's start. No process is left, no port bound.
"""

import re
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from live_harness import check, main, wait_for  # noqa: E402
from serve_bed import Bed  # noqa: E402

DEADLINE_S = 90


def run(a, work, procs):
    bed = Bed(a, work, procs, "live-submit-time-test-token")
    serve = bed.serve(["--no-workload", "--servers", "1", "--set", "cluster.training.gpus_per_server=8",
                       "--set", "cluster.inference.servers=0", "--speedup", "10",
                       "--set", "jobs.restart_overhead_s=0", "--set", "jobs.scale_overhead_s=0"])
    if not serve:
        return None
    bed.agent("t0", 8)
    if not bed.run_starts():
        return [bed.port]
    # The scenario: simulated time passes with no scheduler event before the job arrives.
    time.sleep(3)
    job = bed.submit("--name", "late", "--gpus", "8", "--duration", "20")
    if not check(job == 0, f"the submit gets id 0 ({job})"):
        return [bed.port]
    if not check(wait_for(bed.idle, 30, "the job to end"), "the job ends"):
        return [bed.port]
    if not bed.stop(serve):
        return [bed.port]

    rows = bed.rows("jobs.csv")
    if not check(len(rows) == 1 and rows[0]["outcome"] == "done", f"jobs.csv has the one job, done ({rows})"):
        return [bed.port]
    r = rows[0]
    events = bed.events()
    m = re.search(r"^(\S+) scheduler submit job-0 ", events, re.M)
    start = re.search(r"^(\S+) scheduler start job-0 ", events, re.M)
    if not check(m is not None and start is not None, "events.log has the job's submit and start"):
        return [bed.port]
    logged, started = float(m.group(1)), float(start.group(1))
    submit_s, queued_s, jct_s = float(r["submit_s"]), float(r["queued_s"]), float(r["jct_s"])
    check(r["submit_s"] == m.group(1), f"jobs.csv's submit_s {r['submit_s']} is events.log's submit time "
                                       f"{m.group(1)}")
    check(submit_s >= 25, f"the submit is at its arrival, about 30 simulated s in (submit_s {submit_s})")
    check(logged <= started, f"the submit ({logged}) comes before the start ({started})")
    check(queued_s < 5, f"the job queued under 5 s on an empty cluster (queued_s {queued_s})")
    check(20 <= jct_s < 30, f"its JCT is its 20 s of work plus a little (jct_s {jct_s})")
    return [bed.port]


if __name__ == "__main__":
    sys.exit(main("live-submit-time", DEADLINE_S, run, ("serve.log", "agent-t0/agent.log")))
