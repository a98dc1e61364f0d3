#!/usr/bin/python3
"""Holds, updates, dependencies and arrays of pending jobs on a live queue, as Slurm users
work them (scontrol hold/release/update, --dependency, --array).

    test_live_queue.py --aryl BUILD/aryl --source SOURCE_DIR [--dir TMP]

On loopback: `aryl serve --no-workload --policy fifo`, one training agent t0 of 4 GPUs; every
job runs a real `sh -c` command.

Checks: a job submitted --hold is listed held and does not start in 3 s with GPUs free; an
update with max below min, or a time limit that is not a duration, is refused saying so; an
update of the held job takes (show lists its time limit and the update); release starts it and
it ends done; an update of a running job is refused. A chain A -> B (afterok, B exits 3) -> C
(afternotok B) runs C after B, D (afterok B) ends dependency_never_met naming job B, and
--after of an unknown job is refused. An array --array 0-5%2 never has more than 2 tasks
running, its table row is folded (JOB_[0-5]) unless --array, `show JOB_3` shows task 3, each
task sees ARYL_ARRAY_TASK_ID, ARYL_ARRAY_JOB_ID and ARYL_ARRAY_TASK_COUNT, `logs JOB_3` prints
task 3's output (JOB_9: no such task); `cancel JOB_5`
cancels task 5 only, and `cancel JOB` of another array cancels its every task. A submit
repeated with its --key (also as an array) prints the first one's id and one job runs; an
empty key is refused. Serve runs
with --state: killed (SIGKILL) with a job held, one waiting for it and an array whose limit
keeps 3 of its 4 tasks waiting, the serve restarted on the state file still has the job held,
the other waiting for it and the array's tasks beyond its limit waiting, and the ended tasks,
folded into final records, still in their arrays (afterok of an array with a cancelled task
is refused); released, the held job runs and the one after it follows. --help of hold, release, update and submit lists their
flags. Serve is stopped with SIGTERM; no process is left, no port bound.
"""

import json
import os
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from live_harness import check, job, read, wait_for  # noqa: E402
from live_harness import main  # noqa: E402
from serve_bed import Bed  # noqa: E402

DEADLINE_S = 150


def all_jobs(bed):
    r = bed.client("status", "--all", "--json")
    return json.loads(r.stdout)["jobs"] if r.returncode == 0 else []


def ended_tasks(bed):
    """Ended array tasks: job id -> (array id, task id, outcome)."""
    return {j["job_id"]: (j["array_job"], j.get("array_task"), j["outcome"])
            for j in all_jobs(bed) if "outcome" in j and "array_job" in j}


def ended(bed, job_id):
    """The outcome of an ended job, or None."""
    for j in all_jobs(bed):
        if j["job_id"] == job_id and "outcome" in j:
            return j["outcome"]
    return None


def holds(bed):
    a = bed.submit("--name", "held", "--gpus", "1", "--hold", "--", "sh", "-c", "sleep 1")
    if not check(isinstance(a, int), f"a held job is submitted ({a})"):
        return False
    j = job(bed.status(), a)
    check(j.get("held") is True and j.get("state") == "queued" and j.get("reason", "").startswith("held"),
          f"it is listed held ({j})")
    time.sleep(3)
    j = job(bed.status(), a)
    check(j.get("held") is True and j.get("workers") == 0, f"it has not started after 3 s with GPUs free ({j})")
    r = bed.client("status")
    check(any(line.split()[:1] == [str(a)] and "held" in line.split() for line in r.stdout.splitlines()),
          f"the status table says held ({r.stdout})")
    r = bed.client("update", str(a), "--min-workers", "2", "--max-workers", "1")
    check(r.returncode == 2 and "--max-workers 1 is below --min-workers 2" in r.stderr,
          f"max below min is refused ({r.stderr.strip()})")
    r = bed.client("update", str(a), "--time-limit", "soon")
    check(r.returncode == 2 and "--time-limit" in r.stderr and "soon" in r.stderr,
          f"a time limit that is not a duration is refused ({r.stderr.strip()})")
    r = bed.client("update", str(a), "--time-limit", "1h", "--priority", "2")
    check(r.returncode == 0 and f"job {a} updated" in r.stdout, f"an update of the held job takes ({r.stdout}{r.stderr})")
    r = bed.client("show", str(a))
    check(r.returncode == 0 and "State=held" in r.stdout and "TimeLimit=1:00:00" in r.stdout and "update" in r.stdout,
          f"show lists the hold, the new time limit and the update ({r.stdout})")
    r = bed.client("release", str(a))
    check(r.returncode == 0 and f"job {a} released" in r.stdout, f"release answers ({r.stdout}{r.stderr})")
    check(wait_for(lambda: ended(bed, a) == "done", 20, "the released job to end"), "the released job runs and ends done")
    b = bed.submit("--name", "runs", "--gpus", "1", "--", "sh", "-c", "sleep 20")
    wait_for(lambda: job(bed.status(), b).get("state") == "running", 10, "b to run")
    r = bed.client("update", str(b), "--priority", "1")
    check(r.returncode == 2 and "has started" in r.stderr, f"an update of a running job is refused ({r.stderr.strip()})")
    r = bed.client("hold", str(b))
    check(r.returncode == 2 and "is running" in r.stderr, f"a hold of a running job is refused ({r.stderr.strip()})")
    bed.client("cancel", str(b))
    return True


