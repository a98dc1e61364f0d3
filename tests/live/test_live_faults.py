#!/usr/bin/python3
"""Live faults: a run survives a killed agent, a killed worker, a partitioned agent, a dropped
connection and a delayed link.

    test_live_faults.py --aryl BUILD/aryl --source SOURCE_DIR [--dir TMP]

On loopback: `aryl serve` (speedup 1, detection grace faults.heartbeat_s 2.5 x
faults.missed_heartbeats 2 = 5 s, the least there is), three training agents t0, t1, t2 of 4 GPUs each, t2's
connection through scripts/fault_proxy.py, laid out as scripts/testbed.sh --proxy t2 does (its
FIFO agent-t2/proxy.ctl, "PID proxy t2" in pids). Three inelastic 4-GPU jobs of 24 s, one per
server. scripts/live_faults.py enacts the plan (times from the run's start):
  3 s   disconnect t2 for 8: t2's proxy partitions the link (t2 unheard for longer than the grace);
  4 s   server_crash t0, down_for 8: its agent and workers SIGKILLed, the agent restarted at 12 s;
  6 s   worker_crash 1: one worker of job 1 (on t1) SIGKILLed;
 15 s   link t2 for 10, delay_s 1.5: t2's proxy holds every chunk 1.5 s, both ways, until 25 s
        (heartbeats 2.5 s apart at most, under the grace), then delay 0.
Once t2 is back and runs a job again (about 12 s), the test tells the proxy on its standard input
(a drop has no plan kind): drop (both sides of t2's connection closed; the agent redials within
0.1 s, well inside the grace); once t2 is reconciled again and the link's delay holds, `aryl
status` asks serve through the proxy.

Checks: serve exits 0; jobs.csv has jobs 0, 1, 2 once each, outcome done; summary.json counts
no failed job and at least 3 recoveries; events.log has t0 and t2 lost then back, and job 1
requeued because its rank 0 was killed by signal 9; serve.log reconciles t2's surviving worker(s) and its
agent stops them; the crashed jobs resumed from a checkpoint (a launch whose first progress is
past 0). The drop and the delay cost nothing (docs/live.md: an agent back within the grace is
reconciled, not lost): t2 is lost once only, its agent registers three times in all and the third
time lists the 4 workers of the job it runs, which is launched once on t2 and has no event between
that start and its finish; the status through the delayed link took at least two round trips of
delay and shows that job running and t2 full; live_faults.py enacted the partition and the delay
through the proxy's FIFO, and the delay held for the whole status. No process is left, no port is bound. Every
process started is stopped by its pid, also when a check fails; the whole test ends within its
own deadline.
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
DELAY_S = 1.5  # below the 5 s grace even with a heartbeat's 1 s on top
LINK_AT, LINK_FOR = 15, 10  # after the drop (about 12 s) and t2's reconciliation; longer than a status takes
PLAN = ("faults:\n"
        "  - {at: 3, disconnect: t2, for: 8}\n"
        "  - {at: 4, server_crash: t0, down_for: 8}\n"
        "  - {at: 6, worker_crash: 1}\n"
        f"  - {{at: {LINK_AT}, link: t2, for: {LINK_FOR}, delay_s: {DELAY_S}}}\n")
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

    for name in ("t0", "t1", "t2"):
        os.makedirs(os.path.join(bed, f"agent-{name}"))
    t2 = os.path.join(bed, "agent-t2")
    proxy = procs.start("proxy", [PYTHON, os.path.join(a.source, "scripts", "fault_proxy.py"),
                                  "--target", f"127.0.0.1:{port}", "--port-file", os.path.join(t2, "proxy.port"),
                                  "--control", os.path.join(t2, "proxy.ctl")],
                        os.path.join(t2, "proxy.log"), stdin=subprocess.PIPE, text=True)
    pids.write(f"{proxy.pid} proxy t2\n")
    if not check(wait_for(lambda: read(os.path.join(t2, "proxy.port")).strip(), 20, "the proxy's port"),
                 "the fault proxy listens"):
        return
    proxy_port = int(read(os.path.join(t2, "proxy.port")))

    for name in ("t0", "t1", "t2"):
        folder = os.path.join(bed, f"agent-{name}")
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
    t2_job = network_faults(a, bed, procs, proxy, proxy_port, token)

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
    check(re.search(r"scheduler preempt job-1 .*rank 0 was killed by signal 9; queued again", events) is not None,
          "job 1 is requeued because its worker was killed (rank 0, signal 9)")
    check(len(re.findall(r"scheduler finish job-\d", events)) == 3, "three jobs finish, each once")
    if t2_job is not None:
        after = events.split(f"scheduler start job-{t2_job} workers=4 V100 [t2:4]", 1)
        between = after[1].split(f"scheduler finish job-{t2_job} ", 1)[0] if len(after) == 2 else ""
        extra = [line for line in between.splitlines() if re.search(rf"job-{t2_job}\b|server=t2", line)]
        check(len(after) == 2 and not extra, f"job {t2_job}, on t2 through the drop and the delay, has no event "
                                             f"of its own or t2's between its start there and its finish ({extra})")
        firsts = launches(read(os.path.join(bed, "agent-t2", "logs", f"{t2_job}-0.log")))
        check(len(firsts) == 1, f"job {t2_job} is launched once on t2 (first progress per launch: {firsts})")

    log = read(serve_log)
    back = re.findall(r"agent t2: registered server t2 .*running (\d+) workers", log)
    check(len(back) >= 2 and int(back[1]) == 4, f"t2's agent comes back listing its 4 surviving workers ({back})")
    check(len(back) == 3 and int(back[2]) == 4,
          f"t2's agent registers once more, after the drop only, listing the 4 workers it runs ({back})")
    gone = re.findall(r"agent t2: disconnected: (.*)", log)
    check(len(gone) == 2 and gone[0].startswith("nothing heard"),
          f"serve loses t2's connection twice, to the partition's silence and to the drop ({gone})")
    check(re.search(r"agent t2: back; reconciled with the 4 workers it still runs", log) is not None,
          "t2's agent is reconciled with its 4 workers after the drop")
    proxy_log = read(os.path.join(bed, "agent-t2", "proxy.log"))
    check("drop: closing 1 connection(s)" in proxy_log, "the proxy drops t2's connection")
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
    told = re.findall(r"t=([0-9.]+) s: (disconnect t2|link t2|link t2 ends): t2's proxy told '([^']*)'", fl)
    check([(w, c) for _, w, c in told] == [("disconnect t2", "partition 8"), ("link t2", f"delay {DELAY_S:g}"),
                                           ("link t2 ends", "delay 0")] and
          all(abs(float(t) - at) < 0.5 for (t, _, _), at in zip(told, (3, LINK_AT, LINK_AT + LINK_FOR))),
          f"live_faults.py tells t2's proxy to partition at 3 s, delay at {LINK_AT} s and stop at "
          f"{LINK_AT + LINK_FOR} s ({told})")
    cut = re.findall(r"\[proxy +([0-9.]+)\] (partition for 8 s|healed)", proxy_log)
    check([w for _, w in cut] == ["partition for 8 s", "healed"] and abs(float(cut[1][0]) - float(cut[0][0]) - 8) < 0.2,
          f"t2's proxy partitions the link for 8 s, once ({cut})")
    for job in ("0", "1"):
        firsts = []
        for path in glob.glob(os.path.join(bed, "agent-*", "logs", f"{job}-0.log")):
            firsts += launches(read(path))
        check(any(w > 0 for w in firsts), f"job {job} resumed from a checkpoint (first progress per launch: {firsts})")
    return [port, proxy_port]



def network_faults(a, bed, procs, proxy, proxy_port, token):
    """Drops t2's link, then delays it while a status asks through it; returns the job t2 runs."""
    agent_log, serve_log = os.path.join(bed, "agent-t2", "agent.log"), os.path.join(bed, "serve.log")

    def running_again():  # the job launched on t2 since it came back from the partition
        parts = read(agent_log).split("registered with")
        m = re.search(r"launch job (\d+) rank 3 of 4", parts[2]) if len(parts) >= 3 else None
        return m.group(1) if m else None

    # Dropped once the launch has reached the agent: the next frames that matter are the job's
    # exits, about 20 s later, so the drop can lose only heartbeats and progress.
    if not check(wait_for(running_again, 30, "t2 to run a job again after the partition"),
                 "t2 runs a job again after the partition"):
        return None
    job = running_again()
    proxy.stdin.write("drop\n")
    proxy.stdin.flush()
    if not check(wait_for(lambda: read(serve_log).count("agent t2: back; reconciled") >= 2, 15,
                          "t2's agent to be reconciled after the drop"), "t2's agent is back after the drop"):
        return job

    # The plan's link delays t2's proxy from LINK_AT s to LINK_AT + LINK_FOR s.
    faults_log = os.path.join(bed, "faults.log")
    if not check(wait_for(lambda: f"delay {DELAY_S:g} s" in read(os.path.join(bed, "agent-t2", "proxy.log")), 20,
                          "the plan's link to delay t2's proxy"), "the proxy delays t2's link"):
        return job
    began = time.monotonic()
    status = procs.start("status", [os.path.abspath(a.aryl), "status", "--port", str(proxy_port), "--token-file", token,
                                    "--json"], os.path.join(bed, "status.log"),
                         stdout=open(os.path.join(bed, "status.json"), "w"))
    try:
        rc = status.wait(timeout=30)
    except subprocess.TimeoutExpired:
        rc = None
    took = time.monotonic() - began
    still = "link t2 ends" not in read(faults_log)
    # hello and status request each wait a round trip: two chunks held DELAY_S each.
    check(rc == 0 and took >= 4 * DELAY_S - 0.05 and still,
          f"a status through the delayed link is answered after two round trips of delay "
          f"(exit {rc}, {took:.2f} s; at least {4 * DELAY_S:g} s; the delay held throughout: {still})")
    try:
        st = json.loads(read(os.path.join(bed, "status.json")))
    except ValueError:
        st = {}
    jobs = {str(j["job_id"]): j for j in st.get("jobs", [])}
    servers = {s["name"]: s for s in st.get("servers", [])}
    check(jobs.get(job, {}).get("state") == "running" and servers.get("t2", {}).get("free") == 0,
          f"under the delay job {job} still runs and t2 is full (jobs {list(jobs.values())}, t2 {servers.get('t2')})")
    return job


def restarted_agents(work):
    """Agents scripts/live_faults.py started again: the test stops them too."""
    return [int(line.split()[0]) for line in read(os.path.join(work, "testbed", "pids")).splitlines()
            if line.endswith("restarted")]


if __name__ == "__main__":
    sys.exit(main("live-faults", DEADLINE_S, run,
                  ("serve.log", "agent-t2/proxy.log", "faults.log", "live_faults.out", "agent-t2/agent.log"),
                  restarted_agents))
