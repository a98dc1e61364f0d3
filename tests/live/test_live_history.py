#!/usr/bin/python3
"""`aryl history` reads every job a `serve --state` file holds, across a scheduler restart,
filtered by user, tenant, outcome and time, as sacct does.

    test_live_history.py --aryl BUILD/aryl --source SOURCE_DIR [--dir TMP]

On loopback: `aryl serve --state --until-stopped` (speedup 1, fifo), one training agent t0 of
4 GPUs, and a trace of three 1-GPU jobs with users and tenants: a (ana, vision, 2 s), b (bo,
nlp, 2 s), c (ana, nlp, 30 s with a 2 s time limit: ends timeout). Once they ended, e (600 s) is
submitted; serve is killed with -9 while e runs and started again on the same file and port.
After the restart f (2 s) is submitted and ends done, e is cancelled; serve is stopped with
SIGTERM.

Checks: while serve runs, history refuses the file it holds, naming it and saying to ask serve
(exit 2); after the restart, while serve runs, history without --state asks serve (the usual
--port and token) and lists jobs 0..4 from before and after the restart, filtered by user,
tenant and outcome, the same with a forced page of one job as in one page, and --state with
--port is refused; after it stopped, history lists jobs 0..4 once each with their outcomes (a, b done, c timeout, e
cancelled, f done), the trace's users and tenants; --user ana lists a and c; --tenant nlp b
and c; --outcome timeout,CA c and e; --until the restart lists the jobs submitted before it
(0..3), --since the restart the jobs that ended after it (e, f); --json and --csv carry the
same rows in the --format columns; a bad time, an unknown outcome and a file that is not an
aryl database are refused in one line naming the flag or the file (exit 2); --help lists
every flag. No process is left, no port bound.
"""

import csv
import io
import json
import os
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from live_harness import check, main, read, wait_for  # noqa: E402
from serve_bed import Bed  # noqa: E402

TRACE = ("job_id,submit_s,gpus,duration_s,user,tenant,time_limit\n"
         "a,0,1,2,ana,vision,\n"
         "b,0,1,2,bo,nlp,\n"
         "c,0,1,30,ana,nlp,2\n")
DEADLINE_S = 120


def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t))


def ask_serve(bed, state):
    """History asked of the running serve (after the restart): its own file's rows, filtered,
    paged; --state with --port is refused."""
    def listed(*flags):
        r = bed.client("history", "--json", "--format", "id,name,user,outcome", *flags)
        if not check(r.returncode == 0, f"history {' '.join(flags)} asks serve ({r.stderr.strip()})"):
            return None
        return [(j["id"], j["name"], j["user"], j["outcome"]) for j in json.loads(r.stdout)["jobs"]]

    every = listed()
    check(every == [(0, "a", "ana", "done"), (1, "b", "bo", "done"), (2, "c", "ana", "timeout"),
                    (3, "e", None, "cancelled"), (4, "f", None, "done")],
          f"serve answers history with the jobs from before and after the restart ({every})")
    check(listed("--page-size", "1") == every, "a page of one job at a time gives the same rows as one page")
    got = listed("--user", "ana", "--page-size", "1")
    check(got == [(0, "a", "ana", "done"), (2, "c", "ana", "timeout")], f"--user ana asks serve for a and c ({got})")
    got = listed("--tenant", "nlp", "--outcome", "TO")
    check(got == [(2, "c", "ana", "timeout")], f"--tenant nlp --outcome TO asks serve for c ({got})")
    r = bed.client("history", "--csv", "--format", "id,outcome", "--page-size", "2")
    check(r.returncode == 0 and r.stdout == "id,outcome\n0,done\n1,done\n2,timeout\n3,cancelled\n4,done\n",
          f"--csv over the wire, paged by 2 ({r.stdout!r})")
    r = bed.client("history", "--state", state)
    check(r.returncode == 2 and r.stderr.startswith("aryl: history: --port is for asking serve; --state/--db reads "
                                                    "the file instead") and r.stderr.count("\n") == 1,
          f"--state with --port is refused ({r.stderr.strip()})")


