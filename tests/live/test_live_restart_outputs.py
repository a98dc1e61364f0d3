#!/usr/bin/python3
"""After a scheduler restart the run's outputs still cover the whole run: events.log and
timeline.csv keep what happened before the kill, each event once, and summary.json counts the
recoveries that finished before it.

    test_live_restart_outputs.py --aryl BUILD/aryl --source SOURCE_DIR [--dir TMP]

On loopback: `aryl serve --state --no-workload --speedup 6` (detection grace 5 s), training
agents t0 and t1 of 4 GPUs each. Job long (4 GPUs, 150 simulated s) is submitted; the agent of
the server it runs on is SIGKILLed, the server is lost, and the job recovers on the other one
(one recovery). The agent is started again, then serve gets SIGKILL and a second serve starts on
the same port and state file; the job runs to its end and the second serve is stopped with
SIGTERM.

Checks: events.log has the first serve's submit and lost lines (once each), the second serve's
restore, and one finish of the job; its times never go back; `aryl show` of the job in the
second serve has its history from the first serve's submit to its finish; no line appears twice; summary.json
counts its lines as events, 1 scheduler restart and 1 recovery, its wall time covers both serves
and its preemptions are jobs.csv's; timeline.csv has one header and
starts at the run's start, before the kill, its times never going back. No process is left, no
port bound.
"""

import collections
import json
import os
import re
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from live_harness import check, main, read, wait_for  # noqa: E402
from serve_bed import Bed  # noqa: E402

DEADLINE_S = 150


def serve_args(bed):
    return ["--no-workload", "--state", os.path.join(bed.dir, "state.db"), "--servers", "2",
            "--set", "cluster.training.gpus_per_server=4", "--set", "cluster.inference.servers=0",
            "--speedup", "6", "--set", "jobs.restart_overhead_s=0", "--set", "jobs.scale_overhead_s=0",
            "--set", "run.check_invariants=true"]


def times(lines):
    return [float(line.split(",")[0].split()[0]) for line in lines]


def run(a, work, procs):
    bed = Bed(a, work, procs, "live-restart-outputs-test-token")
    serve = bed.serve(serve_args(bed))
    if not serve:
        return None
    bed.agent("t0", 4)
    bed.agent("t1", 4)
    if not bed.run_starts():
        return [bed.port]
    run_started = time.time()
    if not check(bed.submit("--name", "long", "--gpus", "4", "--duration", "150") == 0, "long gets id 0"):
        return [bed.port]

    def busy_server():
        for s in (bed.status() or {}).get("servers", []):
            if s["free"] == 0:
                return s["name"]
        return None

    if not check(wait_for(busy_server, 10, "long to run"), "long runs"):
        return [bed.port]
    first = busy_server()
    other = "t1" if first == "t0" else "t0"
    bed.agents[first].kill()
    bed.agents[first].wait()

    def moved():
        s = bed.status() or {}
        jobs = s.get("jobs", [])
        return (jobs and jobs[0]["state"] == "running"
                and any(v["name"] == other and v["free"] == 0 for v in s.get("servers", [])))

    if not check(wait_for(moved, 25, f"long to run again on {other}"), f"long recovers on {other}"):
        return [bed.port]
    bed.agent(first, 4)
    if not check(wait_for(lambda: "back; reconciled" in read(os.path.join(bed.dir, "serve.log")), 20,
                          f"{first} to be back"), f"{first}'s agent is back"):
        return [bed.port]
    serve.kill()
    serve.wait()
    killed_partial = read(os.path.join(bed.out, "events.log.partial"))
    print(f"events.log.partial at the kill: {len(killed_partial.splitlines())} lines", flush=True)

    serve2 = bed.serve(serve_args(bed), log="serve-2.log", port=bed.port)
    if not serve2 or not bed.run_starts("serve-2.log"):
        return [bed.port]
    if not check(wait_for(bed.idle, 60, "long to end"), "long ends in the carried-on run"):
        return [bed.port]
    shown = bed.client("show", "0", "--json")
    history = [h["event"] for h in json.loads(shown.stdout).get("history", [])] if shown.returncode == 0 else []
    check(history[:2] == ["submit", "start"] and "restore" in history and history[-1] == "finish",
          f"aryl show after the restart has the job's whole history, from the first serve's submit ({history})")
    before_stop = time.time()
    if not bed.stop(serve2, "the second serve"):
        return [bed.port]

    events = bed.events().splitlines()
    text = "\n".join(events)
    check(len(re.findall(r"^\S+ scheduler submit job-0 ", text, re.M)) == 1,
          "events.log keeps the first serve's submit of job 0, once")
    check(len(re.findall(rf"^\S+ scheduler lost server={first} ", text, re.M)) == 1,
          f"events.log keeps the first serve's loss of {first}, once")
    check(len(re.findall(r"^\S+ scheduler restore job-0 ", text, re.M)) == 1, "events.log has the restore of job 0")
    check(len(re.findall(r"^\S+ scheduler finish job-0 ", text, re.M)) == 1, "events.log finishes job 0 once")
    t = times(events)
    check(t == sorted(t), "events.log's times never go back")
    twice = [line for line, n in collections.Counter(events).items() if n > 1]
    check(not twice, f"no line of events.log appears twice ({twice[:3]})")

    s = bed.summary()
    check(s.get("events") == len(events), f"summary.json counts every line of events.log ({s.get('events')} "
                                          f"for {len(events)})")
    check(s.get("scheduler_restarts") == 1, f"summary.json counts 1 scheduler restart ({s.get('scheduler_restarts')})")
    check(s.get("recoveries") == 1, f"summary.json counts the recovery from before the restart ({s.get('recoveries')})")
    whole = before_stop - run_started
    check(s.get("sim_wall_s", 0) >= whole - 0.5,
          f"summary.json's sim_wall_s covers the whole run, both serves ({s.get('sim_wall_s')} s for {whole:.1f} s)")
    preempted = sum(int(r["preemptions"]) for r in bed.rows("jobs.csv"))
    check(s.get("preemptions") == preempted,
          f"summary.json's preemptions are jobs.csv's, restored ones included ({s.get('preemptions')} for {preempted})")

    timeline = read(os.path.join(bed.out, "timeline.csv")).splitlines()
    check(sum(line.startswith("t_s,") for line in timeline) == 1, "timeline.csv has one header")
    rows = [line for line in timeline if not line.startswith("t_s,")]
    restore_at = min((float(e.split()[0]) for e in events if " scheduler restore " in e), default=0)
    tt = times(rows)
    check(bool(tt) and tt[0] < restore_at, f"timeline.csv starts before the restart ({tt[:1]} < {restore_at})")
    check(tt == sorted(tt), "timeline.csv's times never go back")
    return [bed.port]


if __name__ == "__main__":
    sys.exit(main("live-restart-outputs", DEADLINE_S, run,
                  ("serve.log", "serve-2.log", "agent-t0/agent.log", "agent-t1/agent.log")))