def dependencies(bed):
    # A runs long enough that B is still waiting when status is read after four submits, even
    # on a loaded machine (sanitizer builds).
    a = bed.submit("--name", "A", "--gpus", "1", "--", "sh", "-c", "sleep 6")
    b = bed.submit("--name", "B", "--gpus", "1", "--max-retries", "0", "--after", str(a), "--", "sh", "-c", "exit 3")
    c = bed.submit("--name", "C", "--gpus", "1", "--after", f"{b}:notok", "--", "sh", "-c", "sleep 1")
    d = bed.submit("--name", "D", "--gpus", "1", "--after", f"{b}:ok", "--", "sh", "-c", "sleep 1")
    if not check(all(isinstance(x, int) for x in (a, b, c, d)), f"a chain is submitted ({a}, {b}, {c}, {d})"):
        return False
    j = job(bed.status(), b)
    check(j.get("reason") == f"dependency (afterok:{a})", f"B waits for A ({j.get('reason')})")
    check(wait_for(lambda: ended(bed, c) is not None and ended(bed, d) is not None, 40, "the chain to end"),
          "the chain ends")
    got = {x: ended(bed, x) for x in (a, b, c, d)}
    check(got == {a: "done", b: "failed", c: "done", d: "dependency_never_met"},
          f"A done, B failed, C (afternotok B) done, D (afterok B) dependency_never_met ({got})")
    r = bed.client("show", str(d))
    check(f"job {b} ended failed" in r.stdout and f"afterok:{b}" in r.stdout,
          f"show D says which dependency was never met ({r.stdout})")
    r = bed.client("show", str(c), "--json")
    history = json.loads(r.stdout)["history"] if r.returncode == 0 else []
    starts = [h["t_s"] for h in history if h["event"] == "start"]
    r = bed.client("show", str(b), "--json")
    b_end = json.loads(r.stdout).get("end_s") if r.returncode == 0 else None
    check(starts and b_end is not None and starts[0] >= b_end, f"C started only once B ended ({starts}, {b_end})")
    r = bed.client("submit", "--name", "X", "--gpus", "1", "--after", "999", "--", "true")
    check(r.returncode == 2 and "job 999: no such job" in r.stderr, f"--after an unknown job is refused ({r.stderr.strip()})")
    return True


