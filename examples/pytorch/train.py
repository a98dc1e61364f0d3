#!/usr/bin/python3
"""A real data-parallel PyTorch training worker for `aryl serve` (CPU, torch.distributed + gloo).

One process per rank, started by an aryl agent when `live.worker_command` names this script:

    aryl serve ... --set "live.worker_command=/usr/bin/python3 /abs/path/examples/pytorch/train.py"

What it trains: a 2-layer MLP (16 -> 32 -> 1, tanh) regressing a fixed random "teacher" MLP on a
synthetic dataset of 2048 points, all generated from a fixed seed, with SGD and momentum. Each
step takes a global batch of 64 points (a seeded permutation per step, so which points a step
uses depends on the step number only); rank r takes points r, r+W, r+2W, ... of it, and the
gradients are summed with one all_reduce (gloo) and divided by the global batch size. The math is
therefore that of one process whatever the world size W is (up to float rounding), which is what
lets a job rescale between launches.

Length and pace: the job has ceil(ARYL_WORK_S / WORK_PER_STEP) steps (WORK_PER_STEP = 1
work-second by default, `--work-per-step`), at least 1. Each step is paced to last
WORK_PER_STEP / ARYL_RATE real seconds, so the job progresses as fast as the scheduler's model
expects; a step that computes longer is not made up for. ARYL_STARTUP_S (optional) is the
restart cost the model charges: the worker waits until that many seconds since it started
before its first step (its own start-up, mostly importing torch, counts).

Output (stdout, rank 0 only, flushed):
    start job=<id> world_size=<W> total_steps=<n> resumed_step=<k>
    step=<n> loss=<x> world_size=<W>                  first step of a launch, every --log-every, last
    ARYL_PROGRESS work_done=<n*work_s/total> step=<n>   every --progress-every steps, first and last
    checkpoint step=<n> reason=periodic|sigterm|done
loss is the mean squared error on the whole training set after that step.

Checkpoint: $ARYL_CHECKPOINT_DIR/torch.ckpt (model, optimizer state, step, loss history as
[step, loss, world_size] triples); rank 0 writes it atomically (temporary file, os.replace)
every --checkpoint-every steps, on SIGTERM and at the end. Every rank resumes from it.

Stopping: SIGTERM sets a flag. The flag travels in the step's all_reduce (with the gradients),
so every rank sees the same reduced flag after the same step: they all stop there, rank 0 saves,
and all exit 143. A rank that SIGTERM killed before its handler was installed closes its gloo
connections; the others' collective then fails, and a rank that got SIGTERM too (it waits up to 2
s for it) exits 143 instead of failing; rank 0 then saves the last completed step first.

Exit codes: 0 all steps done (final checkpoint written); 143 stopped by SIGTERM; 2 bad or
missing environment variable (one line on stderr naming it) or torch not importable; 1 any
other failure (e.g. a collective failing without SIGTERM).
"""

import argparse
import math
import os
import signal
import sys
import time

STARTED = time.monotonic()
CHECKPOINT_NAME = "torch.ckpt"
SEED = 20240601
FEATURES, HIDDEN, SAMPLES, GLOBAL_BATCH = 16, 32, 2048, 64

stop_requested = False


def on_sigterm(signum, frame):
    global stop_requested
    stop_requested = True


def fail_env(name, problem):
    print(f"{name}: {problem}", file=sys.stderr, flush=True)
    sys.exit(2)


def env_str(name, required=True):
    value = os.environ.get(name, "")
    if required and value == "":
        fail_env(name, "missing")
    return value


def env_int(name, minimum=0):
    text = env_str(name)
    try:
        value = int(text, 10)
    except ValueError:
        fail_env(name, f"'{text}' is not an integer")
    if value < minimum:
        fail_env(name, f"'{text}' is below {minimum}")
    return value


def env_float(name, positive, required=True):
    text = env_str(name, required)
    if text == "":
        return 0.0
    try:
        value = float(text)
    except ValueError:
        fail_env(name, f"'{text}' is not a number")
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        fail_env(name, f"'{text}' is not a {'positive' if positive else 'non-negative'} number")
    return value


def read_environment():
    e = argparse.Namespace()
    e.job_id = env_int("ARYL_JOB_ID")
    e.rank = env_int("ARYL_RANK")
    e.world_size = env_int("ARYL_WORLD_SIZE", minimum=1)
    if e.rank >= e.world_size:
        fail_env("ARYL_RANK", f"'{e.rank}' is not below ARYL_WORLD_SIZE {e.world_size}")
    e.checkpoint_dir = env_str("ARYL_CHECKPOINT_DIR")
    e.rendezvous = env_str("ARYL_RENDEZVOUS")
    if "://" not in e.rendezvous:
        fail_env("ARYL_RENDEZVOUS", f"'{e.rendezvous}' is not a URL (file:///... or tcp://host:port)")
    e.work_s = env_float("ARYL_WORK_S", positive=False)
    e.rate = env_float("ARYL_RATE", positive=True)
    e.startup_s = env_float("ARYL_STARTUP_S", positive=False, required=False)
    e.job_name = os.environ.get("ARYL_JOB_NAME", "")
    return e


