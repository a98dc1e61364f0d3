#!/usr/bin/python3
"""Scheduler restart: `aryl serve --state FILE` killed with -9 mid-run and started again on the
same file carries the run on: running jobs whose workers all survived are adopted, the others
restart from their checkpoints; every job is done once, none runs twice at once.

    test_live_restart.py --aryl BUILD/aryl --source SOURCE_DIR [--dir TMP]

On loopback: `aryl serve --state` (speedup 1), three training agents t0, t1, t2 of 4 GPUs each
and five inelastic 4-GPU jobs: a (3 s), b and c (28 s) at 0 s, d (14 s) at 1 s, which waits for a,
and e (3 s) at 20 s. Once a is done and b, c, d run with a checkpoint each, serve gets SIGKILL;
the agents keep their workers and reconnect with backoff. While serve is away, one worker of
c (job 2) is SIGKILLed. A second serve starts on the same port with the same --state.

Checks: the second serve exits 0; jobs.csv lists jobs 0..4 once each, outcome done (job 0 from
the journal); summary.json counts 1 scheduler restart, 2 jobs adopted (1 and 3: every worker
still where the journal placed it) and 1 restarted (2); events.log restores job 0 as done and
jobs 1..3 as running, adopts 1 and 3, finishes 0..4 once each (0 before the kill); the adopted jobs' workers are
the ones from before the kill, launched once and exiting 0; job 2's surviving workers are
stopped, the run starts only after they exited, and its next launch resumes past 0; a /proc
sampler (every 50 ms, the whole test) never sees two launches of one job alive at once. A third
serve on the same file while the second runs is refused (the file is held); afterwards a state
file of another cluster and a corrupt one are refused, naming the file. No process is
left, no port bound; every process is stopped by its pid, also when a check fails; the test
ends within its own deadline.
"""

import glob
import json
import os
import re
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from live_harness import START, Sampler, check, launches, main, outcomes, read, wait_for  # noqa: E402

TRACE = ("job_id,submit_s,gpus,duration_s,elastic,min_workers,max_workers\n"
         "a,0,4,3,0,4,4\n"
         "b,0,4,28,0,4,4\n"
         "c,0,4,28,0,4,4\n"
         "d,1,4,14,0,4,4\n"
         "e,20,4,3,0,4,4\n")
DEADLINE_S = 170  # the whole test; CTest's TIMEOUT is longer


def serve_argv(aryl, bed, work, out, token, port, extra=()):
    return [aryl, "serve", "--token-file", token, "--port", str(port), "--port-file", os.path.join(bed, "port"),
            "--work-dir", os.path.join(bed, "work"), "--state", os.path.join(bed, "state.db"), "--servers", "3",
            "--set", "cluster.training.gpus_per_server=4", "--set", "cluster.inference.servers=0",
            "--trace", os.path.join(work, "trace.csv"), "--speedup", "1", "--out", out, "--stop-grace", "3",
            "--agent-wait", "30", "--set", "jobs.restart_overhead_s=0", "--set", "jobs.scale_overhead_s=0",
            "--set", "run.check_invariants=true", *extra]


