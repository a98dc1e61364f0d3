#!/usr/bin/python3
"""Fault plans that live mode cannot enact are refused before anything starts, by name.

    test_live_faults_plan.py --aryl BUILD/aryl --source SOURCE_DIR

scripts/live_faults.py against a testbed folder with a pids file (no process is started or
signalled: the refusal comes first) and `aryl serve` with random faults (refused while loading
its inputs, before it listens). Each refusal exits 2 with one line naming the file and line
and the kind, or the config keys.
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
        script = os.path.join(a.source, "scripts", "live_faults.py")
        cases = [
            ("unknown kind", "faults:\n  - {at: 1, server_crash: t0}\n  - {at: 2, link_flap: t0}\n",
             ":3: 'link_flap' cannot be enacted live"),
            ("server without an agent", "faults:\n  - {at: 1, server_crash: t7, down_for: 5}\n",
             ":2: server_crash: no agent 't7' in the testbed"),
            ("two kinds in one entry", "faults:\n  - {at: 1, worker_crash: 2, surge: 3}\n",
             ":2: a fault has exactly one of server_crash, worker_crash, surge"),
            ("no faults list", "fault:\n  - {at: 1}\n", ": expected a map with a `faults:` list"),
        ]
        for name, text, expected in cases:
            plan = os.path.join(work, name.replace(" ", "-") + ".yaml")
            with open(plan, "w") as f:
                f.write(text)
            r = subprocess.run([PYTHON, script, "--plan", plan, "--dir", work], capture_output=True, text=True,
                               timeout=30)
            err = r.stderr.strip()
            check(r.returncode == 2 and err.count("\n") == 0 and (plan + expected) in err,
                  f"live_faults.py refuses a plan with {name}, naming it (exit {r.returncode}: {err})")

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