def arrays(bed):
    out = os.path.join(bed.dir, "array-out")
    os.makedirs(out)
    cmd = (f"echo task $ARYL_ARRAY_TASK_ID; echo $ARYL_ARRAY_JOB_ID $ARYL_ARRAY_TASK_ID $ARYL_ARRAY_TASK_COUNT "
           f">> {out}/tasks; sleep 2")
    arr = bed.submit("--name", "sweep", "--gpus", "1", "--array", "0-5%2", "--", "sh", "-c", cmd)
    if not check(isinstance(arr, int), f"an array is submitted ({arr})"):
        return False
    r = bed.client("cancel", f"{arr}_5")
    check(r.returncode == 0 and f"cancelled job {arr}_5" in r.stdout, f"cancel JOB_5 cancels task 5 ({r.stdout}{r.stderr})")
    r = bed.client("status")
    check(f"{arr}_[0-4]" in r.stdout, f"the table folds the array into one row ({r.stdout})")
    r = bed.client("status", "--array")
    check(f"{arr}_0" in r.stdout.split() and f"{arr}_4" in r.stdout.split(), f"--array lists every task ({r.stdout})")
    r = bed.client("show", f"{arr}_3")
    check(r.returncode == 0 and f"ArrayJobId={arr} ArrayTaskId=3" in r.stdout, f"show JOB_3 shows task 3 ({r.stdout})")
    most = 0
    deadline = time.time() + 40
    while time.time() < deadline:
        tasks = [j for j in all_jobs(bed) if j.get("array_job") == arr]
        most = max(most, sum(1 for j in tasks if j["state"] == "running"))
        if tasks and all("outcome" in j for j in tasks) and len(tasks) == 6:
            break
        time.sleep(0.2)
    check(most == 2, f"at most 2 tasks ran at once, and 2 did ({most})")
    got = sorted(read(os.path.join(out, "tasks")).split("\n"))
    want = sorted(f"{arr} {t} 6" for t in range(5))
    check([g for g in got if g] == want, f"tasks 0-4 ran, each with its ARYL_ARRAY_* variables ({got})")
    outs = {j["array_task"]: j.get("outcome") for j in all_jobs(bed) if j.get("array_job") == arr}
    check(outs == {0: "done", 1: "done", 2: "done", 3: "done", 4: "done", 5: "cancelled"},
          f"tasks 0-4 done, task 5 cancelled ({outs})")
    r = bed.client("logs", f"{arr}_3")
    check(r.returncode == 0 and r.stdout == "task 3\n", f"logs JOB_3 prints task 3's output ({r.stdout}{r.stderr})")
    r = bed.client("logs", f"{arr}_9")
    check(r.returncode != 0 and f"job {arr}_9: no such array task" in r.stderr, f"logs JOB_9 names no task ({r.stderr})")
    other = bed.submit("--name", "long", "--gpus", "1", "--array", "0-3", "--", "sh", "-c", "sleep 60")
    wait_for(lambda: any(j.get("array_job") == other and j["state"] == "running" for j in bed.status()["jobs"]), 10,
             "the second array to run")
    r = bed.client("cancel", str(other))
    check(r.returncode == 0, f"cancel of an array answers ({r.stdout}{r.stderr})")
    check(wait_for(lambda: sum(1 for j in all_jobs(bed) if j.get("array_job") == other
                               and j.get("outcome") == "cancelled") == 4, 15, "the array's tasks to end"),
          "cancel JOB cancels every task of the array")
    return True


def keys(bed):
    a = bed.submit("--name", "keyed", "--gpus", "1", "--key", "nightly-1", "--", "sh", "-c", "sleep 1")
    b = bed.submit("--name", "keyed", "--gpus", "1", "--key", "nightly-1", "--", "sh", "-c", "sleep 1")
    check(isinstance(a, int) and a == b, f"a submit repeated with its --key prints the first one's id ({a}, {b})")
    check(wait_for(lambda: ended(bed, a) == "done", 20, "the keyed job to end"), "the keyed job runs and ends done")
    named = [j for j in all_jobs(bed) if j["name"] == "keyed"]
    check(len(named) == 1, f"one job was taken for the two submits ({named})")
    # A repeat with other flags is still the first job, and changes nothing of it or of others.
    c = bed.submit("--name", "keyed", "--gpus", "1", "--key", "nightly-1", "--array", "0-3", "--", "true")
    tasks = [j for j in all_jobs(bed) if j.get("array_job") == a]
    check(c == a and not tasks, f"a repeat as an array prints the first id and books no tasks ({c}, {tasks})")
    r = bed.client("submit", "--gpus", "1", "--key", "", "--", "true")
    check(r.returncode == 2 and "--key" in r.stderr, f"an empty --key is refused ({r.returncode} {r.stderr})")
    return True


