#!/usr/bin/python3
"""Live faults: a run survives a killed agent, a killed worker and a partitioned agent.

    test_live_faults.py --aryl BUILD/aryl --source SOURCE_DIR [--dir TMP]

On loopback: `aryl serve` (speedup 1, detection grace faults.heartbeat_s 2.5 x
faults.missed_heartbeats 2 = 5 s, the least there is), three training agents t0, t1, t2 of 4 GPUs each, t2's
connection through scripts/fault_proxy.py. Three inelastic 4-GPU jobs of 24 s, one per server.
scripts/live_faults.py enacts the plan (times from the run's start):
  4 s   server_crash t0, down_for 8: its agent and workers SIGKILLed, the agent restarted at 12 s;
  6 s   worker_crash 1: one worker of job 1 (on t1) SIGKILLed;
and the test tells the proxy at 3 s: partition 8 (t2 unheard for longer than the grace).

Checks: serve exits 0; jobs.csv has jobs 0, 1, 2 once each, outcome done; summary.json counts
no failed job and at least 3 recoveries; events.log has t0 and t2 lost then back, and job 1
requeued because a worker process died; serve.log reconciles t2's surviving worker(s) and its
agent stops them; the crashed jobs resumed from a checkpoint (a launch whose first progress is
past 0); no process is left, no port is bound. Every process started is stopped by its pid, also
when a check fails; the whole test ends within its own deadline.
"""

import glob
import json
import os
import re
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from live_harness import START, check, launches, main, outcomes, read, wait_for  # noqa: E402

PYTHON = "/usr/bin/python3"
TRACE = ("job_id,submit_s,gpus,duration_s,elastic,min_workers,max_workers\n"
         "a,0,4,24,0,4,4\n"
         "b,0,4,24,0,4,4\n"
         "c,0,4,24,0,4,4\n")
PLAN = ("faults:\n"
        "  - {at: 4, server_crash: t0, down_for: 8}\n"
        "  - {at: 6, worker_crash: 1}\n")
DEADLINE_S = 150  # the whole test; CTest's TIMEOUT is longer


