#!/usr/bin/python3
"""`aryl status` tells a dead server from a healthy one, and says why each queued job waits.

    test_live_status.py --aryl BUILD/aryl --source SOURCE_DIR [--dir TMP]

On loopback: `aryl serve --no-workload --speedup 6` (detection grace 30 / 6 = 5 s), training
agents t0 and t1 of 4 GPUs each, strict queue order (no backfill). Agent t1 is SIGKILLed; once
its server is reported lost, job big (8 GPUs, 30 s) and job small (1 GPU, 60 s: behind big in
shortest-job order) are submitted. Then t1's agent is started again; both jobs run to their end
and serve is stopped with SIGTERM.

Checks: with t1's agent gone its server is not `up` (unreachable, then lost) while t0's is; the
lost one shows no free GPUs; big waits with a reason saying it does not fit on the training
servers; small, which would fit on t0, waits behind job big in queue order; running jobs carry
no reason; once the agent is back t1 is up again with its GPUs, and both jobs end done. No
process is left, no port bound.
"""

import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from live_harness import check, job, main, server, wait_for  # noqa: E402
from serve_bed import Bed  # noqa: E402

DEADLINE_S = 120


def run(a, work, procs):
    bed = Bed(a, work, procs, "live-status-test-token")
    serve = bed.serve(["--no-workload", "--servers", "2", "--set", "cluster.training.gpus_per_server=4",
                       "--set", "cluster.inference.servers=0", "--speedup", "6", "--set", "scheduler.backfill=false",
                       "--set", "jobs.restart_overhead_s=0", "--set", "jobs.scale_overhead_s=0",
                       "--set", "run.check_invariants=true"])
    if not serve:
        return None
    bed.agent("t0", 4)
    t1 = bed.agent("t1", 4)
    if not bed.run_starts():
        return [bed.port]
    s = bed.status()
    check(server(s, "t0").get("state") == "up" and server(s, "t1").get("state") == "up",
          f"both servers are up while their agents run ({s and s['servers']})")

    t1.kill()
    t1.wait()
    s = bed.status()
    check(server(s, "t1").get("state") in ("unreachable", "lost") and server(s, "t0").get("state") == "up",
          f"with its agent killed t1 is not shown up, t0 still is ({s and s['servers']})")
    if not check(wait_for(lambda: server(bed.status(), "t1").get("state") == "lost", 20, "t1 to be lost"),
                 "t1 is shown lost after the detection grace"):
        return [bed.port]
    s = bed.status()
    check(server(s, "t1").get("free") == 0, f"a lost server shows no free GPUs ({server(s, 't1')})")
    check(server(s, "t0").get("free") == 4, f"t0 shows its 4 GPUs free ({server(s, 't0')})")

    big = bed.submit("--name", "big", "--gpus", "8", "--duration", "30")
    small = bed.submit("--name", "small", "--gpus", "1", "--duration", "60")
    if not check(big == 0 and small == 1, f"big and small get ids 0 and 1 ({big}, {small})"):
        return [bed.port]
    # The round placing nothing is due at once; wait for both to carry a reason.
    wait_for(lambda: all(job(bed.status(), i).get("reason") for i in (0, 1)), 5, "reasons")
    s = bed.status()
    b, sm = job(s, 0), job(s, 1)
    print(f"status: big {b}, small {sm}", flush=True)
    check(b.get("state") == "queued" and "no fit on training servers" in b.get("reason", ""),
          f"big waits because it does not fit on the training servers ({b})")
    check(sm.get("state") == "queued" and "behind job 0" in sm.get("reason", ""),
          f"small, which t0 could hold, waits behind job 0 in queue order ({sm})")

    bed.agent("t1", 4)
    if not check(wait_for(lambda: job(bed.status(), 0).get("state") == "running", 20, "big to run"),
                 "big runs once t1 is back"):
        return [bed.port]
    s = bed.status()
    check(server(s, "t1").get("state") == "up", f"t1 is up again once its agent is back ({server(s, 't1')})")
    check("reason" not in job(s, 0), f"a running job carries no reason ({job(s, 0)})")
    if not check(wait_for(bed.idle, 40, "both jobs to end"), "both jobs end"):
        return [bed.port]
    if not bed.stop(serve):
        return [bed.port]
    ends = {r["name"]: r["outcome"] for r in bed.rows("jobs.csv")}
    check(ends == {"big": "done", "small": "done"}, f"both jobs are done ({ends})")
    return [bed.port]


if __name__ == "__main__":
    sys.exit(main("live-status", DEADLINE_S, run, ("serve.log", "agent-t0/agent.log", "agent-t1/agent.log")))
