#!/usr/bin/python3
"""A seeded, randomized live run on a loopback testbed that kills and restarts things, and checks
that every job runs exactly once and that the outputs agree.

    live_chaos.py --aryl BUILD/aryl [--seeds N] [--first-seed S] [--window SECONDS] [--dir DIR]

Per seed: `aryl serve --state` (speedup 1, --no-workload, two tenants with quotas, metrics on,
no modelled restart overhead),
training agents t0..t2 and inference agent i0 of 2 GPUs each. During the window (30 s by
default) it submits jobs at random times (emulated workers, some elastic, some `/bin/sh` jobs
that cannot checkpoint, each of tenant a or b) and, at random times drawn from the seed, kills
serve with -9 and starts it again on the same --state and port, kills an agent with -9 (its
workers die with it, as with a machine) and starts it again, joins a new machine, drains a server
and resumes it, partitions an agent's link for 1 to 8 s (under the 30 s detection grace: the
agent is reconciled, not lost) through the scripts/fault_proxy.py each of t0..t2 and i0 dials
serve through, and pushes inference demand up and down. A /proc sampler (every 50 ms) checks
throughout that no (job, rank) is alive twice and that no GPU index of an agent is used by two
jobs at once. After the window everything is healed, the jobs are waited for, serve is stopped
(SIGTERM), and the outputs are checked: every job ended once and done, in jobs.csv, `status
--all`, summary.json and /metrics alike; events.log finishes each job once and holds no line
twice.

Prints one line per seed (faults survived, checks failed) and exits 1 if any check failed.
Every process it starts is stopped by its pid on every way out; nothing is left bound.
"""

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def wait_for(pred, timeout_s):
    until = time.monotonic() + timeout_s
    while time.monotonic() < until:
        if pred():
            return True
        time.sleep(0.05)
    return False


