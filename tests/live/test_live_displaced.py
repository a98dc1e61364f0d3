#!/usr/bin/python3
"""A partitioned agent whose name another agent has taken stops its workers once it is heard
again, so a job does not run on two machines for longer than the partition.

    test_live_displaced.py --aryl BUILD/aryl --source SOURCE_DIR [--dir TMP]

On loopback: `aryl serve` (speedup 1, detection grace 2.5 x 2 = 5 s), two training agents t0
and t1 of 4 GPUs, each through its own scripts/fault_proxy.py. One inelastic 4-GPU job of 40 s
(emulated workers). Once the job runs on server X (t0 or t1):
  - X's proxy partitions the link for 14 s; serve reports X lost after the 5 s grace and starts
    the job again on the other server;
  - a second agent named X (a replacement machine: its own work folder) registers directly and
    heartbeats;
  - the partition heals: the first X agent dials again and is refused (the name is held, error
    code name_held), and stops the workers it still ran.
Checks: the refused agent says "displaced" and its four worker processes are gone within its
stop grace; while it was partitioned they ran (the partition alone does not stop them: no
--fence-after); the job ends once, done; serve exits 0; no process is left, no port bound.
"""

import os
import re
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from live_harness import check, main, outcomes, read, wait_for  # noqa: E402

PYTHON = "/usr/bin/python3"
TRACE = "job_id,submit_s,gpus,duration_s,elastic,min_workers,max_workers\na,0,4,40,0,4,4\n"
PARTITION_S = 14
DEADLINE_S = 150


def worker_pids(agent_log, job):
    return [int(p) for p in re.findall(rf"launch job {job} rank \d+ of \d+: pid (\d+)", agent_log)]


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def run(a, work, procs):
    bed, out = os.path.join(work, "testbed"), os.path.join(work, "out")
    os.makedirs(bed)
    with open(os.path.join(work, "trace.csv"), "w") as f:
        f.write(TRACE)
    token = os.path.join(bed, "token")
    with open(os.open(token, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write("live-displaced-test-token\n")
    aryl = os.path.abspath(a.aryl)
    serve_log = os.path.join(bed, "serve.log")
    serve = procs.start("serve", [
        aryl, "serve", "--token-file", token, "--port-file", os.path.join(bed, "port"),
        "--work-dir", os.path.join(bed, "work"), "--servers", "2",
        "--set", "cluster.training.gpus_per_server=4", "--set", "cluster.inference.servers=0",
        "--trace", os.path.join(work, "trace.csv"), "--speedup", "1", "--out", out, "--stop-grace", "2",
        "--agent-wait", "30", "--set", "faults.heartbeat_s=2.5", "--set", "faults.missed_heartbeats=2",
        "--set", "jobs.restart_overhead_s=0", "--set", "jobs.scale_overhead_s=0"], serve_log)
    if not check(wait_for(lambda: read(os.path.join(bed, "port")).strip(), 30, "serve's port"), "serve listens"):
        return None
    port = int(read(os.path.join(bed, "port")))
    ports = [port]

    proxies = {}
    for name in ("t0", "t1"):
        folder = os.path.join(bed, f"agent-{name}")
        os.makedirs(folder)
        proxies[name] = procs.start(f"proxy {name}", [
            PYTHON, os.path.join(a.source, "scripts", "fault_proxy.py"), "--target", f"127.0.0.1:{port}",
            "--port-file", os.path.join(folder, "proxy.port")], os.path.join(folder, "proxy.log"),
            stdin=subprocess.PIPE, text=True)
        if not check(wait_for(lambda: read(os.path.join(folder, "proxy.port")).strip(), 20, "a proxy's port"),
                     f"{name}'s fault proxy listens"):
            return ports
        proxy_port = int(read(os.path.join(folder, "proxy.port")))
        ports.append(proxy_port)
        procs.start(f"agent {name}", [
            aryl, "agent", "--port", str(proxy_port), "--token-file", token, "--name", name, "--gpu-type", "V100",
            "--gpus", "4", "--pool", "training", "--work-dir", folder],
            os.path.join(folder, "agent.log"))
    logs = {n: os.path.join(bed, f"agent-{n}", "agent.log") for n in ("t0", "t1")}
    holder = []

    def launched():
        for name, path in logs.items():
            if len(worker_pids(read(path), 0)) == 4:
                holder.append(name)
                return True
        return False

    if not check(wait_for(launched, 40, "job 0's launch"), "job 0 starts on one server"):
        return ports
    x = holder[0]
    other = "t1" if x == "t0" else "t0"
    old_pids = worker_pids(read(logs[x]), 0)
    proxies[x].stdin.write(f"partition {PARTITION_S}\n")
    proxies[x].stdin.flush()
    partitioned_at = time.monotonic()
    check(wait_for(lambda: f"server {x}: its agent was not heard for 5 s: reported lost" in read(serve_log), 20,
                   f"{x} lost"), f"serve reports {x} lost after the grace")
    check(wait_for(lambda: len(worker_pids(read(logs[other]), 0)) == 4, 20, "job 0 on the other server"),
          f"job 0 starts again on {other}")
    check(all(alive(p) for p in old_pids), f"the partition alone leaves {x}'s first workers running ({old_pids})")

    # A replacement machine takes the name while the first agent is away.
    folder = os.path.join(bed, f"agent-{x}-2")
    os.makedirs(folder)
    procs.start(f"agent {x} (second)", [
        aryl, "agent", "--port", str(port), "--token-file", token, "--name", x, "--gpu-type", "V100", "--gpus", "4",
        "--pool", "training", "--work-dir", folder], os.path.join(folder, "agent.log"))
    check(wait_for(lambda: "registered with 0 running worker(s)" in read(os.path.join(folder, "agent.log")), 20,
                   "the second agent's registration"), f"a second agent registers as {x}")
    check(time.monotonic() - partitioned_at < PARTITION_S,
          f"the second agent registered while the first was partitioned "
          f"({time.monotonic() - partitioned_at:.1f} s of {PARTITION_S})")

    displaced = f"displaced: another agent holds server {x} at the scheduler; SIGTERM to 4 worker(s)"
    check(wait_for(lambda: displaced in read(logs[x]), PARTITION_S + 20, "the first agent's displacement"),
          f"the first {x} agent, refused once heard again, stops its workers")
    check(wait_for(lambda: not any(alive(p) for p in old_pids), 10, "the displaced workers' end"),
          f"the first {x} agent's workers are gone ({[p for p in old_pids if alive(p)]} alive)")
    check(re.search(rf"server '{x}' is held by a connected agent", read(serve_log)) is not None,
          f"serve refuses the first {x} agent, naming the held name")

    try:
        rc = serve.wait(timeout=90)
    except subprocess.TimeoutExpired:
        check(False, "serve ends once the job is done")
        return ports
    check(rc == 0, f"serve exits 0 (got {rc})")
    ends, listed = outcomes(out)
    check(ends == {"0": "done"} and listed == 1, f"jobs.csv lists job 0 once, done ({ends}, {listed} rows)")
    return ports


if __name__ == "__main__":
    sys.exit(main("live-displaced", DEADLINE_S, run,
                  ("serve.log", "agent-t0/agent.log", "agent-t1/agent.log", "agent-t0-2/agent.log",
                   "agent-t1-2/agent.log")))
