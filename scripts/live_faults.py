#!/usr/bin/python3
"""Enacts a fault plan's crashes on a live testbed, for real.

    live_faults.py --plan PLAN.yaml --dir TESTBED_DIR [--speedup X] [--start-timeout S]

PLAN.yaml is the fault plan of `aryl simulate --faults` (docs/reliability.md); TESTBED_DIR is
scripts/testbed.sh's folder (DIR/pids lists "PID serve" and "PID agent NAME", DIR/serve.log,
DIR/agent-NAME/agent.log). Plan times are simulated seconds from the start of the run (serve's
"the run starts" line), enacted at plan time / speedup of wall time:

    server_crash: NAME [down_for: D]   SIGKILL to the agent of NAME and to each of its workers'
                                       process groups; after D (if given) the agent is started
                                       again with the same command line, environment and
                                       folder, its log appended to
    worker_crash: JOB                  SIGKILL to one worker of JOB (its lowest rank running
                                       on an agent of the testbed); nothing if none runs
    surge: N                           skipped here: `aryl serve --faults` enacts it

A plan entry that cannot be enacted (another key, a server without an agent in DIR/pids) is
refused before anything starts, naming the file, line and kind (exit 2). Every action is logged
on standard output and appended to DIR/faults.log. Agents it starts again are added to DIR/pids
as "PID agent NAME restarted"; it stops them itself (SIGTERM, then SIGKILL after 10 s) once serve
has exited, and on SIGTERM or SIGINT. Debian's /usr/bin/python3 (python3-yaml).
"""

import argparse
import os
import signal
import subprocess
import sys
import time

import yaml

START_LINE = "every agent registered; the run starts"


class PlanError(Exception):
    pass


def read_plan(path, agents):
    """[(at_s, kind, value, down_for_s or None, 'FILE:LINE')], sorted by time."""
    try:
        with open(path) as f:
            root = yaml.compose(f)
    except OSError as e:
        raise PlanError(f"{path}: cannot read: {e.strerror}")
    except yaml.YAMLError as e:
        raise PlanError(f"{path}: not YAML: {e}")
    faults = None
    if isinstance(root, yaml.MappingNode):
        for k, v in root.value:
            if k.value == "faults" and isinstance(v, yaml.SequenceNode):
                faults = v
    if faults is None:
        raise PlanError(f"{path}: expected a map with a `faults:` list")
    plan = []
    for item in faults.value:
        where = f"{path}:{item.start_mark.line + 1}"
        if not isinstance(item, yaml.MappingNode):
            raise PlanError(f"{where}: each fault is a map (at, and one of server_crash, worker_crash, surge)")
        entry = {k.value: (v.value, f"{path}:{k.start_mark.line + 1}") for k, v in item.value}
        at = entry.pop("at", None)
        if at is None:
            raise PlanError(f"{where}: a fault needs `at` (seconds)")
        down = entry.pop("down_for", None)
        for qualifier in ("for", "delay_s", "loss", "slow_s", "fail"):  # of kinds refused below
            entry.pop(qualifier, None)
        kinds = list(entry)
        if len(kinds) != 1:
            raise PlanError(f"{where}: a fault has exactly one of server_crash, worker_crash, surge "
                            f"(got {', '.join(kinds) or 'none'})")
        kind = kinds[0]
        value, key_at = entry[kind]
        try:
            at_s = float(at[0])
            down_s = float(down[0]) if down is not None else None
        except ValueError:
            raise PlanError(f"{where}: at and down_for must be numbers")
        if kind == "server_crash":
            if value not in agents:
                raise PlanError(f"{key_at}: server_crash: no agent '{value}' in the testbed "
                                f"(its agents: {', '.join(sorted(agents)) or 'none'}); cannot be enacted live")
        elif kind == "worker_crash":
            if not str(value).isdigit():
                raise PlanError(f"{key_at}: worker_crash: '{value}' is not a job index")
        elif kind != "surge":
            raise PlanError(f"{key_at}: '{kind}' cannot be enacted live (server_crash, worker_crash; "
                            f"surge is serve's; a bad link: scripts/fault_proxy.py)")
        plan.append((at_s, kind, value, down_s, where))
    plan.sort(key=lambda e: e[0])
    return plan


def read_pids(testbed):
    serve, agents = None, {}
    with open(os.path.join(testbed, "pids")) as f:
        for line in f:
            words = line.split()
            if len(words) >= 2 and words[1] == "serve":
                serve = int(words[0])
            elif len(words) >= 3 and words[1] == "agent":
                agents[words[2]] = int(words[0])
    return serve, agents


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def children(pid):
    """Child processes of pid: an agent's workers."""
    out = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rpartition(")")[2].split()
            if int(fields[1]) == pid:
                out.append(int(entry))
        except (OSError, IndexError, ValueError):
            pass
    return out