def environ(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
    except OSError:
        return None


def parent(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


class Sampler(threading.Thread):
    """Workers of one seed's testbed from /proc every 50 ms: a (job, rank) alive in two
    processes, or a GPU of one agent held by two jobs, is a violation."""

    def __init__(self, work, agent_pids):
        super().__init__(daemon=True)
        self.work = work.encode()
        self.agent_pids = agent_pids  # pid -> agent name, kept current by the run
        self.stop = threading.Event()
        self.violations = []
        self.samples = 0

    def sample(self):
        ranks, gpus = {}, {}
        for pid in filter(str.isdigit, os.listdir("/proc")):
            env = environ(pid)
            if not env or b"ARYL_JOB_ID" not in env or self.work not in env.get(b"ARYL_CHECKPOINT_DIR", b""):
                continue
            job, rank = int(env[b"ARYL_JOB_ID"]), int(env.get(b"ARYL_RANK", b"-1"))
            ranks.setdefault((job, rank), []).append(int(pid))
            agent = self.agent_pids.get(parent(int(pid)))
            if agent is None:
                continue  # a shell job's child, or a worker whose agent just died
            for g in env.get(b"CUDA_VISIBLE_DEVICES", b"").split(b","):
                if g:
                    gpus.setdefault((agent, int(g)), set()).add(job)
        for key, pids in ranks.items():
            # A `/bin/sh` job's own children carry its environment too: count processes whose
            # parent is not a worker of the same rank. One whose parent cannot be read has ended
            # since it was listed (a shell's child at the job's end): it is not alive.
            parents = {p: parent(p) for p in pids}
            tops = [p for p, pp in parents.items() if pp is not None and pp not in pids]
            if len(tops) > 1:
                self.violations.append(f"job {key[0]} rank {key[1]} alive twice: pids {sorted(tops)}")
        for (agent, g), jobs in gpus.items():
            if len(jobs) > 1:
                self.violations.append(f"{agent} GPU {g} used by jobs {sorted(jobs)} at once")
        self.samples += 1

    def run(self):
        while not self.stop.is_set():
            self.sample()
            time.sleep(0.05)


class Bed:
    """One seed's testbed; every process is started here and stopped by pid."""

    def __init__(self, aryl, work, window, rng):
        self.aryl, self.work, self.window, self.rng = aryl, work, window, rng
        self.procs = []  # (name, Popen)
        self.agents = {}  # name -> Popen
        self.agent_pids = {}
        self.serve = None
        self.port = 0
        self.metrics_port = 0
        self.token = os.path.join(work, "token")
        with open(os.open(self.token, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write("live-chaos-token-%d\n" % rng.randrange(10**9))
        self.out = os.path.join(work, "out")
        self.serve_starts = 0
        self.proxies = {}  # agent name -> (Popen, port), started once serve's port is known

    def start(self, name, argv, log, stdin=None):
        with open(log, "a") as f:
            p = subprocess.Popen(argv, stdout=f, stderr=f, stdin=stdin, start_new_session=True, text=stdin is not None)
        self.procs.append((name, p))
        return p

    def proxy_port(self, name):
        """The port of the fault proxy between agent `name` and serve (serve keeps its port
        across restarts, so one proxy serves every run of both)."""
        if name not in self.proxies:
            port_file = os.path.join(self.work, f"proxy-{name}.port")
            p = self.start(f"proxy {name}", [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                          "fault_proxy.py"),
                                             "--target", f"127.0.0.1:{self.port}", "--port-file", port_file],
                           os.path.join(self.work, f"proxy-{name}.log"), stdin=subprocess.PIPE)
            if not wait_for(lambda: read(port_file).strip() or p.poll() is not None, 20) or p.poll() is not None:
                raise RuntimeError(f"the fault proxy of {name} did not listen")
            self.proxies[name] = (p, int(read(port_file)))
        return self.proxies[name][1]

    def partition(self, name, seconds):
        p = self.proxies[name][0]
        p.stdin.write(f"partition {seconds:.2f}\n")
        p.stdin.flush()

    def start_serve(self):
        port_file = os.path.join(self.work, "port")
        if os.path.exists(port_file):
            os.remove(port_file)
        self.serve_starts += 1
        argv = [self.aryl, "serve", "--token-file", self.token, "--port", str(self.port), "--port-file", port_file,
                "--work-dir", os.path.join(self.work, "serve-work"), "--state", os.path.join(self.work, "state.db"),
                "--no-workload", "--servers", "3", "--set", "cluster.training.gpus_per_server=2",
                "--set", "cluster.inference.servers=1", "--set", "cluster.inference.gpus_per_server=2",
                "--set", "tenants.a.quota=2", "--set", "tenants.b.quota=2", "--speedup", "1", "--out", self.out,
                # A relaunch's modelled start-up (60 s by default) would only lengthen each seed.
                "--set", "jobs.restart_overhead_s=0", "--set", "jobs.scale_overhead_s=0",
                "--stop-grace", "2", "--agent-wait", "60", "--metrics-port", str(self.metrics_port),
                "--metrics-port-file", os.path.join(self.work, "metrics-port")]
        self.serve = self.start("serve", argv, os.path.join(self.work, "serve.log"))
        if not wait_for(lambda: read(port_file).strip() or self.serve.poll() is not None, 30) or self.serve.poll():
            raise RuntimeError(f"serve did not listen (start {self.serve_starts})")
        self.port = int(read(port_file))
        self.metrics_port = int(read(os.path.join(self.work, "metrics-port")) or 0)

    def start_agent(self, name, pool="training", gpu_type="V100", proxied=True):
        folder = os.path.join(self.work, f"agent-{name}")
        os.makedirs(folder, exist_ok=True)
        port = self.proxy_port(name) if proxied else self.port
        p = self.start(f"agent {name}", [self.aryl, "agent", "--port", str(port), "--token-file", self.token,
                                         "--name", name, "--gpu-type", gpu_type, "--gpus", "2", "--pool", pool,
                                         "--work-dir", folder], os.path.join(folder, "agent.log"))
        self.agents[name] = p
        self.agent_pids[p.pid] = name

    def kill(self, p):
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)  # the agent's workers are in their own groups: PDEATHSIG
            p.wait()

    def client(self, *args, timeout=20):
        return subprocess.run([self.aryl, *args, "--port", str(self.port), "--token-file", self.token],
                              capture_output=True, text=True, timeout=timeout)

    def stop_all(self):
        for _, p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        until = time.monotonic() + 12
        for _, p in self.procs:
            try:
                p.wait(timeout=max(0.1, until - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def submit(bed, job, script):
    argv = [bed.aryl, "submit", "--port", str(bed.port), "--token-file", bed.token, "--name", job["name"],
            "--gpus", str(job["gpus"]), "--duration", str(job["duration"]), "--tenant", job["tenant"]]
    if job["elastic"]:
        argv += ["--min-workers", "1", "--max-workers", str(job["gpus"] * 2)]
    if job["shell"]:
        argv += ["--", "/bin/sh", script, str(job["duration"])]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    return int(r.stdout) if r.returncode == 0 and r.stdout.strip().isdigit() else r.stderr.strip()


def one_seed(aryl, seed, root, window):
    rng = random.Random(seed)
    work = os.path.join(root, f"seed-{seed}")
    os.makedirs(work)
    script = os.path.join(work, "job.sh")
    with open(script, "w") as f:
        f.write('sleep "$1"\n')
    bed = Bed(aryl, work, window, rng)
    problems, faults = [], []
    sampler = Sampler(work, bed.agent_pids)
    try:
        bed.start_serve()
        for name in ("t0", "t1", "t2"):
            bed.start_agent(name)
        bed.start_agent("i0", "inference", "T4")
        if not wait_for(lambda: "the run starts" in read(os.path.join(work, "serve.log")), 60):
            return ["the run did not start"], faults
        sampler.start()
        # The plan: submits and faults at seeded times in the window.
        jobs = [{"name": f"j{i}", "gpus": rng.choice([1, 1, 2]), "duration": rng.randint(3, 8),
                 "elastic": rng.random() < 0.4, "shell": rng.random() < 0.25, "tenant": rng.choice("ab"),
                 "at": rng.uniform(0, window * 0.7)} for i in range(rng.randint(6, 10))]
        plan = [(j["at"], "submit", j) for j in jobs]
        plan += [(rng.uniform(0.2, 0.8) * window, "serve_crash", rng.uniform(0.5, 3))]
        if rng.random() < 0.5:
            plan += [(rng.uniform(0.3, 0.9) * window, "serve_crash", rng.uniform(0.5, 3))]
        for _ in range(rng.randint(1, 2)):
            plan += [(rng.uniform(0.1, 0.9) * window, "agent_crash", (rng.choice(["t0", "t1", "t2"]),
                                                                      rng.uniform(1, 5)))]
        plan += [(rng.uniform(0.1, 0.6) * window, "join", "x1")]
        plan += [(rng.uniform(0.1, 0.7) * window, "drain", (rng.choice(["t0", "t1", "t2"]), rng.uniform(2, 6)))]
        plan += [(rng.uniform(0, 0.5) * window, "demand", 1), (rng.uniform(0.5, 0.9) * window, "demand", 0)]
        for _ in range(rng.randint(1, 2)):
            plan += [(rng.uniform(0.1, 0.9) * window, "partition", (rng.choice(["t0", "t1", "t2", "i0"]),
                                                                    rng.uniform(1, 8)))]
        plan.sort(key=lambda e: (e[0], e[1]))
        later = []  # (time, action) of restarts and resumes
        ids = {}
        start = time.monotonic()

        def due(t):
            left = start + t - time.monotonic()
            if left > 0:
                time.sleep(left)

        def heal_due(now):
            for entry in sorted(later):
                if entry[0] <= now:
                    later.remove(entry)
                    entry[1]()

        for t, kind, arg in plan:
            while later and min(later)[0] <= t:
                nt = min(later)[0]
                due(nt)
                heal_due(nt)
            due(t)
            if kind == "submit":
                got = "serve was down"
                until = time.monotonic() + 60
                while time.monotonic() < until:  # serve may be down: a client retries, as an operator would
                    heal_due(time.monotonic() - start)
                    if bed.serve.poll() is None:
                        got = submit(bed, arg, script)
                        if isinstance(got, int):
                            break
                    time.sleep(0.25)
                if isinstance(got, int):
                    ids[got] = arg
                else:
                    problems.append(f"{arg['name']} was never taken: {got}")
            elif kind == "serve_crash" and bed.serve.poll() is None:
                bed.kill(bed.serve)
                faults.append("serve killed")
                later.append((t + arg, lambda: bed.start_serve()))
            elif kind == "agent_crash" and bed.agents[arg[0]].poll() is None:
                bed.kill(bed.agents[arg[0]])
                faults.append(f"agent {arg[0]} killed")
                later.append((t + arg[1], lambda n=arg[0]: bed.start_agent(n)))
            elif kind == "partition":
                bed.partition(*arg)
                faults.append(f"{arg[0]} partitioned {arg[1]:.1f} s")
            elif kind == "join":
                bed.start_agent(arg, proxied=False)
                faults.append(f"{arg} joined")
            elif kind == "drain":
                if bed.client("drain", arg[0], "--reason", "chaos").returncode == 0:
                    faults.append(f"{arg[0]} drained")
                    later.append((t + arg[1], lambda n=arg[0]: bed.client("resume", n)))
            elif kind == "demand":
                if bed.client("demand", str(arg)).returncode == 0:
                    faults.append(f"demand {arg}")
        for nt, action in sorted(later):
            due(nt)
            action()
        later.clear()
        # Healed: every agent up, demand 0 (the last plan entry), every server resumed.
        for name in ("t0", "t1", "t2"):
            bed.client("resume", name)
        bed.client("demand", "0")

        def all_ended():
            r = bed.client("status", "--all", "--json")
            if r.returncode != 0:
                return False
            s = json.loads(r.stdout)
            return not any(j.get("state") in ("queued", "running") for j in s.get("jobs", []))

        if not wait_for(all_ended, 180):
            problems.append("jobs did not all end within 180 s of the window")
        status = json.loads(bed.client("status", "--all", "--json").stdout or "{}")
        metrics = ""
        try:
            metrics = urllib.request.urlopen(f"http://127.0.0.1:{bed.metrics_port}/metrics", timeout=5).read().decode()
        except OSError as e:
            problems.append(f"/metrics did not answer: {e}")
        bed.serve.terminate()
        try:
            rc = bed.serve.wait(timeout=60)
            if rc != 0:
                problems.append(f"serve exited {rc} when stopped")
        except subprocess.TimeoutExpired:
            problems.append("serve did not stop within 60 s of SIGTERM")
        sampler.stop.set()
        sampler.join()
        problems += sorted(set(sampler.violations))[:10]
        problems += check_outputs(bed.out, ids, status, metrics)
    except Exception as e:  # noqa: BLE001 (a seed's failure is reported, not raised)
        problems.append(f"the run failed: {e}")
    finally:
        sampler.stop.set()
        bed.stop_all()
    return problems, faults


def check_outputs(out, ids, status, metrics):
    problems = []
    lines = read(os.path.join(out, "jobs.csv")).splitlines()
    head = lines[0].split(",") if lines else []
    rows = [dict(zip(head, line.split(","))) for line in lines[1:]]
    seen = {}
    for r in rows:
        seen.setdefault(int(r["job"]), []).append(r.get("outcome"))
    for job in ids:
        if seen.get(job) != ["done"]:
            problems.append(f"jobs.csv: job {job} ended {seen.get(job)}, not once done")
    extra = set(seen) - set(ids)
    if extra:
        problems.append(f"jobs.csv: jobs nobody submitted: {sorted(extra)}")
    ended = {}
    for j in status.get("jobs", []):
        ended.setdefault(j.get("job_id"), []).append(j.get("state"))
    for job in ids:
        if ended.get(job) != ["done"]:
            problems.append(f"status --all: job {job} is {ended.get(job)}, not once done")
    summary = json.loads(read(os.path.join(out, "summary.json")) or "{}")
    if summary.get("jobs_completed") != len(ids):
        problems.append(f"summary.json: jobs_completed {summary.get('jobs_completed')} for {len(ids)} jobs done")
    m = re.search(r'^aryl_jobs_finished_total\{outcome="done"\} (\S+)$', metrics, re.M)
    if not m or float(m.group(1)) != len(ids):
        problems.append(f"/metrics: jobs finished done {m.group(1) if m else None} for {len(ids)} jobs done")
    events = read(os.path.join(out, "events.log")).splitlines()
    for job in ids:
        n = sum(1 for e in events if re.search(rf" finish job-{job}( |$)", e))
        if n != 1:
            problems.append(f"events.log: job {job} finishes {n} times")
    dup = len(events) - len(set(events))
    if dup:
        problems.append(f"events.log: {dup} lines twice")
    return problems


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--aryl", required=True)
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--first-seed", type=int, default=1)
    p.add_argument("--window", type=float, default=30)
    p.add_argument("--dir", help="work folder (default: a temporary one, removed when every seed passes)")
    a = p.parse_args()
    aryl = os.path.abspath(a.aryl)
    root = os.path.abspath(a.dir) if a.dir else tempfile.mkdtemp(prefix="aryl-chaos-")
    if a.dir:
        shutil.rmtree(root, ignore_errors=True)
        os.makedirs(root)
    failed, faults_total = 0, 0
    for seed in range(a.first_seed, a.first_seed + a.seeds):
        t0 = time.monotonic()
        problems, faults = one_seed(aryl, seed, root, a.window)
        faults_total += len(faults)
        status = "ok  " if not problems else "FAIL"
        print(f"{status} seed {seed}: {len(faults)} faults ({', '.join(faults)}) in {time.monotonic() - t0:.0f} s",
              flush=True)
        for pr in problems:
            print(f"       {pr}", flush=True)
        failed += bool(problems)
    print(f"{a.seeds - failed} of {a.seeds} seeds passed, {faults_total} faults in all; work in {root}", flush=True)
    if not failed and not a.dir:
        shutil.rmtree(root, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
