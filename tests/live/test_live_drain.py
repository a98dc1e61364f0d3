#!/usr/bin/python3
"""Agents join without a static cluster list (one after the run started), one server is drained
mid-run and another's agent killed, and status, show, logs and the outputs tell the truth
throughout; each job is done exactly once.

    test_live_drain.py --aryl BUILD/aryl --source SOURCE_DIR [--dir TMP]

On loopback: `aryl serve --join 2 --no-workload --speedup 6` (detection grace 30 / 6 = 5 s);
agents gpu-a and gpu-b (training, 4 x V100) make the run's inventory; gpu-c (4 x V100)
registers after the run started and joins it. Jobs alpha, beta (4 GPUs, 180 s) and gamma
(4 GPUs, 60 s) run one per server. Then: gamma's server is drained (it runs on, the server is
draining, then drained when gamma ends); alpha's server is drained --now (alpha checkpoints and
waits, "drained"); beta's agent is SIGKILLed (lost, beta waits); alpha's server is resumed and
beta's agent comes back: both run again and finish. serve is stopped with SIGTERM.

Checks: the late agent is in status, up, and a job runs on it; the drain answers say what they
did; status (JSON and table) shows draining, drained with the reason, lost, then up after the
resume; a waiting job's reason says drained; `aryl show` has alpha's preemption by the drain;
`aryl logs` returns alpha's progress; events.log has the join, the drains, the drained server,
the resume; jobs.csv has each job once, done, alpha with its preemption; a /proc sampler never
sees a job's two launches alive at once. No process is left, no port bound.
"""

import json
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from live_harness import Sampler, check, job, main, server, wait_for  # noqa: E402
from serve_bed import Bed  # noqa: E402

DEADLINE_S = 240


def where(status, job_id):
    """The one server a 4-GPU job runs on, or ''."""
    placed = job(status, job_id).get("servers", "")
    return placed.split(":")[0] if placed.count(":") == 1 else ""


