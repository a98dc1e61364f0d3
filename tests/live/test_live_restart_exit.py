#!/usr/bin/python3
"""A job whose workers end while the scheduler is away runs once: `aryl serve --state` is killed
with -9 while a real command job runs, the job exits 0 while serve is down, and the serve started
again on the same file and port adopts the job and applies its exit instead of launching it again.

    test_live_restart_exit.py --aryl BUILD/aryl --source SOURCE_DIR [--dir TMP]

On loopback: one training agent t0 of 2 GPUs; one 2-GPU job a whose command (/bin/sh) appends
"job rank pid" to a file at each start and sleeps 4 s. 1.5 s into the job serve gets SIGKILL; the
agent keeps its workers, which exit 0 while serve is down (the agent keeps their exit reports);
then a second serve starts on the same port and --state.

Checks: the command started twice in all (ranks 0 and 1, once each); the second serve exits 0,
adopts job 0 and drops no exit; jobs.csv lists job 0 once, done; events.log finishes it once.
No process is left, no port bound; every process is stopped by its pid, also on a failure.
"""

import os
import re
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from live_harness import check, main, outcomes, read, wait_for  # noqa: E402

DEADLINE_S = 100


def serve_argv(aryl, bed, work, out, token, port):
    return [aryl, "serve", "--token-file", token, "--port", str(port), "--port-file", os.path.join(bed, "port"),
            "--work-dir", os.path.join(bed, "work"), "--state", os.path.join(bed, "state.db"), "--servers", "1",
            "--set", "cluster.training.gpus_per_server=2", "--set", "cluster.inference.servers=0",
            "--trace", os.path.join(work, "trace.csv"), "--speedup", "1", "--out", out, "--stop-grace", "3",
            "--agent-wait", "30", "--set", f"live.worker_command=/bin/sh {os.path.join(work, 'job.sh')}"]


def run(a, work, procs):
    bed, out = os.path.join(work, "testbed"), os.path.join(work, "out")
    os.makedirs(bed)
    starts = os.path.join(work, "starts")
    with open(os.path.join(work, "trace.csv"), "w") as f:
        f.write("job_id,submit_s,gpus,duration_s,elastic,min_workers,max_workers\na,0,2,4,0,2,2\n")
    with open(os.path.join(work, "job.sh"), "w") as f:
        f.write(f'echo "$ARYL_JOB_ID $ARYL_RANK $$" >> {starts}\nsleep 4\n')
    token = os.path.join(bed, "token")
    with open(os.open(token, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write("live-restart-exit-test-token\n")
    aryl = os.path.abspath(a.aryl)
    log1, log2 = os.path.join(bed, "serve.log"), os.path.join(bed, "serve-2.log")
    serve = procs.start("serve", serve_argv(aryl, bed, work, out, token, 0), log1,
                        stdout=open(os.path.join(bed, "serve.out"), "w"))
    if not check(wait_for(lambda: read(os.path.join(bed, "port")).strip(), 30, "serve's port"), "serve listens"):
        return None
    port = int(read(os.path.join(bed, "port")))
    folder = os.path.join(bed, "agent-t0")
    os.makedirs(folder)
    procs.start("agent t0", [aryl, "agent", "--port", str(port), "--token-file", token, "--name", "t0",
                             "--gpu-type", "V100", "--gpus", "2", "--pool", "training", "--work-dir", folder],
                os.path.join(folder, "agent.log"))
    if not check(wait_for(lambda: len(read(starts).splitlines()) == 2, 40, "job a's two workers to start"),
                 "job a's two workers start"):
        return [port]
    time.sleep(1.5)
    serve.kill()
    serve.wait()
    # The workers end while nobody schedules; the agent keeps their exits.
    agent_log = os.path.join(folder, "agent.log")
    if not check(wait_for(lambda: len(re.findall(r"exit job 0 rank \d: code 0", read(agent_log))) == 2, 20,
                          "job a's workers to exit while serve is away"), "job a's workers exit 0 while serve is away"):
        return [port]
    serve2 = procs.start("serve 2", serve_argv(aryl, bed, work, out, token, port), log2,
                         stdout=open(os.path.join(bed, "serve-2.out"), "w"))
    try:
        rc = serve2.wait(timeout=60)
    except subprocess.TimeoutExpired:
        check(False, "the second serve ends within 60 s")
        return [port]
    check(rc == 0, f"the second serve exits 0 (got {rc})")
    lines = read(starts).splitlines()
    check(len(lines) == 2 and sorted(line.split()[1] for line in lines) == ["0", "1"],
          f"job a's command started once per rank in all ({lines})")
    log = read(log2)
    check("dropped" not in log, "the second serve drops no exit report")
    check(re.search(r"keep running, adopted: jobs 0;", log) is not None, "the second serve adopts job 0")
    ends, listed = outcomes(out)
    check(ends == {"0": "done"} and listed == 1, f"jobs.csv lists job 0 once, done ({ends}, {listed} rows)")
    finished = re.findall(r"scheduler finish job-0", read(os.path.join(out, "events.log")))
    check(len(finished) == 1, f"events.log finishes job 0 once ({len(finished)})")
    return [port]


if __name__ == "__main__":
    sys.exit(main("live-restart-exit", DEADLINE_S, run, ("serve.log", "serve-2.log", "agent-t0/agent.log")))
