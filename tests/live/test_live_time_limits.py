#!/usr/bin/python3
"""Time limits, retries and outcomes on real workers: a `sleep 30` job with `--time-limit 3` ends
timeout about 3 s after its start (its worker gets SIGTERM); one that ignores SIGTERM is killed
after serve's stop grace; an `exit 3` job with `--max-retries 2` runs 3 times and ends failed with
exit code 3, each attempt in `aryl show`; a command that cannot be executed ends failed with the
agent's reason in `show`. `status --all` and jobs.csv carry the outcomes. A limit that is not a
duration, and a torchrun job whose --nnodes disagrees with its workers, are refused.

    test_live_time_limits.py --aryl BUILD/aryl --source SOURCE_DIR [--dir TMP]

On loopback: serve --no-workload --stop-grace 3 and one training agent t0 of 8 GPUs. Every
process is stopped by its pid, also on a failure; no port is left bound.
"""

import json
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from live_harness import check, main, outcomes, read, wait_for  # noqa: E402
from serve_bed import Bed  # noqa: E402


def run(a, work, procs):
    bed = Bed(a, work, procs, "live-time-limits-test-token")
    serve = bed.serve(["--no-workload", "--servers", "1", "--set", "cluster.inference.servers=0", "--speedup", "1"])
    if not serve:
        return None
    bed.agent("t0", 8)
    if not bed.run_starts():
        return [bed.port]

    limited = bed.submit("--name", "limited", "--time-limit", "3", "--", "/bin/sh", "-c", "sleep 30")
    stubborn = bed.submit("--name", "stubborn", "--time-limit", "0:02", "--", "/bin/sh", "-c",
                          "trap '' TERM; sleep 30")
    three = bed.submit("--name", "three", "--max-retries", "2", "--", "/bin/sh", "-c", "exit 3")
    missing = bed.submit("--name", "missing", "--max-retries", "0", "--", os.path.join(work, "no-such-program"))
    check([limited, stubborn, three, missing] == [0, 1, 2, 3], f"the four jobs are taken ({limited}, {stubborn}, "
          f"{three}, {missing})")
    bad = bed.client("submit", "--time-limit", "ten minutes", "--", "/bin/true")
    check(bad.returncode != 0 and "--time-limit: 'ten minutes' is not a duration" in bad.stderr,
          f"a time limit that is not a duration is refused, naming the flag ({bad.stderr.strip()})")
    torchrun = bed.client("submit", "--name", "tr", "--gpus", "2", "--", "torchrun", "--nnodes=1:4", "train.py")
    check(torchrun.returncode != 0 and "its torchrun command runs 1..4 node(s)" in torchrun.stderr,
          f"a torchrun job whose --nnodes disagrees with its workers is refused ({torchrun.stderr.strip()})")

    jobs = {}

    def ended():
        r = bed.client("status", "--all", "--json")
        if r.returncode != 0:
            return False
        jobs.update({j["job_id"]: j for j in json.loads(r.stdout)["jobs"]})
        return all(jobs.get(i, {}).get("outcome") for i in range(4))

    if not check(wait_for(ended, 40, "the four jobs to end"), "the four jobs end within 40 s"):
        return [bed.port]
    check(jobs[0]["outcome"] == "timeout" and jobs[0]["state"] == "failed",
          f"the sleep 30 job ends timeout ({jobs[0]})")
    check(2.5 <= jobs[0].get("run_s", 0) <= 6, f"at its limit of 3 s ({jobs[0].get('run_s')})")
    check(jobs[1]["outcome"] == "timeout", f"the job ignoring SIGTERM ends timeout ({jobs[1]})")
    check(jobs[2]["outcome"] == "failed" and jobs[2].get("exits") == "0:3",
          f"the exit 3 job ends failed with exit code 3 ({jobs[2]})")
    check(jobs[3]["outcome"] == "failed", f"the job whose command cannot run ends failed ({jobs[3]})")

    agent_log = os.path.join(bed.dir, "agent-t0", "agent.log")
    check(wait_for(lambda: "job 1 rank 0: SIGKILL after the grace period" in read(agent_log), 10,
                   "the SIGKILL"), "the worker that ignores SIGTERM is killed after the stop grace")
    check("exit job 0 rank 0: code 0 signal 15" in read(agent_log), "the sleep 30 worker ended on SIGTERM")

    def show(job):
        r = bed.client("show", str(job), "--json")
        return json.loads(r.stdout) if r.returncode == 0 else {}

    s = show(2)
    attempts = s.get("attempts", [])
    check(len(attempts) == 3 and all(x.get("exits") == "0:3" and x["outcome"] == "failed" for x in attempts),
          f"show lists its 3 attempts, each exiting 3 ({attempts})")
    check(all("start_s" in x and x["end_s"] >= x["start_s"] for x in attempts), "each attempt has its start and end")
    check(s.get("max_retries") == 2, f"show gives its retries ({s.get('max_retries')})")
    text = bed.client("show", "2")
    check("Outcome=failed Exits=0:3" in text.stdout and "MaxRetries=2" in text.stdout,
          f"show's text gives the outcome and exits ({text.stdout})")
    m = show(3).get("attempts", [])
    check(len(m) == 1 and "could not start: cannot execute" in m[0]["why"] and "no-such-program" in m[0]["why"],
          f"a command that cannot be executed: show says why ({m})")
    check(show(0).get("time_limit_s") == 3, "show gives the time limit")

    if bed.stop(serve):
        got, rows = outcomes(bed.out)
        check(got == {"0": "timeout", "1": "timeout", "2": "failed", "3": "failed"} and rows == 4,
              f"jobs.csv has each job's outcome ({got})")
        head = read(os.path.join(bed.out, "jobs.csv")).splitlines()[0]
        check(head.endswith(",exits,attempts"), f"jobs.csv ends with exits and attempts ({head})")
    return [bed.port]


if __name__ == "__main__":
    sys.exit(main("live-time-limits", 120, run, ("serve.log", "agent-t0/agent.log")))
