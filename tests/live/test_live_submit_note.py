#!/usr/bin/python3
"""A submit whose minimum the config's floor raises is told so: under the default
`scheduler.elastic_floor=request` an elastic job asking 4 GPUs with `--min-workers 2` is taken,
and `aryl submit` prints its id and, on standard error, that it runs on at least 4 workers and
why; a rigid job's submit prints no such note.

    test_live_submit_note.py --aryl BUILD/aryl --source SOURCE_DIR [--dir TMP]

On loopback: serve --no-workload and one training agent t0 of 8 GPUs. Every process is stopped by
its pid, also on a failure; no port is left bound.
"""

import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from live_harness import check, main  # noqa: E402
from serve_bed import Bed  # noqa: E402


def run(a, work, procs):
    bed = Bed(a, work, procs, "live-submit-note-test-token")
    serve = bed.serve(["--no-workload", "--servers", "1", "--set", "cluster.inference.servers=0", "--speedup", "1"])
    if not serve:
        return None
    bed.agent("t0", 8)
    if not bed.run_starts():
        return [bed.port]

    def submit(*args):
        return subprocess.run([bed.aryl, "submit", "--port", str(bed.port), "--token-file", bed.token, *args],
                              capture_output=True, text=True, timeout=20)

    elastic = submit("--name", "e", "--gpus", "4", "--min-workers", "2", "--max-workers", "8", "--duration", "5")
    check(elastic.returncode == 0 and elastic.stdout.strip() == "0", f"the elastic job is taken as job 0 ({elastic})")
    check("job 0: runs on at least 4 workers, its request: scheduler.elastic_floor=request raises min-workers 2"
          in elastic.stderr, f"its submit says the floor raises its minimum ({elastic.stderr.strip()})")
    rigid = submit("--name", "r", "--gpus", "2", "--duration", "5")
    check(rigid.returncode == 0 and rigid.stdout.strip() == "1" and rigid.stderr.strip() == "",
          f"a rigid job's submit prints its id and nothing else ({rigid})")
    bed.stop(serve)
    return [bed.port]


if __name__ == "__main__":
    sys.exit(main("live-submit-note", 90, run, ("serve.log", "agent-t0/agent.log")))