def restart(bed, serve, args):
    """Kills serve with a job held, one after it and a limited array, and checks what the serve
    restarted on the state file keeps; the new serve, or None."""
    h = bed.submit("--name", "H", "--gpus", "1", "--hold", "--", "sh", "-c", "sleep 1")
    x = bed.submit("--name", "X", "--gpus", "1", "--after", str(h), "--", "sh", "-c", "sleep 1")
    w = bed.submit("--name", "W", "--gpus", "1", "--array", "0-3%1", "--", "sh", "-c", "sleep 60")
    if not check(all(isinstance(v, int) for v in (h, x, w)), f"H, X and array W are submitted ({h}, {x}, {w})"):
        return None
    wait_for(lambda: any(j.get("array_job") == w and j["state"] == "running" for j in bed.status()["jobs"]), 10,
             "W's first task to run")
    tasks_before = ended_tasks(bed)
    serve.kill()
    serve.wait()
    serve = bed.serve(args, log="serve-2.log", port=bed.port)
    if not serve or not check(wait_for(lambda: bed.status() is not None and job(bed.status(), h), 40,
                                       "the restarted serve to answer"), "the restarted serve answers"):
        return serve
    # Their rows were folded into final records (live.state_compact_every=1): the ended
    # tasks are still their arrays' tasks, and afterok of an array whose first task ended done
    # and another cancelled can never be met.
    check(tasks_before and ended_tasks(bed) == tasks_before,
          f"ended array tasks keep their arrays after the restart ({tasks_before}, {ended_tasks(bed)})")
    mixed = [a for a in {a for a, _, _ in tasks_before.values()}
             if tasks_before.get(a, (0, 0, ""))[2] == "done"
             and any(t[0] == a and t[2] == "cancelled" for t in tasks_before.values())]
    if check(mixed, f"an array with a done first task and a cancelled one ({tasks_before})"):
        r = bed.submit("--name", "late", "--gpus", "1", "--after", str(mixed[0]), "--", "sh", "-c", "true")
        check("can never be met" in str(r), f"afterok of that array is refused after the restart ({r})")
    s = bed.status()
    check(job(s, h).get("held") is True, f"H is still held after the restart ({job(s, h)})")
    check(job(s, x).get("reason") == f"dependency (afterok:{h})", f"X still waits for H ({job(s, x)})")
    tasks = [j for j in s["jobs"] if j.get("array_job") == w]
    waiting = [j for j in tasks if j.get("reason", "").startswith("array limit")]
    check(len(tasks) == 4 and len(waiting) == 3, f"3 of W's 4 tasks still wait for its limit ({tasks})")
    r = bed.client("release", str(h))
    check(r.returncode == 0, f"H is released after the restart ({r.stdout}{r.stderr})")
    check(wait_for(lambda: ended(bed, x) == "done", 30, "X to end"), "H runs, then X after it, both done")
    check(ended(bed, h) == "done", f"H ended done ({ended(bed, h)})")
    bed.client("cancel", str(w))
    return serve


def run(a, work, procs):
    bed = Bed(a, work, procs, "live-queue-test-token")
    args = ["--no-workload", "--servers", "1", "--set", "cluster.training.gpus_per_server=4",
            "--set", "cluster.inference.servers=0", "--speedup", "1", "--policy", "fifo",
            "--set", "scheduler.backfill=false", "--set", "jobs.restart_overhead_s=0",
            "--set", "jobs.scale_overhead_s=0", "--set", "live.state_compact_every=1",
            "--state", os.path.join(bed.dir, "state.db")]
    serve = bed.serve(args)
    if not serve:
        return None
    bed.agent("t0", 4)
    if not bed.run_starts():
        return [bed.port]
    for cmd, flags in (("hold", ["--port"]), ("release", ["--port"]),
                       ("update", ["--priority", "--time-limit", "--min-workers", "--max-workers", "--duration",
                                   "--after"]),
                       ("submit", ["--after", "--array", "--hold", "--key"]), ("status", ["--array"])):
        text = bed.client(cmd, "--help").stdout
        missing = [f for f in flags if f not in text]
        check(not missing, f"{cmd} --help lists its flags (missing {missing})")
    if holds(bed) and dependencies(bed) and arrays(bed) and keys(bed):
        serve = restart(bed, serve, args) or serve
    bed.stop(serve)
    return [bed.port]


if __name__ == "__main__":
    sys.exit(main("live-queue", DEADLINE_S, run, ("serve.log", "serve-2.log", "agent-t0/agent.log")))