def run(a, work, procs):
    bed, out = os.path.join(work, "testbed"), os.path.join(work, "out")
    os.makedirs(bed)
    with open(os.path.join(work, "trace.csv"), "w") as f:
        f.write(TRACE)
    with open(os.path.join(work, "plan.yaml"), "w") as f:
        f.write(PLAN)
    token = os.path.join(bed, "token")
    with open(os.open(token, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write("live-faults-test-token\n")
    aryl = os.path.abspath(a.aryl)
    pids = open(os.path.join(bed, "pids"), "w")

    serve = procs.start("serve", [
        aryl, "serve", "--token-file", token, "--port-file", os.path.join(bed, "port"),
        "--work-dir", os.path.join(bed, "work"), "--servers", "3",
        "--set", "cluster.training.gpus_per_server=4", "--set", "cluster.inference.servers=0",
        "--trace", os.path.join(work, "trace.csv"), "--speedup", "1", "--out", out,
        "--faults", os.path.join(work, "plan.yaml"), "--stop-grace", "3", "--agent-wait", "30",
        "--set", "faults.heartbeat_s=2.5", "--set", "faults.missed_heartbeats=2",
        "--set", "jobs.restart_overhead_s=0", "--set", "jobs.scale_overhead_s=0",
        "--set", "run.check_invariants=true"],
        os.path.join(bed, "serve.log"), stdout=open(os.path.join(bed, "serve.out"), "w"))
    pids.write(f"{serve.pid} serve\n")
    pids.flush()
    if not check(wait_for(lambda: read(os.path.join(bed, "port")).strip(), 30, "serve's port"), "serve listens"):
        return
    port = int(read(os.path.join(bed, "port")))

    proxy = procs.start("proxy", [PYTHON, os.path.join(a.source, "scripts", "fault_proxy.py"),
                                  "--target", f"127.0.0.1:{port}", "--port-file", os.path.join(bed, "proxy-port")],
                        os.path.join(bed, "proxy.log"), stdin=subprocess.PIPE, text=True)
    pids.write(f"{proxy.pid} proxy t2\n")
    if not check(wait_for(lambda: read(os.path.join(bed, "proxy-port")).strip(), 20, "the proxy's port"),
                 "the fault proxy listens"):
        return
    proxy_port = int(read(os.path.join(bed, "proxy-port")))

    for name in ("t0", "t1", "t2"):
        folder = os.path.join(bed, f"agent-{name}")
        os.makedirs(folder)
        p = procs.start(f"agent {name}", [
            aryl, "agent", "--port", str(proxy_port if name == "t2" else port), "--token-file", token,
            "--name", name, "--gpu-type", "V100", "--gpus", "4", "--pool", "training", "--work-dir", folder],
            os.path.join(folder, "agent.log"))
        pids.write(f"{p.pid} agent {name}\n")
    pids.close()

    faults = procs.start("live_faults", [
        PYTHON, os.path.join(a.source, "scripts", "live_faults.py"), "--plan", os.path.join(work, "plan.yaml"),
        "--dir", bed, "--speedup", "1", "--start-timeout", "40"], os.path.join(bed, "live_faults.out"))

    serve_log = os.path.join(bed, "serve.log")
    if not check(wait_for(lambda: "the run starts" in read(serve_log), 40, "the run to start"), "the run starts"):
        return
    began = time.monotonic()
    wait_for(lambda: time.monotonic() - began >= 3, 5, "3 s into the run")
    proxy.stdin.write("partition 8\n")
    proxy.stdin.flush()

    try:
        rc = serve.wait(timeout=max(1, DEADLINE_S - 30 - (time.monotonic() - START)))
    except subprocess.TimeoutExpired:
        check(False, "serve ends within the test's deadline")
        return
    print(f"serve ran {time.monotonic() - began:.1f} s after the run started", flush=True)
    try:
        faults.wait(timeout=15)
    except subprocess.TimeoutExpired:
        check(False, "live_faults.py ends once serve has")
    if not check(rc == 0, f"serve exits 0 (got {rc})"):
        print("--- last lines of serve.log\n" + "".join(read(serve_log).splitlines(True)[-25:]))
        return

    ends, listed = outcomes(out)
    check(sorted(ends) == ["0", "1", "2"] and listed == 3,
          f"jobs.csv lists jobs 0, 1 and 2 once each (got {sorted(ends)} in {listed} rows)")
    check(all(o == "done" for o in ends.values()), f"every job's outcome is done ({list(ends.values())})")
    summary = json.loads(read(os.path.join(out, "summary.json")))
    check(summary.get("jobs_failed") == 0, f"no job failed (jobs_failed {summary.get('jobs_failed')})")
    check(summary.get("recoveries", 0) >= 3, f"three crashed jobs ran again (recoveries {summary.get('recoveries')})")

    events = read(os.path.join(out, "events.log"))
    placed = {m.group(1): m.group(2) for m in re.finditer(r"scheduler start job-(\d) workers=4 \S+ \[(t\d):4\]", events)}
    starts = re.findall(r"scheduler start job-(\d) workers=4 \S+ \[(t\d):4\]", events)
    first = {}
    for job, server in starts:
        first.setdefault(job, server)
    check(first == {"0": "t0", "1": "t1", "2": "t2"}, f"jobs 0, 1, 2 started on t0, t1, t2 (got {first}; {placed})")
    for server in ("t0", "t2"):
        lost = [m.start() for m in re.finditer(rf"scheduler lost server={server} jobs=1", events)]
        back = [m.start() for m in re.finditer(rf"scheduler back server={server}\b", events)]
        check(len(lost) == 1 and len(back) == 1 and lost[0] < back[0],
              f"{server} is lost with its job, then back (lost at {lost}, back at {back})")
    check(re.search(r"scheduler preempt job-1 .*a worker process died; queued again", events) is not None,
          "job 1 is requeued because a worker process died")
    check(len(re.findall(r"scheduler finish job-\d", events)) == 3, "three jobs finish, each once")

    log = read(serve_log)
    back = re.findall(r"agent t2: registered server t2 .*running (\d+) workers", log)
    check(len(back) >= 2 and int(back[1]) == 4, f"t2's agent comes back listing its 4 surviving workers ({back})")
    check(re.search(r"agent t2: back; reconciled with the \d+ workers it still runs", log) is not None,
          "t2's agent is reconciled at its first heartbeat")
    check("server t2: its agent was not heard for 5 s: reported lost" in log, "serve reports t2 lost after the grace")
    check(re.search(r"stop job 2: SIGTERM", read(os.path.join(bed, "agent-t2", "agent.log"))) is not None,
          "t2's agent stops the workers of job 2, moved away while it was partitioned")
    fl = read(os.path.join(bed, "faults.log"))
    check(re.search(r"server_crash t0: SIGKILL to agent \d+ and 4 worker", fl) is not None,
          "live_faults.py killed t0's agent and its 4 workers")
    check("server_crash t0: agent started again" in fl, "live_faults.py started t0's agent again")
    check(re.search(r"worker_crash 1: SIGKILL to rank 0 ", fl) is not None, "live_faults.py killed a worker of job 1")
    for job in ("0", "1"):
        firsts = []
        for path in glob.glob(os.path.join(bed, "agent-*", "logs", f"{job}-0.log")):
            firsts += launches(read(path))
        check(any(w > 0 for w in firsts), f"job {job} resumed from a checkpoint (first progress per launch: {firsts})")
    return [port, proxy_port]



def restarted_agents(work):
    """Agents scripts/live_faults.py started again: the test stops them too."""
    return [int(line.split()[0]) for line in read(os.path.join(work, "testbed", "pids")).splitlines()
            if line.endswith("restarted")]


if __name__ == "__main__":
    sys.exit(main("live-faults", DEADLINE_S, run,
                  ("serve.log", "proxy.log", "faults.log", "live_faults.out", "agent-t2/agent.log"),
                  restarted_agents))
