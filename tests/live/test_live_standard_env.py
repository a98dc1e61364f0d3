#!/usr/bin/python3
"""A job spanning two machines meets through the standard environment, with no shared path:
each worker gets MASTER_ADDR (the machine of rank 0), MASTER_PORT, RANK, WORLD_SIZE,
LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK and GROUP_WORLD_SIZE, as torch.distributed's env://
and torchrun's workers expect; rank 0 listens on MASTER_ADDR:MASTER_PORT and the other rank
connects to it over TCP. Where python3 can import torch, examples/torchrun/train.py (written
for torchrun: env://, DDP, gloo) trains across the two machines to its end as well.

    test_live_standard_env.py --aryl BUILD/aryl --source SOURCE_DIR [--dir TMP]

On loopback: serve --no-workload with t0 and t1 of 1 GPU each, agents in separate work
folders (t1 registers --address 127.0.0.1, t0 the address serve sees). Every process is
stopped by its pid, also on a failure; no port is left bound.
"""

import os
import re
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from live_harness import check, main, wait_for  # noqa: E402
from serve_bed import Bed  # noqa: E402

MEET = r'''
import os, socket, sys, time
e = os.environ
rank, world = int(e["RANK"]), int(e["WORLD_SIZE"])
addr = (e["MASTER_ADDR"], int(e["MASTER_PORT"]))
print("env", " ".join(f"{k}={e[k]}" for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
      "GROUP_RANK", "GROUP_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")), file=sys.stderr, flush=True)
if rank == 0:
    s = socket.create_server(addr)
    total = rank
    peers = []
    for _ in range(world - 1):
        c, _ = s.accept()
        total += int(c.recv(64))
        peers.append(c)
    for c in peers:
        c.sendall(str(total).encode())
else:
    for _ in range(100):
        try:
            c = socket.create_connection(addr, timeout=5)
            break
        except OSError:
            time.sleep(0.1)
    c.sendall(str(rank).encode())
    total = int(c.recv(64))
print(f"rank {rank} met: sum {total}", file=sys.stderr, flush=True)
'''



def has_torch():
    return subprocess.run(["/usr/bin/python3", "-c", "import torch"], capture_output=True).returncode == 0


def run(a, work, procs):
    bed = Bed(a, work, procs, "live-standard-env-test-token")
    serve = bed.serve(["--no-workload", "--servers", "2", "--set", "cluster.training.gpus_per_server=1",
                       "--set", "cluster.inference.servers=0", "--speedup", "1"])
    if not serve:
        return None
    bed.agent("t0", 1)
    folder = os.path.join(bed.dir, "agent-t1")
    os.makedirs(folder)
    procs.start("agent t1", [bed.aryl, "agent", "--port", str(bed.port), "--token-file", bed.token, "--name", "t1",
                             "--gpu-type", "V100", "--gpus", "1", "--work-dir", folder, "--address", "127.0.0.1"],
                os.path.join(folder, "agent.log"))
    if not bed.run_starts():
        return [bed.port]
    scripts = os.path.join(work, "scripts")
    os.makedirs(scripts)
    for name, text in (("meet.py", MEET),):
        with open(os.path.join(scripts, name), "w") as f:
            f.write(text)

    def logs(job, rank):
        return bed.client("logs", str(job), "--rank", str(rank)).stdout

    job = bed.submit("--name", "meet", "--gpus", "2", "--duration", "5", "--", "/usr/bin/python3",
                     os.path.join(scripts, "meet.py"))
    if not check(isinstance(job, int), f"the two-machine job is taken ({job})"):
        return [bed.port]
    check(wait_for(lambda: all("met: sum 1" in logs(job, r) for r in (0, 1)), 30, "both ranks to meet"),
          "both ranks met at MASTER_ADDR:MASTER_PORT and summed their ranks (0 + 1)")
    envs = [dict(kv.split("=", 1) for kv in (re.search(r"^env (.*)$", logs(job, r), re.M) or [None, ""])[1].split())
            for r in (0, 1)]
    check([e.get("RANK") for e in envs] == ["0", "1"] and all(e.get("WORLD_SIZE") == "2" for e in envs),
          f"RANK and WORLD_SIZE ({envs})")
    check(sorted(e.get("GROUP_RANK") for e in envs) == ["0", "1"]
          and all(e.get("GROUP_WORLD_SIZE") == "2" and e.get("LOCAL_RANK") == "0" and e.get("LOCAL_WORLD_SIZE") == "1"
                  for e in envs), f"one group per machine, one local rank each ({envs})")
    check(len({(e.get("MASTER_ADDR"), e.get("MASTER_PORT")) for e in envs}) == 1
          and envs[0].get("MASTER_ADDR") == "127.0.0.1", f"one MASTER_ADDR:MASTER_PORT for both ({envs})")
    if has_torch():
        example = os.path.join(a.source, "examples", "torchrun", "train.py")
        # Its checkpoint in the test's folder: a worker runs in its agent's working directory.
        ddp = bed.submit("--name", "ddp", "--gpus", "2", "--duration", "30", "--", "/usr/bin/env",
                         "CHECKPOINT_DIR=" + os.path.join(work, "ddp-checkpoint"), "/usr/bin/python3", example,
                         "--steps", "40")
        check(isinstance(ddp, int) and wait_for(lambda: "done step=40" in logs(ddp, 0), 120, "the torchrun example"),
              f"examples/torchrun/train.py trains across the two machines to its end ({logs(ddp, 0)[-300:]!r})")
        out = logs(ddp, 0)
        check("start step=0 world_size=2" in out and "step=40 loss=" in out,
              "it started at step 0 with world size 2 and logged its loss")
    else:
        print("note: /usr/bin/python3 cannot import torch here (scripts/setup_pytorch.sh): the example did not run")
    bed.stop(serve)
    return [bed.port]


if __name__ == "__main__":
    sys.exit(main("live-standard-env", 150, run, ("serve.log", "agent-t0/agent.log", "agent-t1/agent.log")))