def run(a, work, procs, sampler):
    bed = Bed(a, work, procs, "live-drain-test-token")
    serve = bed.serve(["--join", "2", "--no-workload", "--speedup", "6", "--set", "jobs.restart_overhead_s=0",
                       "--set", "jobs.scale_overhead_s=0", "--set", "run.check_invariants=true"])
    if not serve:
        return None
    bed.agent("gpu-a", 4)
    bed.agent("gpu-b", 4)
    if not bed.run_starts():
        return [bed.port]
    sampler.start()
    # Beyond --join 2: a machine that comes once the run is going joins it.
    bed.agent("gpu-c", 4)
    if not check(wait_for(lambda: server(bed.status(), "gpu-c").get("state") == "up", 20, "gpu-c to join"),
                 "an agent registering after the run started joins the cluster, up"):
        return [bed.port]
    c = server(bed.status(), "gpu-c")
    check((c.get("gpus"), c.get("gpu_type"), c.get("pool")) == (4, "V100", "training"),
          f"the joined machine is listed as it described itself ({c})")

    ids = {name: bed.submit("--name", name, "--gpus", "4", "--duration", str(d))
           for name, d in (("alpha", 180), ("beta", 180), ("gamma", 60))}
    if not check(sorted(ids.values()) == [0, 1, 2], f"three jobs get ids 0..2 ({ids})"):
        return [bed.port]
    alpha, beta, gamma = ids["alpha"], ids["beta"], ids["gamma"]
    if not check(wait_for(lambda: sorted(filter(None, (where(bed.status(), j) for j in ids.values())))
                          == ["gpu-a", "gpu-b", "gpu-c"], 15, "the three jobs to run"),
                 "the three jobs run, one on each server, the joined one included"):
        return [bed.port]
    s = bed.status()
    x, y, z = where(s, alpha), where(s, beta), where(s, gamma)

    # A drain: gamma runs on, its server takes nothing new, and is drained once gamma ended.
    r = bed.client("drain", z, "--reason", "kernel update")
    check(r.returncode == 0 and r.stdout.strip() == f"{z}: draining: no new work; 1 job runs on there until it ends",
          f"drain says what it did ({r.stdout.strip()} {r.stderr.strip()})")
    s = bed.status()
    check(server(s, z).get("hold") == "draining" and server(s, z).get("reason") == "kernel update"
          and job(s, gamma).get("state") == "running",
          f"the draining server shows so with its reason, its job still runs ({server(s, z)})")

    # drain --now: alpha checkpoints and waits; nothing else may take its server.
    wait_for(lambda: "ARYL_PROGRESS" in bed.client("logs", str(alpha)).stdout, 10, "alpha's first progress line")
    r = bed.client("drain", x, "--now", "--reason", "disk swap")
    check(r.returncode == 0 and r.stdout.strip() == f"{x}: drained now: 1 job stopped (checkpointing) and queued again",
          f"drain --now says what it did ({r.stdout.strip()} {r.stderr.strip()})")
    if not check(wait_for(lambda: job(bed.status(), alpha).get("state") == "queued", 10, "alpha to wait"),
                 "alpha waits after the drain --now"):
        return [bed.port]
    s = bed.status()
    check(server(s, x).get("hold") == "drained" and server(s, x).get("reason") == "disk swap"
          and server(s, x).get("free") == 0, f"the server drained now shows drained, nothing free ({server(s, x)})")
    check(job(s, alpha).get("reason", "").startswith("drained:"),
          f"alpha says it waits because of a drain ({job(s, alpha).get('reason')})")
    table = bed.client("status").stdout
    check(any(line.split()[:1] == [x] and "drained" in line and "disk swap" in line for line in table.splitlines()),
          f"the status table lists {x} drained with its reason")

    # A loss on top: beta's agent is killed; beta waits until its machine is back.
    bed.agents[y].kill()
    bed.agents[y].wait()
    if not check(wait_for(lambda: server(bed.status(), y).get("state") == "lost", 20, f"{y} to be lost"),
                 f"{y} is shown lost after the detection grace"):
        return [bed.port]
    wait_for(lambda: job(bed.status(), beta).get("state") == "queued", 5, "beta to wait")
    s = bed.status()
    check(job(s, beta).get("state") == "queued" and job(s, alpha).get("state") == "queued",
          f"with one server lost and one drained, alpha and beta wait ({job(s, alpha)} {job(s, beta)})")

    r = bed.client("resume", x)
    check(r.returncode == 0 and r.stdout.strip() == f"{x}: resumed: new work may be placed there again",
          f"resume says what it did ({r.stdout.strip()} {r.stderr.strip()})")
    bed.agent(y, 4)
    if not check(wait_for(lambda: {job(bed.status(), alpha).get("state"), job(bed.status(), beta).get("state")}
                          == {"running"}, 30, "alpha and beta to run again"),
                 "alpha and beta run again once the server is resumed and the lost one back"):
        return [bed.port]
    s = bed.status()
    check(server(s, x).get("state") == "up" and "hold" not in server(s, x) and "reason" not in server(s, x)
          and server(s, y).get("state") == "up",
          f"the resumed and the returned servers are up ({server(s, x)} {server(s, y)})")
    check(where(s, alpha) != z and where(s, beta) != z, f"nothing was placed on the draining {z}")
    if not check(wait_for(lambda: server(bed.status(), z).get("hold") == "drained", 30, f"{z} to be drained"),
                 f"{z} is drained once gamma ended"):
        return [bed.port]

    shown = bed.client("show", str(alpha), "--json")
    history = json.loads(shown.stdout).get("history", []) if shown.returncode == 0 else []
    stops = [h for h in history if h["event"] == "preempt"]
    check(len(stops) == 1 and stops[0]["why"] == f"drain: its server {x} is drained now: disk swap",
          f"aryl show has alpha's preemption by the drain ({stops})")
    logs = bed.client("logs", str(alpha))
    check(logs.returncode == 0 and "ARYL_PROGRESS work_done=" in logs.stdout,
          f"aryl logs returns alpha's progress ({logs.stderr.strip()})")

    if not check(wait_for(bed.idle, 90, "every job to end"), "every job ends"):
        return [bed.port]
    sampler.stop.set()
    sampler.join()
    check(sampler.samples > 100 and not sampler.overlaps,
          f"no job ever had two launches alive at once ({sampler.samples} samples; overlaps {sampler.overlaps[:3]})")
    if not bed.stop(serve):
        return [bed.port]
    rows = bed.rows("jobs.csv")
    names = sorted(r["name"] for r in rows)
    check(names == ["alpha", "beta", "gamma"] and all(r["outcome"] == "done" for r in rows),
          f"jobs.csv has each job once, done ({[(r['name'], r['outcome']) for r in rows]})")
    by_name = {r["name"]: r for r in rows}
    check(by_name.get("alpha", {}).get("preemptions") == "1" and by_name.get("gamma", {}).get("preemptions") == "0",
          "alpha's drain counts as its one preemption; gamma, drained around, has none")
    events = bed.events()
    for what in ("join server=gpu-c", f"drain server={z} jobs=1", f"drain server={x} jobs=1 now=1",
                 f"drained server={z}", f"drained server={x}", f"resume server={x}", f"lost server={y}"):
        check(what in " ".join(events.split()), f"events.log has '{what}'")
    return [bed.port]


def run_sampled(a, work, procs):
    sampler = Sampler(work)
    try:
        return run(a, work, procs, sampler)
    finally:
        sampler.stop.set()


if __name__ == "__main__":
    sys.exit(main("live-drain", DEADLINE_S, run_sampled,
                  ("serve.log", "agent-gpu-a/agent.log", "agent-gpu-b/agent.log", "agent-gpu-c/agent.log")))