def run(a, work, procs):
    bed = Bed(a, work, procs, "live-history-test-token")
    trace, state = os.path.join(work, "trace.csv"), os.path.join(bed.dir, "state.db")
    with open(trace, "w") as f:
        f.write(TRACE)
    args = ["--until-stopped", "--trace", trace, "--state", state, "--servers", "1", "--set",
            "cluster.training.gpus_per_server=4", "--set", "cluster.inference.servers=0", "--speedup", "1",
            "--policy", "fifo", "--set", "jobs.restart_overhead_s=0", "--set", "jobs.scale_overhead_s=0"]

    def history(*flags):
        return subprocess.run([bed.aryl, "history", "--state", state, *flags], capture_output=True, text=True,
                              timeout=20)

    def ended(*ids):
        s = bed.client("status", "--all", "--json")
        if s.returncode != 0:
            return False
        states = {j["job_id"]: j["state"] for j in json.loads(s.stdout)["jobs"]}
        return all(states.get(i) not in (None, "queued", "running") for i in ids)

    serve = bed.serve(args)
    if not serve:
        return None
    bed.agent("t0", 4)
    if not bed.run_starts():
        return [bed.port]
    if not check(wait_for(lambda: ended(0, 1, 2), 40, "a, b and c to end"), "a, b and c end"):
        return [bed.port]
    e = bed.submit("--name", "e", "--gpus", "1", "--duration", "600")
    check(e == 3, f"e gets id 3 ({e})")
    if not check(wait_for(lambda: "launch job 3 " in read(os.path.join(bed.dir, "serve.log")), 20, "e to start"),
                 "e runs"):
        return [bed.port]
    held = history()
    check(held.returncode == 2 and held.stderr.strip() == f"aryl: {state}: held by a running `aryl serve` (serve "
          "holds its state file while it runs): ask serve instead: run `aryl history` without --state, with --port "
          "(or ARYL_ADDR) and the token as for `aryl status`",
          f"history refuses the file a running serve holds, naming it ({held.stderr.strip()})")
    # The restart's second (history's times are whole seconds) after every submit and end before it.
    time.sleep(1.1)
    serve.kill()
    serve.wait()
    restart = time.time()
    time.sleep(1.2)  # the jobs after the restart are submitted a whole second after it
    serve = bed.serve(args, log="serve-2.log", port=bed.port)
    if not serve or not bed.run_starts(log="serve-2.log"):
        return [bed.port]
    f = bed.submit("--name", "f", "--gpus", "1", "--duration", "2")
    check(f == 4, f"f gets id 4 after the restart ({f})")
    check(wait_for(lambda: ended(4), 40, "f to end"), "f ends after the restart")
    r = bed.client("cancel", "3")
    check(r.returncode == 0, f"e is cancelled ({r.stderr.strip()})")
    check(wait_for(lambda: ended(3), 20, "e to end"), "e ends cancelled")
    ask_serve(bed, state)
    bed.stop(serve)

    def rows(*flags):
        r = history("--json", *flags)
        if not check(r.returncode == 0, f"history --json {' '.join(flags)} answers ({r.stderr.strip()})"):
            return None
        return json.loads(r.stdout)["jobs"]

    def ids(*flags):
        got = rows("--format", "id", *flags)
        return None if got is None else [j["id"] for j in got]

    every = rows()
    if every is not None:
        got = [(j["id"], j["name"], j["user"], j["tenant"], j["outcome"]) for j in every]
        check(got == [(0, "a", "ana", "vision", "done"), (1, "b", "bo", "nlp", "done"),
                      (2, "c", "ana", "nlp", "timeout"), (3, "e", None, None, "cancelled"),
                      (4, "f", None, None, "done")],
              f"history lists every job once, from before and after the restart, with its outcome ({got})")
        check(len(every) == 5 and all(j["submit"] <= j["start"] <= j["end"] for j in every)
              and every[2]["attempts"] >= 1 and every[4]["run_s"] >= 1.5, f"each job's times are in order ({every})")
    check(ids("--user", "ana") == [0, 2], "--user ana lists a and c")
    check(ids("--tenant", "nlp") == [1, 2], "--tenant nlp lists b and c")
    check(ids("--outcome", "timeout,CA") == [2, 3], "--outcome timeout,CA lists c and e")
    check(ids("--user", "ana", "--outcome", "done") == [0], "--user ana --outcome done lists a")
    check(ids("--until", iso(restart)) == [0, 1, 2, 3], f"--until {iso(restart)} lists the jobs submitted before")
    check(ids("--since", iso(restart)) == [3, 4], f"--since {iso(restart)} lists the jobs that ended after")
    check(ids("--since", "-1h", "--outcome", "done") == [0, 1, 4], "--since -1h lists the jobs ended in the hour")
    r = history("--csv", "--format", "id,user,outcome")
    table = list(csv.reader(io.StringIO(r.stdout)))
    check(r.returncode == 0 and table == [["id", "user", "outcome"], ["0", "ana", "done"], ["1", "bo", "done"],
                                          ["2", "ana", "timeout"], ["3", "", "cancelled"], ["4", "", "done"]],
          f"--csv carries the same rows in the --format columns ({table})")
    r = history("--format", "id,outcome,exits", "--outcome", "F,TO")
    check(r.returncode == 0 and [line.split()[:2] for line in r.stdout.splitlines()] == [["JOBID", "OUTCOME"],
                                                                                        ["2", "timeout"]],
          f"the table shows the named columns ({r.stdout})")

    for flags, names in ((["--since", "2026-11-31"], "history: --since: '2026-11-31' is not a time"),
                         (["--until", "yesterday"], "history: --until: 'yesterday' is not a time"),
                         (["--outcome", "crashed"], "history: --outcome: 'crashed' is not an outcome"),
                         (["--format", "id,jct"], "history: --format: 'jct' is not a column")):
        r = history(*flags)
        check(r.returncode == 2 and r.stderr.startswith("aryl: " + names) and r.stderr.count("\n") == 1,
              f"{' '.join(flags)} is refused in one line naming the flag ({r.stderr.strip()})")
    r = subprocess.run([bed.aryl, "history", "--db", trace], capture_output=True, text=True, timeout=20)
    check(r.returncode == 2 and r.stderr.startswith(f"aryl: {trace}: not an aryl state file")
          and r.stderr.count("\n") == 1, f"a file that is not an aryl database is refused naming it ({r.stderr.strip()})")
    help_text = subprocess.run([bed.aryl, "history", "--help"], capture_output=True, text=True, timeout=20).stdout
    missing = [x for x in ("--state", "--db", "--since", "--until", "--user", "--tenant", "--outcome", "--format",
                           "--json", "--csv") if x not in help_text]
    check(not missing, f"history --help lists every flag (missing {missing})")
    return [bed.port]


if __name__ == "__main__":
    sys.exit(main("live-history", DEADLINE_S, run, ("serve.log", "serve-2.log", "agent-t0/agent.log")))