def environ(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            pairs = f.read().split(b"\0")
    except OSError:
        return {}
    return dict(p.decode(errors="replace").split("=", 1) for p in pairs if b"=" in p)


def kill_group(pid, sig):
    """A worker runs in a process group of its own: the whole group goes."""
    try:
        pgid = os.getpgid(pid)
        if pgid == pid:
            os.killpg(pgid, sig)
        else:
            os.kill(pid, sig)
    except ProcessLookupError:
        pass


class Testbed:
    def __init__(self, testbed, speedup):
        self.dir, self.speedup = testbed, speedup
        self.serve, self.agents = read_pids(testbed)
        self.commands = {}   # name -> (argv, env, cwd) of its agent, kept before killing it
        self.started = []    # (Popen, name): agents started again here
        self.began = None

    def log(self, text):
        stamp = f"t={time.monotonic() - self.began:.2f} s" if self.began else "before the run"
        line = f"[faults] {stamp}: {text}"
        print(line, flush=True)
        with open(os.path.join(self.dir, "faults.log"), "a") as f:
            f.write(line + "\n")

    def wait_for_start(self, timeout_s):
        log = os.path.join(self.dir, "serve.log")
        until = time.monotonic() + timeout_s
        while time.monotonic() < until:
            try:
                with open(log, errors="replace") as f:
                    if START_LINE in f.read():
                        self.began = time.monotonic()
                        return True
            except OSError:
                pass
            if self.serve is not None and not alive(self.serve):
                return False
            time.sleep(0.05)
        return False

    def crash_server(self, name):
        pid = self.agents[name]
        if not alive(pid):
            self.log(f"server_crash {name}: its agent is not running; nothing to crash")
            return
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = [a.decode() for a in f.read().split(b"\0")[:-1]]
            self.commands[name] = (argv, environ(pid), os.readlink(f"/proc/{pid}/cwd"))
        except OSError as e:
            self.log(f"server_crash {name}: cannot read the agent's command line: {e}")
            return
        workers = children(pid)
        os.kill(pid, signal.SIGKILL)
        for w in workers:
            kill_group(w, signal.SIGKILL)
        self.log(f"server_crash {name}: SIGKILL to agent {pid} and {len(workers)} worker(s) {workers}")

    def restart_server(self, name):
        if name not in self.commands:
            return
        argv, env, cwd = self.commands.pop(name)
        with open(os.path.join(self.dir, f"agent-{name}", "agent.log"), "a") as log:
            p = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stderr=log)
        self.started.append((p, name))
        self.agents[name] = p.pid
        with open(os.path.join(self.dir, "pids"), "a") as f:
            f.write(f"{p.pid} agent {name} restarted\n")
        self.log(f"server_crash {name}: agent started again, pid {p.pid}")

    def crash_worker(self, job):
        found = []
        for name, agent in self.agents.items():
            if not alive(agent):
                continue
            for w in children(agent):
                e = environ(w)
                if e.get("ARYL_JOB_ID") == str(job) and e.get("ARYL_RANK", "").isdigit():
                    found.append((int(e["ARYL_RANK"]), w, name))
        if not found:
            self.log(f"worker_crash {job}: no worker of job {job} runs; nothing to crash")
            return
        rank, pid, name = min(found)
        kill_group(pid, signal.SIGKILL)
        self.log(f"worker_crash {job}: SIGKILL to rank {rank} (pid {pid}) on {name}")

    def stop_started(self):
        for p, _ in self.started:
            if p.poll() is None:
                p.terminate()
        until = time.monotonic() + 10
        for p, name in self.started:
            try:
                p.wait(timeout=max(0.1, until - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            self.log(f"agent {name} (pid {p.pid}) stopped")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--plan", required=True, help="fault plan (YAML)")
    p.add_argument("--dir", required=True, help="the testbed's folder (scripts/testbed.sh --dir)")
    p.add_argument("--speedup", type=float, default=1.0, help="serve's --speedup (simulated s per real s)")
    p.add_argument("--start-timeout", type=float, default=120, help="seconds to wait for the run to start")
    a = p.parse_args()
    if not a.speedup > 0:
        p.error("--speedup must be positive")

    try:
        bed = Testbed(a.dir, a.speedup)
    except OSError as e:
        print(f"live_faults: {a.dir}/pids: cannot read: {e.strerror}", file=sys.stderr)
        return 2
    try:
        plan = read_plan(a.plan, bed.agents)
    except PlanError as e:
        print(f"live_faults: {e}", file=sys.stderr)
        return 2

    stop = []
    for s in (signal.SIGTERM, signal.SIGINT):
        signal.signal(s, lambda *_: stop.append(True))
    try:
        if not bed.wait_for_start(a.start_timeout):
            print(f"live_faults: the run did not start within {a.start_timeout:g} s "
                  f"(no '{START_LINE}' in {a.dir}/serve.log)", file=sys.stderr)
            return 3
        # Restarts are timed events too: (wall s, order, action).
        events = []
        for i, (at, kind, value, down, where) in enumerate(plan):
            events.append((at / a.speedup, i, kind, value, where))
            if kind == "server_crash" and down is not None:
                events.append(((at + down) / a.speedup, i, "server_back", value, where))
        events.sort(key=lambda e: (e[0], e[1]))
        for due, _, kind, value, where in events:
            while not stop and time.monotonic() - bed.began < due:
                if bed.serve is not None and not alive(bed.serve):
                    break
                time.sleep(0.02)
            if stop or (bed.serve is not None and not alive(bed.serve)):
                break
            if kind == "server_crash":
                bed.crash_server(value)
            elif kind == "server_back":
                bed.restart_server(value)
            elif kind == "worker_crash":
                bed.crash_worker(int(value))
            else:
                bed.log(f"{kind} {value} ({where}): enacted by serve")
        while not stop and bed.serve is not None and alive(bed.serve):
            time.sleep(0.1)
    finally:
        bed.stop_started()
    return 0


if __name__ == "__main__":
    sys.exit(main())
