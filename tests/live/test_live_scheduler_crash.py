#!/usr/bin/python3
"""A fault plan's scheduler crash, enacted for real: scripts/live_faults.py SIGKILLs `aryl serve
--state`, scripts/testbed.sh starts it again on the same port and journal, and the run carries
on; in the same run, a heartbeat-loss link enacted through the testbed's fault proxy.

    test_live_scheduler_crash.py --aryl BUILD/aryl --source SOURCE_DIR [--dir TMP]

scripts/testbed.sh on loopback: serve with --state at speedup 2 (detection grace
faults.heartbeat_s 5 x faults.missed_heartbeats 2 / 2 = 5 s), two training agents t0, t1 of 4
GPUs, t0 through its fault proxy (--proxy t0), and one inference agent i0 of 4 T4 GPUs, lent to
training from the start (inference demand 0). Three inelastic 4-GPU jobs: a (16 s, on t0), b
(40 s, on t1) and c (6 s of work at 1 s, on the lent i0, inelastic jobs allowed there).
scripts/live_faults.py --speedup 2 enacts the plan (simulated seconds from the run's start;
wall time is half):
   4 s  scheduler_crash, down_for 3: serve SIGKILLed while the three jobs run, started again by
        the testbed 1.5 s later on the same port and state file;
  20 s  link t0 for 14 s, loss 1: t0's proxy drops every heartbeat of t0's agent, idle since a
        ended (about 16 s), and passes every other frame.
While the loss holds, `aryl status` asks serve through t0's proxy.

Checks: testbed.sh exits 0, the restarted serve's code (the first one died of SIGKILL); DIR/pids
lists a second serve, "PID serve restarted", which live_faults.py follows; it was started the
plan's down time / speedup after the kill, on the same port; jobs.csv lists a, b and c once
each, done; summary.json counts 1 scheduler restart, the three jobs adopted and none restarted,
and its makespan runs from the run's start; the restarted serve keeps i0 lent and adopts c
there; a /proc sampler (every 50 ms, the whole run) never sees two launches of one job alive at
once. The loss: the proxy's random stream is seeded from the entry (crc32 of "t0 20"); it drops every heartbeat of t0 and
nothing else (the status through it is answered); serve, which hears an idle agent only by its
heartbeats, drops t0's connection for silence although the proxy never cut it, reports t0 lost
during the loss, and has it back only after the loss ends. No process is left, no port bound;
every process is stopped by its pid, also when a check fails; the test ends within its own
deadline.
"""

import json
import os
import re
import subprocess
import sys
import time
import zlib

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from live_harness import START, Sampler, check, main, outcomes, read, wait_for  # noqa: E402

PYTHON = "/usr/bin/python3"
SPEEDUP = 2
TRACE = ("job_id,submit_s,gpus,duration_s,elastic,min_workers,max_workers\n"
         "a,0,4,16,0,4,4\n"
         "b,0,4,40,0,4,4\n"
         "c,1,4,6,0,4,4\n")
DEMAND = "t_s,servers_needed\n0,0\n"  # i0 is lent to training from the start
CRASH_AT, DOWN_FOR = 4, 3
LINK_AT, LINK_FOR = 20, 14
PLAN = ("faults:\n"
        f"  - {{at: {CRASH_AT}, scheduler_crash: true, down_for: {DOWN_FOR}}}\n"
        f"  - {{at: {LINK_AT}, link: t0, for: {LINK_FOR}, loss: 1}}\n")
DEADLINE_S = 120  # the whole test; CTest's TIMEOUT is longer


