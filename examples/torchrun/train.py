#!/usr/bin/python3
"""A data-parallel training script written for `torchrun`, unchanged under `aryl submit`.

It reads only the standard environment (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK),
which torchrun and aryl's agents both set, and keeps its checkpoint where CHECKPOINT_DIR says
(default: ARYL_CHECKPOINT_DIR, the folder aryl gives each job; else ./checkpoint), resuming from
it when it is there. A toy regression on CPU (gloo) or GPU (nccl), the same math at any world size.

    aryl submit --gpus 2 -- /usr/bin/python3 /path/to/train.py --steps 200
    torchrun --nproc_per_node=2 train.py --steps 200      # where torchrun works (README.md)
"""

import argparse
import os
import signal
import sys

try:
    import torch
    import torch.distributed as dist
except ImportError:
    print("train.py: this python3 has no torch (Debian: python3-torch; scripts/setup_pytorch.sh)", file=sys.stderr)
    sys.exit(2)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--checkpoint-every", type=int, default=20)
    a = p.parse_args()

    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo")  # env://
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}" if cuda else "cpu")
    folder = os.environ.get("CHECKPOINT_DIR") or os.environ.get("ARYL_CHECKPOINT_DIR") or "checkpoint"
    path = os.path.join(folder, "train.pt")

    torch.manual_seed(0)
    inputs = torch.randn(2048, 16)
    targets = inputs @ torch.randn(16, 1) + 0.1 * torch.randn(2048, 1)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(
        torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)).to(device))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    step = 0
    if os.path.exists(path):
        state = torch.load(path, map_location=device)
        model.module.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        step = state["step"]
    if rank == 0:
        print(f"start step={step} world_size={world}", flush=True)

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))

    def save():
        if rank != 0:
            return
        os.makedirs(folder, exist_ok=True)
        torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step}, path + ".tmp")
        os.replace(path + ".tmp", path)

    batch = 64 // world
    while step < a.steps:
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
            print(f"step={step} loss={loss.item():.4f} world_size={world}", flush=True)
        if step % a.checkpoint_every == 0 or flag.item() > 0:
            save()
        if flag.item() > 0:
            dist.destroy_process_group()
            sys.exit(143)
    save()
    if rank == 0:
        print(f"done step={step}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
