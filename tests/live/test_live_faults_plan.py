#!/usr/bin/python3
"""Fault plans that live mode cannot enact are refused before anything starts, by name.

    test_live_faults_plan.py --aryl BUILD/aryl --source SOURCE_DIR

scripts/live_faults.py against a testbed folder with a pids file (no process is started or
signalled: the refusal comes first) and `aryl serve` with random faults (refused while loading
its inputs, before it listens). Each refusal exits 2 with one line naming the file and line
and the kind, or the config keys. Refused by live_faults.py: an unknown kind, a server without
an agent, two kinds in one entry, no `faults:` list, a disconnect or link on an agent without a
fault proxy (saying to start the testbed with --proxy), a checkpoint fault (not enacted live), a
scheduler_crash without down_for, and one whose serve runs without --state (the serve in that
pids file is this test's own process, whose command line has no --state: read, never signalled).
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

PYTHON = "/usr/bin/python3"
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--aryl", required=True)
    p.add_argument("--source", required=True)
    a = p.parse_args()
    work = tempfile.mkdtemp(prefix="aryl-test-live-faults-plan-")
    try:
        with open(os.path.join(work, "pids"), "w") as f:
            f.write("999999999 serve\n999999998 agent t0\n")
        # A testbed whose serve is this process: its command line is read (no --state), nothing more.
        own = os.path.join(work, "own")
        os.makedirs(own)
        with open(os.path.join(own, "pids"), "w") as f:
            f.write(f"{os.getpid()} testbed\n{os.getpid()} serve\n999999998 agent t0\n")
        script = os.path.join(a.source, "scripts", "live_faults.py")
        cases = [
            ("unknown kind", "faults:\n  - {at: 1, server_crash: t0}\n  - {at: 2, link_flap: t0}\n",
             ":3: 'link_flap' cannot be enacted live", work),
            ("server without an agent", "faults:\n  - {at: 1, server_crash: t7, down_for: 5}\n",
             ":2: server_crash: no agent 't7' in the testbed", work),
            ("two kinds in one entry", "faults:\n  - {at: 1, worker_crash: 2, surge: 3}\n",
             ":2: a fault has exactly one of server_crash, worker_crash, surge, disconnect, link, scheduler_crash",
             work),
            ("no faults list", "fault:\n  - {at: 1}\n", ": expected a map with a `faults:` list", work),
            ("a key given twice", "faults:\n  - {at: 1,\n     at: 2, server_crash: t0}\n",
             ":3: duplicate key 'at' (first given on line 2)", work),
            ("a top-level key beside faults", "faults:\n  - {at: 1, server_crash: t0}\nfault:\n  - {at: 2}\n",
             ":3: unknown top-level key 'fault'", work),
            ("disconnect of an agent without a proxy", "faults:\n  - {at: 1, worker_crash: 0}\n"
             "  - {at: 2, disconnect: t0, for: 5}\n",
             ":3: disconnect: t0's agent has no fault proxy in the testbed", work),
            ("link of an agent without a proxy", "faults:\n  - {at: 1, link: t0, for: 5, delay_s: 2, loss: 0.3}\n",
             ":2: link: t0's agent has no fault proxy in the testbed", work),
            ("checkpoint fault", "faults:\n  - {at: 1, checkpoint: 0, slow_s: 30}\n",
             ":2: checkpoint: not enacted live", work),
            ("scheduler crash without down_for", "faults:\n  - {at: 1, scheduler_crash: true}\n",
             ":2: scheduler_crash needs `down_for`", own),
            ("scheduler crash of a serve without --state", "faults:\n  - {at: 1, surge: 2}\n"
             "  - {at: 4, scheduler_crash: true, down_for: 3}\n",
             f":3: scheduler_crash: serve (pid {os.getpid()}) was not started with --state FILE", own),
        ]
        for name, text, expected, bed in cases:
            plan = os.path.join(work, name.replace(" ", "-") + ".yaml")
            with open(plan, "w") as f:
                f.write(text)
            # A plan wrongly taken waits for a run that never starts: 1 s, then exit 3.
            try:
                r = subprocess.run([PYTHON, script, "--plan", plan, "--dir", bed, "--start-timeout", "1"],
                                   capture_output=True, text=True, timeout=30)
            except subprocess.TimeoutExpired:
                r = subprocess.CompletedProcess([], None, "", "(did not end within 30 s)")
            err = r.stderr.strip()
            check(r.returncode == 2 and err.count("\n") == 0 and (plan + expected) in err,
                  f"live_faults.py refuses a plan with {name}, naming it (exit {r.returncode}: {err})")
            if "proxy" in name:
                check("start the testbed with `scripts/testbed.sh --proxy t0`" in err,
                      f"the refusal of a {name.split()[0]} says how to give t0 a proxy ({err})")

        r = subprocess.run([a.aryl, "serve", "--token-file", os.path.join(work, "no-token"),
                            "--set", "faults.random.worker_crash_per_day=4", "--out", os.path.join(work, "out")],
                           capture_output=True, text=True, timeout=60)
        check(r.returncode == 2 and "faults.random.*: random faults run in simulated time only" in r.stderr,
              f"serve refuses random faults naming the keys (exit {r.returncode}: {r.stderr.strip()})")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
