"""scripts/check_layers.py: the source tree passes, and an include against the floors or between
the two sides of live mode fails, named by file, line and rule.

  test_check_layers.py --aryl build/aryl --source . TEST_NAME
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

ARGS = None


def run_check(root):
    return subprocess.run([sys.executable, os.path.join(ARGS.source, "scripts", "check_layers.py"), root],
                          capture_output=True, text=True)


def the_source_tree_passes():
    r = run_check(ARGS.source)
    assert r.returncode == 0, f"check_layers.py failed on the tree:\n{r.stdout}{r.stderr}"
    assert r.stdout == "", r.stdout


def forbidden_includes_fail_by_file_line_and_rule():
    tmp = tempfile.mkdtemp(prefix="aryl-layers-")
    try:
        for floor in ("solvers", "actors", "runtime"):
            shutil.copytree(os.path.join(ARGS.source, floor), os.path.join(tmp, floor))
        injected = {
            "solvers/mckp.hpp": '#include "actors/job.hpp"',
            "actors/job.cpp": '#include "runtime/live/gateway.hpp"',
            # Once listed as vocabulary the actors could read; now it is refused like any other.
            "actors/recorder.cpp": '#include "runtime/outputs/outputs.hpp"',
            "runtime/node/agent.cpp": '#include "runtime/live/gateway.hpp"',
            "runtime/live/serve.cpp": '#include "runtime/node/worker.hpp"',
            "runtime/wire/codec.cpp": '#include "runtime/node/agent.hpp"',
        }
        for path, line in injected.items():
            with open(os.path.join(tmp, path), "a") as f:
                f.write("\n" + line + "\n")
        r = run_check(tmp)
        assert r.returncode == 1, f"exit {r.returncode}, expected 1:\n{r.stdout}{r.stderr}"
        lines = r.stdout.splitlines()
        assert len(lines) == len(injected), r.stdout
        for path, line in injected.items():
            target = line.split('"')[1]
            hits = [x for x in lines if x.startswith(path + ":") and f"includes {target}:" in x]
            assert len(hits) == 1, f"{path} -> {target} not reported once:\n{r.stdout}"
        rules = " ".join(lines)
        for rule in ("solvers/ includes only solvers/", "actors/ includes solvers/ and actors/ only",
                     "live mode's node side meets its serve side only through runtime/wire/",
                     "live mode's serve side meets its node side only through runtime/wire/",
                     "runtime/wire/ is what both sides of live mode speak"):
            assert rule in rules, f"rule '{rule}' not named:\n{r.stdout}"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--aryl")
    p.add_argument("--source", required=True)
    p.add_argument("test")
    ARGS = p.parse_args()
    globals()[ARGS.test]()
    print("ok")


if __name__ == "__main__":
    main()
