#!/usr/bin/python3
"""Agents join without a static cluster list, one is killed mid-run, and status, show, logs and
the outputs tell the truth throughout.

    test_live_inventory.py --aryl BUILD/aryl --source SOURCE_DIR [--dir TMP]

On loopback: `aryl serve --join 3 --no-workload --speedup 6` (detection grace 30 / 6 = 5 s);
agents gpu-a and gpu-b (training, 4 x V100 each) and inf-a (inference, 2 x T4), named as their
operator likes. A fourth agent, an inference machine, comes after the run started and is
refused (a running cluster takes training machines only; test_live_drain.py has one join). Job big (8 GPUs) runs
on both training machines; gpu-b's agent is SIGKILLed; once gpu-b is lost big waits; gpu-b's
agent comes back, big runs again and is cancelled; serve is stopped with SIGTERM.

Checks: status lists exactly the three joined machines with their sizes and pools; the late
inference agent is refused, saying why, and gives up (exit 3); big runs on gpu-a and gpu-b;
`aryl logs` returns its rank 0's progress lines; with gpu-b killed status shows it not up, then
lost with no free GPU, big queued with a reason; `aryl show` has big's start and its rollback
after the loss, in time order; once gpu-b is back big runs again and cancel says it stopped 8
workers; jobs.csv has big cancelled; the agents are told serve shut down for good and stop.
No process is left, no port bound.
"""

import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from live_harness import check, job, main, read, server, wait_for  # noqa: E402
from serve_bed import Bed  # noqa: E402

DEADLINE_S = 120


def run(a, work, procs):
    bed = Bed(a, work, procs, "live-inventory-test-token")
    serve = bed.serve(["--join", "3", "--no-workload", "--speedup", "6", "--set", "jobs.restart_overhead_s=0",
                       "--set", "jobs.scale_overhead_s=0", "--set", "run.check_invariants=true"])
    if not serve:
        return None
    bed.agent("gpu-a", 4)
    bed.agent("gpu-b", 4)
    bed.agent("inf-a", 2, pool="inference", gpu_type="T4")
    if not bed.run_starts():
        return [bed.port]
    s = bed.status()
    machines = sorted((v["name"], v["gpu_type"], v["gpus"], v["pool"], v.get("state")) for v in (s or {}).get("servers", []))
    check(machines == [("gpu-a", "V100", 4, "training", "up"), ("gpu-b", "V100", 4, "training", "up"),
                       ("inf-a", "T4", 2, "inference", "up")], f"the cluster is the three agents that joined ({machines})")

    late = bed.agent("gpu-c", 8, pool="inference", gpu_type="T4")
    # The bed's agents keep reconnecting; this one is started again to give up.
    late.terminate()
    late.wait()
    folder = os.path.join(bed.dir, "agent-gpu-c")
    r = subprocess.run([bed.aryl, "agent", "--port", str(bed.port), "--token-file", bed.token, "--name", "gpu-c",
                        "--gpus", "8", "--gpu-type", "T4", "--pool", "inference", "--work-dir", folder,
                        "--give-up-after", "1"],
                       capture_output=True, text=True, timeout=20)
    check(r.returncode == 3 and "server 'gpu-c': an inference machine joins only before the run starts" in r.stderr,
          f"an inference agent joining after the start is refused saying why, and gives up (rc {r.returncode})")

    big = bed.submit("--name", "big", "--gpus", "8", "--duration", "3000")
    if not check(big == 0, f"big gets id 0 ({big})"):
        return [bed.port]
    if not check(wait_for(lambda: job(bed.status(), 0).get("state") == "running", 10, "big to run"), "big runs"):
        return [bed.port]
    placed = job(bed.status(), 0).get("servers", "")
    check(sorted(placed.split()) == ["gpu-a:4", "gpu-b:4"], f"big runs on gpu-a and gpu-b ({placed})")
    wait_for(lambda: "ARYL_PROGRESS" in bed.client("logs", "0").stdout, 5, "big's first progress line")
    logs = bed.client("logs", "0")
    check(logs.returncode == 0 and "ARYL_PROGRESS work_done=" in logs.stdout,
          f"aryl logs returns rank 0's progress lines (rc {logs.returncode}: {logs.stderr.strip()})")

    bed.agents["gpu-b"].kill()
    bed.agents["gpu-b"].wait()
    s = bed.status()
    check(server(s, "gpu-b").get("state") in ("unreachable", "lost") and server(s, "gpu-a").get("state") == "up",
          f"with its agent killed gpu-b is not shown up, gpu-a still is ({s and s['servers']})")
    if not check(wait_for(lambda: server(bed.status(), "gpu-b").get("state") == "lost", 20, "gpu-b to be lost"),
                 "gpu-b is shown lost after the detection grace"):
        return [bed.port]
    wait_for(lambda: job(bed.status(), 0).get("reason"), 5, "big's reason")
    s = bed.status()
    check(server(s, "gpu-b").get("free") == 0, f"lost gpu-b shows no free GPU ({server(s, 'gpu-b')})")
    b = job(s, 0)
    check(b.get("state") == "queued" and "no fit" in b.get("reason", ""),
          f"big waits, saying it does not fit ({b})")
    shown = bed.client("show", "0", "--json")
    history = []
    if check(shown.returncode == 0, f"aryl show 0 answers ({shown.stderr.strip()})"):
        history = json.loads(shown.stdout).get("history", [])
    events = [h["event"] for h in history]
    times = [h["t_s"] for h in history]
    check(events[:2] == ["submit", "start"] and len(events) >= 3 and times == sorted(times),
          f"show has big's submit, start and what the loss did to it, in time order ({events})")

    bed.agent("gpu-b", 4)
    if not check(wait_for(lambda: job(bed.status(), 0).get("state") == "running", 20, "big to run again"),
                 "big runs again once gpu-b's agent is back"):
        return [bed.port]
    cancelled = bed.client("cancel", "0")
    check(cancelled.returncode == 0 and cancelled.stdout.startswith("cancelled job 0 (big): it was running on 8 workers"),
          f"cancel says what it stopped ({cancelled.stdout.strip()} {cancelled.stderr.strip()})")
    if not bed.stop(serve):
        return [bed.port]
    rows = {r["name"]: r["outcome"] for r in bed.rows("jobs.csv")}
    check(rows == {"big": "cancelled"}, f"jobs.csv has big cancelled ({rows})")
    for name in ("gpu-a", "gpu-b", "inf-a"):
        p = bed.agents[name]
        try:
            rc = p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            rc = None
        log = read(os.path.join(bed.dir, f"agent-{name}", "agent.log"))
        check(rc == 0 and "shut down for good" in log, f"agent {name} is told serve shut down for good and exits 0 ({rc})")
    return [bed.port]


if __name__ == "__main__":
    sys.exit(main("live-inventory", DEADLINE_S, run,
                  ("serve.log", "agent-gpu-a/agent.log", "agent-gpu-b/agent.log", "agent-inf-a/agent.log")))