def run(a, work, procs, sampler):
    bed, out = os.path.join(work, "testbed"), os.path.join(work, "out")
    os.makedirs(bed)
    with open(os.path.join(work, "trace.csv"), "w") as f:
        f.write(TRACE)
    token = os.path.join(bed, "token")
    with open(os.open(token, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write("live-restart-test-token\n")
    aryl = os.path.abspath(a.aryl)
    log1, log2 = os.path.join(bed, "serve.log"), os.path.join(bed, "serve-2.log")

    serve = procs.start("serve", serve_argv(aryl, bed, work, out, token, 0), log1,
                        stdout=open(os.path.join(bed, "serve.out"), "w"))
    if not check(wait_for(lambda: read(os.path.join(bed, "port")).strip(), 30, "serve's port"), "serve listens"):
        return
    port = int(read(os.path.join(bed, "port")))
    for name in ("t0", "t1", "t2"):
        folder = os.path.join(bed, f"agent-{name}")
        os.makedirs(folder)
        procs.start(f"agent {name}", [
            aryl, "agent", "--port", str(port), "--token-file", token, "--name", name, "--gpu-type", "V100",
            "--gpus", "4", "--pool", "training", "--work-dir", folder], os.path.join(folder, "agent.log"))
    sampler.start()
    if not check(wait_for(lambda: "the run starts" in read(log1), 40, "the run to start"), "the run starts"):
        return
    # Job 0 done, jobs 1, 2, 3 running with a checkpoint each (the worker saves every second).
    if not check(wait_for(lambda: re.search(r"job 0 rank 0 exited \(code 0", read(log1)) and
                          "launch job 3 " in read(log1) and set(sampler.running_jobs()) == {1, 2, 3}, 30,
                          "job 0 to end and jobs 1, 2, 3 to run"), "job 0 ends, jobs 1, 2 and 3 run"):
        return
    time.sleep(2.5)
    at_kill = sampler.running_jobs()
    serve.kill()
    serve.wait()
    check(set(at_kill) == {1, 2, 3}, f"jobs 1, 2 and 3 run when serve is killed (running {sorted(at_kill)})")
    killed_at = time.monotonic()
    time.sleep(0.5)
    check(set(sampler.running_jobs()) == {1, 2, 3}, "the agents keep their workers while serve is away")
    # One worker of job 2 dies while nobody schedules: job 2 cannot be adopted.
    victim = [pid for pid, rank in at_kill.get(2, []) if rank == 3]
    if not check(len(victim) == 1, f"job 2's rank 3 runs at the kill ({at_kill.get(2)})"):
        return
    os.kill(victim[0], signal.SIGKILL)
    time.sleep(0.5)

    serve2 = procs.start("serve 2", serve_argv(aryl, bed, work, out, token, port), log2,
                         stdout=open(os.path.join(bed, "serve-2.out"), "w"))
    state = os.path.join(bed, "state.db")
    if check(wait_for(lambda: "listening on" in read(log2), 30, "the second serve to listen"),
             "the second serve listens on the agents' port"):
        third = subprocess.run(serve_argv(aryl, bed, work, out + "-third", token, 0), capture_output=True, text=True,
                               timeout=30)
        check(third.returncode == 2 and f"{state}: in use by another process" in third.stderr,
              f"a third serve on the same state file is refused while the second runs "
              f"(rc {third.returncode}: {third.stderr.strip()})")
    try:
        rc = serve2.wait(timeout=max(1, DEADLINE_S - 40 - (time.monotonic() - START)))
    except subprocess.TimeoutExpired:
        check(False, "the second serve ends within the test's deadline")
        return
    print(f"the second serve ran {time.monotonic() - killed_at:.1f} s after the kill", flush=True)
    if not check(rc == 0, f"the second serve exits 0 (got {rc})"):
        print("--- last lines of serve-2.log\n" + "".join(read(log2).splitlines(True)[-25:]))
        return

    ends, listed = outcomes(out)
    check(sorted(ends) == ["0", "1", "2", "3", "4"] and listed == 5,
          f"jobs.csv lists jobs 0 to 4 once each (got {sorted(ends)} in {listed} rows)")
    check(all(o == "done" for o in ends.values()), f"every job's outcome is done ({list(ends.values())})")
    summary = json.loads(read(os.path.join(out, "summary.json")))
    check(summary.get("jobs_completed") == 5 and summary.get("jobs_failed") == 0,
          f"summary.json: 5 jobs completed, none failed ({summary.get('jobs_completed')}, {summary.get('jobs_failed')})")
    check(summary.get("scheduler_restarts") == 1, f"summary.json counts one scheduler restart "
                                                  f"({summary.get('scheduler_restarts')})")
    check(summary.get("adopted_after_scheduler_restart") == 2 and summary.get("restarts_after_scheduler_restart") == 1,
          f"summary.json counts jobs 1 and 3 adopted, job 2 restarted (adopted "
          f"{summary.get('adopted_after_scheduler_restart')}, restarted {summary.get('restarts_after_scheduler_restart')})")

    events = read(os.path.join(out, "events.log"))
    check(re.search(r"scheduler restore job-0 name=a outcome=done", events) is not None,
          "events.log restores job 0 as done, from the journal")
    restored = sorted(int(j) for j in re.findall(r"scheduler restore job-(\d) .*was=running", events))
    check(restored == [1, 2, 3], f"events.log restores jobs 1, 2, 3 as running (got {restored})")
    adopted = sorted(int(j) for j in re.findall(r"scheduler adopt job-(\d) workers=4", events))
    check(adopted == [1, 3], f"events.log adopts jobs 1 and 3 (got {adopted})")
    # events.log is carried on: job 0's finish is the first serve's, 1 to 4 the second's.
    finished = sorted(int(j) for j in re.findall(r"scheduler finish job-(\d)", events))
    check(finished == [0, 1, 2, 3, 4], f"jobs 0 to 4 finish once each over the whole run (got {finished})")
    check(re.search(r"scheduler submit job-4 ", events) is not None, "job 4, still to come at the kill, is submitted")

    log = read(log2)
    check(re.search(r"of the 3 jobs running when the scheduler went away, 2 keep running, adopted: jobs 1, 3; 1 "
                    r"restart", log) is not None, "the second serve adopts jobs 1 and 3 and restarts job 2")
    check(re.search(r"server t\d: stopping the workers of jobs 2, from before this serve started", log) is not None,
          "the second serve stops job 2's surviving workers")
    starts = log.find("the run starts")
    exited = set(re.findall(r"job 2 rank ([012]) exited", log[:max(starts, 0)]))
    check(starts > 0 and exited == {"0", "1", "2"},
          f"the carried-on run starts only once job 2's 3 surviving workers have exited ({sorted(exited)} before it)")
    agent_logs = "".join(read(p) for p in glob.glob(os.path.join(bed, "agent-*", "agent.log")))
    check(re.search(r"stop job 2: SIGTERM to 3 worker", agent_logs) is not None, "an agent stops job 2's 3 workers")
    for job in (1, 3):
        launched = re.findall(rf"launch job {job} rank (\d) of 4: pid (\d+)", agent_logs)
        done = re.findall(rf"exit job {job} rank \d: code 0 ", agent_logs)
        pids = sorted(p for p, _ in at_kill.get(job, []))
        check(len(launched) == 4 and sorted(int(p) for _, p in launched) == pids and len(done) == 4,
              f"job {job} runs to its end on the workers from before the kill, launched once, exiting 0 "
              f"(launches {launched}, pids at the kill {pids}, exits 0: {len(done)})")
        check(re.search(rf"stop job {job}: SIGTERM to [1-9]", agent_logs) is None, f"job {job}'s workers are never stopped")
    firsts = []
    for path in glob.glob(os.path.join(bed, "agent-*", "logs", "2-0.log")):
        firsts += launches(read(path))
    check(len(firsts) >= 2 and max(firsts) > 0, f"job 2 restarts from its checkpoint (first progress per launch: {firsts})")
    time.sleep(0.2)
    sampler.stop.set()
    sampler.join()
    check(sampler.samples > 100 and not sampler.overlaps,
          f"no job ever had two launches alive at once ({sampler.samples} samples; overlaps {sampler.overlaps[:3]})")

    # The same file for another cluster, and a corrupt file: refused, naming the file.
    other = subprocess.run(serve_argv(aryl, bed, work, out + "-other", token, 0, ["--servers", "2"]),
                           capture_output=True, text=True, timeout=30)
    check(other.returncode == 2 and state in other.stderr and "cluster" in other.stderr,
          f"a state file of another cluster is refused naming it (rc {other.returncode}: {other.stderr.strip()})")
    with open(os.path.join(bed, "corrupt.db"), "wb") as f:
        f.write(b"not a database " * 512)
    corrupt = subprocess.run(serve_argv(aryl, bed, work, out + "-corrupt", token, 0,
                                        ["--state", os.path.join(bed, "corrupt.db")]),
                             capture_output=True, text=True, timeout=30)
    check(corrupt.returncode == 2 and os.path.join(bed, "corrupt.db") in corrupt.stderr,
          f"a corrupt state file is refused naming it (rc {corrupt.returncode}: {corrupt.stderr.strip()})")
    return port



def run_sampled(a, work, procs):
    """The run, with the sampler stopped on every way out."""
    sampler = Sampler(work)
    try:
        port = run(a, work, procs, sampler)
    finally:
        sampler.stop.set()
    return [port] if port else None


if __name__ == "__main__":
    sys.exit(main("live-restart", DEADLINE_S, run_sampled, ("serve.log", "serve-2.log", "agent-t0/agent.log")))