def run(a, work, procs, sampler):
    bed, out = os.path.join(work, "testbed"), os.path.join(work, "out")
    os.makedirs(bed)
    trace, plan = os.path.join(work, "trace.csv"), os.path.join(work, "plan.yaml")
    demand = os.path.join(work, "demand.csv")
    with open(trace, "w") as f:
        f.write(TRACE)
    with open(demand, "w") as f:
        f.write(DEMAND)
    with open(plan, "w") as f:
        f.write(PLAN)
    aryl = os.path.abspath(a.aryl)
    testbed = procs.start("testbed", [
        os.path.join(a.source, "scripts", "testbed.sh"), "--dir", bed, "--training", "2", "--inference", "1",
        "--gpus", "4", "--proxy", "t0", "--",
        "--state", os.path.join(bed, "state.db"), "--trace", trace, "--speedup", str(SPEEDUP), "--out", out,
        "--stop-grace", "3", "--agent-wait", "30", "--set", "faults.heartbeat_s=5",
        "--set", "faults.missed_heartbeats=2", "--set", "jobs.restart_overhead_s=0",
        "--set", "jobs.scale_overhead_s=0", "--set", "run.check_invariants=true",
        "--set", f"inference.trace={demand}", "--set", "scheduler.inelastic_on_loaned=true"],
        os.path.join(bed, "testbed.out"), env=dict(os.environ, ARYL_BIN=aryl))

    pids_file = os.path.join(bed, "pids")

    def listed(*words):
        return [line.split()[1:] for line in read(pids_file).splitlines() if line.split()[1:] == list(words)]

    # live_faults.py reads DIR/pids when it starts: once the agents are in it.
    if not check(wait_for(lambda: listed("agent", "t0") and listed("agent", "t1") and listed("agent", "i0") and
                          listed("proxy", "t0"), 30, "the testbed's agents and proxy"),
                 "testbed.sh starts serve, t0's proxy and the three agents"):
        return
    port = int(read(os.path.join(bed, "port")))
    proxy_port = int(read(os.path.join(bed, "agent-t0", "proxy.port")))
    faults = procs.start("live_faults", [
        PYTHON, os.path.join(a.source, "scripts", "live_faults.py"), "--plan", plan, "--dir", bed,
        "--speedup", str(SPEEDUP), "--start-timeout", "40"], os.path.join(bed, "live_faults.out"))
    sampler.start()
    serve_log, faults_log = os.path.join(bed, "serve.log"), os.path.join(bed, "faults.log")
    if not check(wait_for(lambda: "the run starts" in read(serve_log), 40, "the run to start"), "the run starts"):
        return

    # A status through t0's proxy while it drops t0's heartbeats: its frames must pass.
    if check(wait_for(lambda: "told 'loss 1 " in read(faults_log), 30, "the loss to begin"),
             "live_faults.py has t0's proxy drop its heartbeats"):
        status = procs.start("status", [aryl, "status", "--port", str(proxy_port), "--token-file",
                                        os.path.join(bed, "token"), "--json"], os.path.join(bed, "status.log"),
                             stdout=open(os.path.join(bed, "status.json"), "w"))
        try:
            rc = status.wait(timeout=15)
        except subprocess.TimeoutExpired:
            rc = None
        still = "link t0 ends" not in read(faults_log)
        try:
            servers = {s["name"] for s in json.loads(read(os.path.join(bed, "status.json"))).get("servers", [])}
        except ValueError:
            servers = set()
        check(rc == 0 and still and servers == {"t0", "t1", "i0"},
              f"a status through t0's proxy during the loss is answered (exit {rc}, servers {sorted(servers)}, "
              f"loss still on: {still})")

    try:
        rc = testbed.wait(timeout=max(1, DEADLINE_S - 30 - (time.monotonic() - START)))
    except subprocess.TimeoutExpired:
        check(False, "testbed.sh ends within the test's deadline")
        return
    try:
        faults.wait(timeout=15)
    except subprocess.TimeoutExpired:
        check(False, "live_faults.py ends once the restarted serve has")
    if not check(rc == 0, f"testbed.sh exits 0, the restarted serve's code (got {rc})"):
        print("--- last lines of testbed.out\n" + "".join(read(os.path.join(bed, "testbed.out")).splitlines(True)[-25:]))
        return [port, proxy_port]
    checks_restart(bed, out, port, sampler)
    checks_loss(bed, out)
    return [port, proxy_port]