def parse_args():
    p = argparse.ArgumentParser(description="aryl's PyTorch example worker (see the module docstring)")
    p.add_argument("--work-per-step", type=float, default=1.0, help="work-seconds per step (default 1)")
    p.add_argument("--checkpoint-every", type=int, default=20, help="steps between checkpoints (default 20)")
    p.add_argument("--log-every", type=int, default=10, help="steps between loss lines (default 10)")
    p.add_argument("--progress-every", type=int, default=5, help="steps between progress lines (default 5)")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--timeout-s", type=float, default=120, help="gloo rendezvous/collective timeout")
    a = p.parse_args()
    if not (a.work_per_step > 0 and math.isfinite(a.work_per_step)):
        p.error("--work-per-step must be a positive number")
    for name in ("checkpoint_every", "log_every", "progress_every"):
        if getattr(a, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    return a


def say(text):
    print(text, flush=True)


def main():
    args = parse_args()
    env = read_environment()
    try:
        import torch
        import torch.distributed as dist
    except Exception as exc:  # ImportError, or a broken installation's OSError
        print(f"torch is not importable by {sys.executable}: {exc} (scripts/setup_pytorch.sh installs it)",
              file=sys.stderr, flush=True)
        return 2
    from datetime import timedelta

    torch.set_num_threads(1)  # one process per rank; many ranks share a CPU
    lead = env.rank == 0
    total_steps = max(1, math.ceil(env.work_s / args.work_per_step))
    step_work = env.work_s / total_steps
    step_period = args.work_per_step / env.rate

    # The data and the initial model depend on the seed only.
    g = torch.Generator().manual_seed(SEED)
    teacher = [torch.randn(FEATURES, HIDDEN, generator=g), torch.randn(HIDDEN, 1, generator=g) / HIDDEN ** 0.5]
    inputs = torch.randn(SAMPLES, FEATURES, generator=g)
    targets = torch.tanh(inputs @ teacher[0]) @ teacher[1] + 0.01 * torch.randn(SAMPLES, 1, generator=g)
    torch.manual_seed(SEED + 1)
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, HIDDEN), torch.nn.Tanh(), torch.nn.Linear(HIDDEN, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    params = [p for p in model.parameters()]

    path = os.path.join(env.checkpoint_dir, CHECKPOINT_NAME)
    step, history = 0, []
    if os.path.exists(path):
        state = torch.load(path)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        step, history = int(state["step"]), list(state["history"])
    resumed_step = step

    def full_loss():
        with torch.no_grad():
            return torch.nn.functional.mse_loss(model(inputs), targets).item()

    def save(reason):
        tmp = f"{path}.tmp.{os.getpid()}"
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step,
                    "history": history, "world_size": env.world_size}, tmp)
        os.replace(tmp, path)
        say(f"checkpoint step={step} reason={reason}")

    # Until the loop starts, SIGTERM keeps its default action (the process ends at once): a rank
    # blocked in the rendezvous cannot run a Python handler.
    dist.init_process_group("gloo", init_method=env.rendezvous, rank=env.rank, world_size=env.world_size,
                            timeout=timedelta(seconds=args.timeout_s))
    signal.signal(signal.SIGTERM, on_sigterm)
    if lead:
        say(f"start job={env.job_id} world_size={env.world_size} total_steps={total_steps} "
            f"resumed_step={resumed_step}")

    def stop_now(saved_state_is_current):
        if lead:
            if saved_state_is_current:
                save("sigterm")
            say(f"stopped at step={step} on SIGTERM")
        os._exit(143)  # no further collective, no process-group teardown that could wait

    # The restart cost the model charges, less what starting up already took.
    while not stop_requested and time.monotonic() - STARTED < env.startup_s:
        time.sleep(min(0.1, env.startup_s - (time.monotonic() - STARTED)))
    if stop_requested:
        stop_now(True)

    n_params = sum(p.numel() for p in params)
    launch_start, launch_steps = time.monotonic(), 0
    while step < total_steps:
        order = torch.randperm(SAMPLES, generator=torch.Generator().manual_seed(SEED + 2 + step))
        batch = order[:GLOBAL_BATCH][env.rank::env.world_size]
        optimizer.zero_grad()
        loss_sum = torch.nn.functional.mse_loss(model(inputs[batch]), targets[batch], reduction="sum")
        loss_sum.backward()
        # Gradients (still summed over this rank's points), then the stop flag, in one all_reduce.
        flat = torch.cat([p.grad.reshape(-1) for p in params] + [torch.tensor([1.0 if stop_requested else 0.0])])
        try:
            dist.all_reduce(flat, op=dist.ReduceOp.SUM)
        except RuntimeError as exc:
            deadline = time.monotonic() + 2
            while not stop_requested and time.monotonic() < deadline:
                time.sleep(0.05)
            if stop_requested:
                stop_now(True)  # the model still holds the last completed step
            print(f"rank {env.rank}: all_reduce failed at step {step + 1}: {exc}", file=sys.stderr, flush=True)
            os._exit(1)
        offset = 0
        for p in params:
            p.grad.copy_(flat[offset:offset + p.numel()].view_as(p.grad) / GLOBAL_BATCH)
            offset += p.numel()
        optimizer.step()
        step += 1
        launch_steps += 1
        last = step == total_steps
        stopping = flat[n_params].item() > 0 and not last  # done anyway: exit 0
        if lead:
            if launch_steps == 1 or step % args.log_every == 0 or last or stopping:
                loss = full_loss()
                history.append([step, loss, env.world_size])
                say(f"step={step} loss={loss:.6f} world_size={env.world_size}")
            if launch_steps == 1 or step % args.progress_every == 0 or last:
                say(f"ARYL_PROGRESS work_done={step * step_work:.6f} step={step}")
            if last:
                save("done")
            elif stopping:
                save("sigterm")
            elif step % args.checkpoint_every == 0:
                save("periodic")
        if stopping:
            stop_now(False)
        if last:
            break
        # Pace: this launch's k-th step ends no earlier than k step periods after the launch began.
        while not stop_requested:
            left = launch_start + launch_steps * step_period - time.monotonic()
            if left <= 0:
                break
            time.sleep(min(left, 0.1))
    if step >= total_steps and resumed_step >= total_steps and lead:
        say(f"ARYL_PROGRESS work_done={env.work_s:.6f} step={step}")
    sys.stdout.flush()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
