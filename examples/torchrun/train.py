#!/usr/bin/python3
"""A data-parallel training script written for `torchrun`, unchanged under `aryl submit`.

It reads only the standard environment (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK),
which torchrun and aryl's agents both set, and keeps its checkpoint in CHECKPOINT_DIR (default:
./checkpoint in the working directory: under aryl the job's own folder on each machine where jobs
run as their users, else the agent's), resuming from it when it is there. A toy regression on CPU (gloo) or GPU (nccl), the same math
at any world size.

Machines need not share a folder: every machine's LOCAL_RANK 0 saves the (replicated) model, and
at start the ranks agree on the newest step any of them holds (an all_reduce) and its holder
broadcasts the state, so a machine that joins an elastic job with no checkpoint of its own
resumes where the others stopped. That is torch.distributed.elastic's convention: TorchElastic
restarts every worker at each membership change, and the script resumes from its checkpoint.

    aryl submit --gpus 2 -- /usr/bin/python3 /path/to/train.py --steps 200
    aryl submit --min-workers 2 --max-workers 4 -- torchrun --nnodes=1:2 --nproc_per_node=2 /path/to/train.py
    torchrun --redirects 1 --tee 1 --nproc_per_node=2 train.py --steps 200    # README.md
"""

import argparse
import os
import signal
import socket
import sys
import time

try:
    import torch
    import torch.distributed as dist
except ImportError:
    print("train.py: this python3 has no torch (Debian: python3-torch; scripts/setup_pytorch.sh)", file=sys.stderr)
    sys.exit(2)


def newest_state(path, device, rank):
    """The newest checkpoint any rank can read, the same on every rank (None: there is none)."""
    state = torch.load(path, map_location="cpu") if os.path.exists(path) else None
    mine = torch.tensor([state["step"] if state else -1], dtype=torch.long, device=device)
    dist.all_reduce(mine, op=dist.ReduceOp.MAX)
    best = int(mine.item())
    if best < 0:
        return None
    holder = torch.tensor([rank if state and state["step"] == best else 1 << 30], dtype=torch.long, device=device)
    dist.all_reduce(holder, op=dist.ReduceOp.MIN)
    box = [state if rank == int(holder.item()) else None]
    dist.broadcast_object_list(box, src=int(holder.item()))
    return box[0]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--checkpoint-every", type=int, default=20)
    p.add_argument("--step-time", type=float, default=0, help="seconds per step at least (a toy model is fast)")
    a = p.parse_args()

    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo")  # env://
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device(f"cuda:{local_rank}" if cuda else "cpu")
    folder = os.environ.get("CHECKPOINT_DIR") or "checkpoint"
    path = os.path.join(folder, "train.pt")

    torch.manual_seed(0)
    inputs = torch.randn(2048, 16)
    targets = inputs @ torch.randn(16, 1) + 0.1 * torch.randn(2048, 1)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(
        torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)).to(device))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    step = 0
    state = newest_state(path, device, rank)
    if state:
        model.module.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        step = state["step"]
    if rank == 0:
        print(f"start step={step} world_size={world} time={time.time():.3f}", flush=True)

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))

    def save():
        if local_rank != 0:  # one copy per machine
            return
        os.makedirs(folder, exist_ok=True)
        tmp = f"{path}.{socket.gethostname()}.{os.getpid()}.tmp"  # a shared folder is fine too
        torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step}, tmp)
        os.replace(tmp, path)
        if rank == 0:
            print(f"checkpoint step={step} time={time.time():.3f}", flush=True)

    batch = 64 // world
    while step < a.steps:
        began = time.monotonic()
        at = (step * 64 + rank * batch) % len(inputs)
        x, y = inputs[at:at + batch].to(device), targets[at:at + batch].to(device)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        # Every rank stops after the same step: a SIGTERM on any of them travels in this sum.
        flag = torch.tensor([1.0 if stop else 0.0], device=device)
        dist.all_reduce(flag)
        if rank == 0 and step % 10 == 0:
            print(f"step={step} loss={loss.item():.4f} world_size={world} time={time.time():.3f}", flush=True)
        if step % a.checkpoint_every == 0 or flag.item() > 0:
            save()
        if flag.item() > 0:
            # No destroy_process_group(): with a peer already gone it can wait for it.
            sys.stdout.flush()
            os._exit(143)
        if a.step_time > 0:
            time.sleep(max(0.0, a.step_time - (time.monotonic() - began)))
    save()
    if rank == 0:
        print(f"done step={step}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