def checks_restart(bed, out, port, sampler):
    serves = [line.split() for line in read(os.path.join(bed, "pids")).splitlines() if line.split()[1:2] == ["serve"]]
    check(len(serves) == 2 and serves[1][2:] == ["restarted"] and serves[0][0] != serves[1][0],
          f"DIR/pids lists serve, then the restarted serve under another pid ({serves})")
    fl = read(os.path.join(bed, "faults.log"))
    killed = re.search(r"t=([0-9.]+) s: scheduler_crash: SIGKILL to serve (\d+)", fl)
    back = re.search(r"t=([0-9.]+) s: scheduler_crash: serve started again by the testbed, pid (\d+)", fl)
    check(killed is not None and len(serves) == 2 and killed.group(2) == serves[0][0] and
          CRASH_AT / SPEEDUP <= float(killed.group(1)) < CRASH_AT / SPEEDUP + 0.5,
          f"live_faults.py SIGKILLs the first serve at {CRASH_AT} / {SPEEDUP} s ({killed and killed.group(0)})")
    down = float(back.group(1)) - float(killed.group(1)) if killed and back else None
    check(back is not None and len(serves) == 2 and back.group(2) == serves[1][0] and
          DOWN_FOR / SPEEDUP - 0.05 <= down < DOWN_FOR / SPEEDUP + 1,
          f"live_faults.py follows the restarted serve, started {DOWN_FOR} / {SPEEDUP} s after the kill "
          f"({back and back.group(0)}; down {down if down is None else round(down, 2)} s)")
    log = read(os.path.join(bed, "serve.log"))
    check(log.count(f"listening on 127.0.0.1:{port}\n") == 2, f"both serves listen on port {port}")

    ends, listed = outcomes(out)
    check(sorted(ends) == ["0", "1", "2"] and listed == 3,
          f"jobs.csv lists a, b and c once each ({sorted(ends)}, {listed} rows)")
    check(all(o == "done" for o in ends.values()), f"every job's outcome is done ({list(ends.values())})")
    summary = json.loads(read(os.path.join(out, "summary.json")) or "{}")
    check(summary.get("scheduler_restarts") == 1, f"summary.json counts one scheduler restart "
                                                  f"({summary.get('scheduler_restarts')})")
    check(summary.get("adopted_after_scheduler_restart") == 3 and summary.get("restarts_after_scheduler_restart") == 0
          and summary.get("jobs_completed") == 3,
          f"summary.json: the three jobs adopted by the restarted serve, none restarted, all completed "
          f"({summary.get('adopted_after_scheduler_restart')}, {summary.get('restarts_after_scheduler_restart')}, "
          f"{summary.get('jobs_completed')})")
    # c runs on the lent inference server: the loan carries on over the restart, and c with it.
    check("loans carry on (i0 loaned)" in log, "the restarted serve keeps i0 lent")
    events = read(os.path.join(out, "events.log"))
    check(re.search(r"scheduler adopt job-2 workers=4 T4 \[i0:4\]", events) is not None,
          "c, on the lent i0 at the kill, is adopted there")
    # The restarted serve's first snapshot comes after the restart: the run is measured from its start.
    check(summary.get("makespan_s", 0) >= 40, f"summary.json's makespan spans the run from its start, past b's "
                                              f"40 s ({summary.get('makespan_s')})")
    time.sleep(0.2)
    sampler.stop.set()
    sampler.join()
    check(sampler.samples > 100 and not sampler.overlaps,
          f"no job ever had two launches alive at once ({sampler.samples} samples; overlaps {sampler.overlaps[:3]})")


def checks_loss(bed, out):
    events = read(os.path.join(out, "events.log"))
    # The restarted serve carries events.log on: a is there as started, or as adopted.
    done = re.search(r"^([0-9.]+) scheduler finish job-0 ", events, re.M)
    check(re.search(r"scheduler (start|adopt) job-0 workers=4 \S+ \[t0:4\]", events) is not None and
          done is not None and float(done.group(1)) < LINK_AT,
          f"job 0 (a) runs on t0 and ends before the loss begins at {LINK_AT} s ({done and done.group(0)})")
    proxy = read(os.path.join(bed, "agent-t0", "proxy.log"))
    seed = zlib.crc32(f"t0 {LINK_AT}".encode())
    check(f"loss 1, seed {seed}:" in proxy, f"t0's proxy draws its losses from the entry's seed, {seed}")
    ended = re.search(r"loss 1 ended: (\d+) of (\d+) heartbeat", proxy)
    check(ended is not None and ended.group(1) == ended.group(2) and int(ended.group(1)) >= 4,
          f"t0's proxy drops every heartbeat of t0 during the loss ({ended and ended.group(0)})")
    before = proxy.split("loss 1 ended", 1)[0]
    check(ended is not None and "drop:" not in before and "partition" not in before,
          "t0's proxy never cuts t0's connection during the run")
    log = read(os.path.join(bed, "serve.log"))
    silent = re.findall(r"agent t0: disconnected: (.*)", log)
    check(silent == ["nothing heard for 5 s"], f"serve drops t0's connection once, for silence alone ({silent})")
    lost = [float(t) for t in re.findall(r"^([0-9.]+) scheduler lost server=t0 jobs=0", events, re.M)]
    back = [float(t) for t in re.findall(r"^([0-9.]+) scheduler back server=t0\b", events, re.M)]
    end = LINK_AT + LINK_FOR
    check(len(lost) == 1 and len(back) == 1 and LINK_AT < lost[0] < end <= back[0] + 0.2,
          f"t0 is lost during the loss and back only after it ends at {end} s (lost {lost}, back {back})")


def run_sampled(a, work, procs):
    """The run, with the sampler stopped on every way out."""
    sampler = Sampler(work)
    try:
        return run(a, work, procs, sampler)
    finally:
        sampler.stop.set()


def testbed_pids(work):
    """Every pid scripts/testbed.sh listed: the test stops them too."""
    return [int(line.split()[0]) for line in read(os.path.join(work, "testbed", "pids")).splitlines()
            if line.split()[:1] and line.split()[0].isdigit()]


if __name__ == "__main__":
    sys.exit(main("live-scheduler-crash", DEADLINE_S, run_sampled,
                  ("testbed.out", "serve.log", "faults.log", "live_faults.out", "agent-t0/proxy.log",
                   "agent-t0/agent.log"), testbed_pids))
