#!/usr/bin/python3
"""An elastic torchrun job scaled 4 -> 2 -> 4 by aryl's own decisions, across two machines that
share no folder: TorchElastic re-forms the group at each change and the script resumes from its
own checkpoint.

    test_live_torchrun.py --aryl BUILD/aryl --source SOURCE_DIR [--dir TMP]

On loopback: scripts/rdzv_store.py (the c10d store, outside the job), serve with t0 (training,
2 GPUs) and i0 (inference, 2 GPUs, V100 too), agents each in its own folder (their workers' working
directory: no path shared). The job (2..4 workers, `torchrun --nnodes=1:2 --nproc_per_node=2
examples/torchrun/train.py`) starts at 2 on t0 while i0 serves. Demand 0 lends i0: aryl starts a
node there and TorchElastic restarts t0's workers in a group of 4. Demand 1 reclaims i0: aryl
stops i0's node and leaves t0's running (its workers restart at 2). Demand 0 lends i0 again: 4.
The script's history, read from both agents' logs, must show world sizes (2,) 4, 2, 4 in order,
each later launch resuming at the newest checkpoint; the scheduler's decisions 2, 4, 2, 4; 3
nodes started in all (t0's ran through every change); the job done. Prints the restart cost of
each change: from the scheduler's decision (events.log, at speedup 1 from the run's start) to
the first start line and the first step at the new size. The extra efficiency floor is lowered
(scheduler.min_extra_efficiency=0.5): at the model's cross-server efficiency (0.66) the
scheduler would not spread the job onto i0 at all.
Exits 77 (skipped) where /usr/bin/python3 has no torch. Every process is stopped by its pid.
"""

import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from live_harness import check, main, read, wait_for  # noqa: E402
from torchrun_bed import (decisions, has_torch, history, new_bed, resumed_checks, run_start_unix,  # noqa: E402
                          start_agent, start_store, steps_at, train_command)


def restart_costs(bed, job, hist):
    """Seconds from each rescale decision to the first start line and the first step at its size."""
    zero = run_start_unix(bed)
    costs = []
    for at, kind, workers in decisions(bed, job):
        if kind != "rescale" or zero is None:
            continue
        decided = zero + at
        start = next((e for e in hist if e["kind"] == "start" and e["world_size"] == workers and e["time"] > decided),
                     None)
        step = next((e for e in hist if e["kind"] == "step" and e["world_size"] == workers and e["time"] > decided),
                    None)
        costs.append((workers, start and start["time"] - decided, step and step["time"] - decided))
    return costs


def run(a, work, procs):
    bed = new_bed(a, work, procs, "live-torchrun-test-token")
    store = start_store(bed, procs)
    if not store:
        return None
    serve = bed.serve(["--no-workload", "--servers", "1", "--set", "cluster.training.gpus_per_server=2",
                       "--set", "cluster.inference.servers=1", "--set", "cluster.inference.gpus_per_server=2",
                       "--set", "cluster.inference.gpu_type=V100", "--set", "inference.interval_s=1",
                       "--speedup", "1", "--set", "jobs.restart_overhead_s=0", "--set", "jobs.scale_overhead_s=0",
                       "--set", "scheduler.rescale_margin_s=0", "--set", "scheduler.rescale_cooldown_s=0",
                       "--set", "scheduler.min_extra_efficiency=0.5", "--set", f"live.rdzv_endpoint={store}"])
    if not serve:
        return None
    start_agent(bed, "t0", 2)
    start_agent(bed, "i0", 2, pool="inference")
    if not bed.run_starts():
        return [bed.port]
    check(bed.client("demand", "1").returncode == 0, "demand 1: i0 serves")
    job = bed.submit("--name", "elastic", "--gpus", "2", "--min-workers", "2", "--max-workers", "4",
                     "--duration", "300", *train_command(a, steps=3000))
    if not check(isinstance(job, int), f"the torchrun job is taken ({job})"):
        return [bed.port]
    if not check(wait_for(lambda: steps_at(bed, job, 2, count=2), 150, "training at world size 2"),
                 "the job trains with 2 workers, a torchrun node on t0"):
        return [bed.port]
    for demand, world, what in (("0", 4, "i0 is lent: 4 workers, a node on t0 and one on i0"),
                                ("1", 2, "i0 is reclaimed: 2 workers, t0's node"),
                                ("0", 4, "i0 is lent again: 4 workers")):
        since = history(bed, job)[-1]["time"]
        check(bed.client("demand", demand).returncode == 0, f"demand {demand}")
        check(wait_for(lambda: steps_at(bed, job, world, after=since, count=2), 150, f"training at world size {world}"),
              f"the job trains on: {what}")
    check(wait_for(lambda: any(e["kind"] == "done" for e in history(bed, job)), 300, "the job's end"),
          "the script trains to its last step")
    check(wait_for(lambda: bed.idle(), 60, "the job to end"), "the job ends")
    bed.stop(serve)

    hist = history(bed, job)
    resumed_checks(hist, [2, 4, 2, 4])
    made = decisions(bed, job)
    print("decisions:", made, flush=True)
    check([w for _, _, w in made] == [2, 4, 2, 4],
          f"the scheduler started the job at 2 and rescaled it to 4, 2 and 4 ({made})")
    nodes = re.findall(r"launch job \d+ torchrun node (\d+) \((\d+) worker", read(os.path.join(bed.dir, "serve.log")))
    check(len(nodes) == 3, f"aryl started 3 torchrun nodes in all: t0's ran through every change ({nodes})")
    for workers, to_start, to_step in restart_costs(bed, job, hist):
        print(f"restart cost to {workers} workers: decision -> start line {to_start if to_start is None else round(to_start, 1)} s, "
              f"-> first logged step {to_step if to_step is None else round(to_step, 1)} s", flush=True)
    rows = bed.rows("jobs.csv")
    check(any(r.get("outcome") == "done" for r in rows), f"jobs.csv: the job ended done ({rows})")
    return [bed.port]


if __name__ == "__main__":
    if not has_torch():
        print("skipped: /usr/bin/python3 cannot import torch with gloo (scripts/setup_pytorch.sh installs it)")
        sys.exit(77)
    sys.exit(main("live-torchrun", 600, run, ("serve.log", "agent-t0/agent.log", "agent-i0/agent.log",
                                                "agent-t0/logs/0-0.log", "agent-i0/logs/0-1.log")))
