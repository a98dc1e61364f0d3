#!/usr/bin/python3
"""One machine of a running elastic torchrun job dies (its agent and its processes, kill -9):
the job goes on with the other machine's node and finishes.

    test_live_torchrun_kill.py --aryl BUILD/aryl --source SOURCE_DIR [--dir TMP]

On loopback: scripts/rdzv_store.py (the c10d store, outside the job), serve with t0 and t1 (2
GPUs each), agents in separate work folders. The job (2..4 workers, `torchrun --nnodes=1:2
--nproc_per_node=2 examples/torchrun/train.py`) runs 4 workers, a node on each machine. Once it
trains, t1's agent and every process it started get SIGKILL, as a machine that dies: t0's node
re-forms the group at 2 workers (the store lives on) and resumes from its checkpoint; the
scheduler, once it has lost t1, shrinks the job onto t0, whose node it leaves running. The job
ends done, its history shows world sizes 4 then 2, and aryl started no node beyond the first
two. Exits 77 (skipped) where /usr/bin/python3 has no torch.
"""

import os
import re
import signal
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from live_harness import check, environ, main, read, wait_for  # noqa: E402
from torchrun_bed import (has_torch, history, new_bed, resumed_checks, start_agent, start_store, steps_at,  # noqa: E402
                          train_command)


def machine_processes(folder):
    """The processes an agent in `folder` started, and theirs: ARYL_AGENT names its work dir."""
    mine = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        env = environ(int(pid)) or {}
        if env.get(b"ARYL_AGENT", b"").endswith(b"@" + folder.encode()):
            mine.append(int(pid))
    return mine


def run(a, work, procs):
    bed = new_bed(a, work, procs, "live-torchrun-kill-test-token")
    store = start_store(bed, procs)
    if not store:
        return None
    serve = bed.serve(["--no-workload", "--servers", "2", "--set", "cluster.training.gpus_per_server=2",
                       "--set", "cluster.inference.servers=0", "--speedup", "1",
                       # Its floor is its minimum: the scheduler may shrink it onto one machine.
                       "--set", "scheduler.elastic_floor=min", "--set", "scheduler.min_extra_efficiency=0.5",
                       "--set", f"live.rdzv_endpoint={store}"])
    if not serve:
        return None
    start_agent(bed, "t0", 2)
    t1 = start_agent(bed, "t1", 2)
    if not bed.run_starts():
        return [bed.port]
    job = bed.submit("--name", "elastic", "--gpus", "4", "--min-workers", "2", "--max-workers", "4",
                     "--duration", "300", *train_command(a, steps=2400))
    if not check(isinstance(job, int), f"the torchrun job is taken ({job})"):
        return [bed.port]
    # Past its first checkpoint (every 50 steps), which the survivor resumes from.
    if not check(wait_for(lambda: steps_at(bed, job, 4, count=7), 150, "training at world size 4"),
                 "the job trains with 4 workers, a torchrun node on t0 and one on t1"):
        return [bed.port]
    killed_at = history(bed, job)[-1]["time"]
    folder = os.path.join(bed.dir, "agent-t1")
    victims = [t1.pid] + machine_processes(folder)
    for pid in victims:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    t1.wait()
    check(wait_for(lambda: not machine_processes(folder), 10, "t1's processes to die"),
          f"t1's agent and its {len(victims) - 1} process(es) are killed")
    check(wait_for(lambda: steps_at(bed, job, 2, after=killed_at, count=2), 150, "training at world size 2"),
          "the job trains on with 2 workers on t0")
    again = next((e for e in history(bed, job) if e["kind"] == "start" and e["time"] > killed_at), None)
    if again:
        print(f"t0's node trained again {again['time'] - killed_at:.1f} s after t1's last logged step", flush=True)
    check(wait_for(lambda: any(e["kind"] == "done" for e in history(bed, job)), 300, "the job's end"),
          "the script trains to its last step")
    check(wait_for(lambda: bed.idle(), 60, "the job to end"), "the job ends")
    bed.stop(serve)

    resumed_checks(history(bed, job), [4, 2])
    events = bed.events()
    check(re.search(r"scheduler lost server=t1 ", events) is not None, "the scheduler lost t1")
    check(re.search(rf"scheduler rescale job-{job} workers=2 .*shrinks onto its survivors", events) is not None,
          "the scheduler shrinks the job onto its survivor")
    nodes = re.findall(r"launch job \d+ torchrun node (\d+)", read(os.path.join(bed.dir, "serve.log")))
    check(len(nodes) == 2, f"aryl started only the first two nodes: t0's ran on ({nodes})")
    rows = bed.rows("jobs.csv")
    check(any(r.get("outcome") == "done" for r in rows), f"jobs.csv: the job ended done ({rows})")
    return [bed.port]


if __name__ == "__main__":
    if not has_torch():
        print("skipped: /usr/bin/python3 cannot import torch with gloo (scripts/setup_pytorch.sh installs it)")
        sys.exit(77)
    sys.exit(main("live-torchrun-kill", 600, run, ("serve.log", "agent-t0/agent.log", "agent-t1/agent.log",
                                                     "agent-t0/logs/0-0.log")))
