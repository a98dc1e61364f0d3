"""What the torchrun tests share: a loopback bed with a rendezvous store outside the jobs
(scripts/rdzv_store.py), agents in separate work folders, and the training history that
examples/torchrun/train.py prints (through torchrun's --tee, each line prefixed with its local
rank), read from every agent's log of the job."""

import glob
import os
import re
import subprocess
import time

from live_harness import check, read, wait_for
from serve_bed import Bed

PYTHON = "/usr/bin/python3"  # Debian's, with python3-torch


def has_torch():
    probe = [PYTHON, "-c", "import torch, torch.distributed as d; assert d.is_gloo_available()"]
    return subprocess.run(probe, capture_output=True).returncode == 0


def start_store(bed, procs):
    """scripts/rdzv_store.py on an OS-chosen port: its HOST:PORT, or None."""
    port_file = os.path.join(bed.dir, "rdzv.port")
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "rdzv_store.py")
    p = procs.start("rdzv store", [PYTHON, os.path.abspath(script), "--port-file", port_file],
                    os.path.join(bed.dir, "rdzv_store.log"))
    if not check(wait_for(lambda: read(port_file).strip() or p.poll() is not None, 60, "the store's port")
                 and p.poll() is None, "the rendezvous store listens"):
        return None
    return f"127.0.0.1:{read(port_file).strip()}"


def history(bed, job):
    """Every line train.py's global rank 0 printed, from every agent's logs of the job, in
    time order: dicts with kind (start, step, checkpoint, done), step, world_size, time, loss."""
    lines = []
    for path in glob.glob(os.path.join(bed.dir, "agent-*", "logs", f"{job}-*.log")):
        for line in read(path).splitlines():
            m = re.search(r"(start|step|checkpoint)[ =](?:step=)?(\d+)(?: loss=([0-9.eE+-]+))?"
                          r"(?: world_size=(\d+))? time=([0-9.]+)", line)
            if m:
                lines.append({"kind": m.group(1), "step": int(m.group(2)),
                              "loss": float(m.group(3)) if m.group(3) else None,
                              "world_size": int(m.group(4)) if m.group(4) else None,
                              "time": float(m.group(5)), "file": os.path.basename(path)})
            elif m := re.search(r"done step=(\d+)", line):
                lines.append({"kind": "done", "step": int(m.group(1)), "time": float("inf"), "world_size": None,
                              "loss": None, "file": os.path.basename(path)})
    return sorted(lines, key=lambda e: e["time"])


def steps_at(bed, job, world, after=0.0, count=1):
    """Whether `count` step lines at world size `world` came after time `after`."""
    time.sleep(0.2)
    return sum(1 for e in history(bed, job) if e["kind"] == "step" and e["world_size"] == world
               and e["time"] > after) >= count


def resumed_checks(hist, sizes):
    """The history's launches (start lines) have world sizes `sizes` in order (a repeat of
    one size, a restart within it, allowed) and each later one resumed at the newest
    checkpoint written before it, past step 0, training on from there."""
    starts = [e for e in hist if e["kind"] == "start"]
    seen = [s["world_size"] for s in starts]
    collapsed = [w for i, w in enumerate(seen) if i == 0 or seen[i - 1] != w]
    print("launches:", [(s["step"], s["world_size"], round(s["time"], 1)) for s in starts], flush=True)
    # Nodes started together may form a smaller group first, when one is slower to start than the
    # rendezvous' last call: the sizes counted from the first launch at the first size.
    first = collapsed.index(sizes[0]) if sizes[0] in collapsed else len(collapsed)
    if first > 0:
        print(f"note: the group formed at {collapsed[:first]} before its first size {sizes[0]}", flush=True)
    check(collapsed[first:] == sizes, f"the script ran at world sizes {sizes} in that order (launches: {seen})")
    starts = starts[next((i for i, s in enumerate(starts) if s["world_size"] == sizes[0]), 0):]
    for s in starts[1:]:
        saved = [e["step"] for e in hist if e["kind"] == "checkpoint" and e["time"] <= s["time"]]
        later = [e["step"] for e in hist if e["kind"] == "step" and e["time"] > s["time"]]
        check(s["step"] > 0 and saved and s["step"] == max(saved),
              f"the launch at world size {s['world_size']} resumed at step {s['step']}, the newest checkpoint "
              f"before it ({max(saved) if saved else None})")
        check(not later or later[0] > s["step"], f"and trained on from step {s['step']} (next logged {later[:1]})")
    losses = [e["loss"] for e in hist if e["kind"] == "step"]
    check(len(losses) > 4 and min(losses[-3:]) < max(losses[:3]),
          f"the loss went down ({losses[:3]} at the start, {losses[-3:]} at the end)")
    return starts


def new_bed(a, work, procs, token):
    return Bed(a, work, procs, token)


def start_agent(bed, name, gpus, pool="training"):
    """An agent in its own folder, also its working directory: where its workers run (without
    identities a worker runs in the agent's), so each machine's checkpoint is its own."""
    folder = os.path.join(bed.dir, f"agent-{name}")
    os.makedirs(folder, exist_ok=True)
    p = bed.procs.start(f"agent {name}", [bed.aryl, "agent", "--port", str(bed.port), "--token-file", bed.token,
                                          "--name", name, "--gpu-type", "V100", "--gpus", str(gpus), "--pool", pool,
                                          "--work-dir", folder], os.path.join(folder, "agent.log"), cwd=folder)
    bed.agents[name] = p
    return p


def train_command(a, steps, step_time=0.05):
    script = os.path.join(a.source, "examples", "torchrun", "train.py")
    return ["--", PYTHON, "-m", "torch.distributed.run", "--nnodes=1:2", "--nproc_per_node=2", script,
            "--steps", str(steps), "--step-time", str(step_time), "--checkpoint-every", "50"]


def run_start_unix(bed):
    """serve.log's "the run starts" time, Unix seconds: the simulated clock's 0."""
    m = re.search(r"^(\S+)Z \[serve\].*the run starts", read(os.path.join(bed.dir, "serve.log")), re.M)
    if not m:
        return None
    from datetime import datetime, timezone
    return datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=timezone.utc).timestamp()


def decisions(bed, job):
    """(simulated seconds, kind, workers) of the scheduler's start and rescale lines for the job."""
    out = []
    for m in re.finditer(rf"^(\S+) scheduler (start|rescale) job-{job} workers=(\d+)", bed.events(), re.M):
        out.append((float(m.group(1)), m.group(2), int(m.group(3))))
    return out
