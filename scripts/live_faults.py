#!/usr/bin/python3
"""Enacts a fault plan on a live testbed, for real.

    live_faults.py --plan PLAN.yaml --dir TESTBED_DIR [--speedup X] [--start-timeout S]

PLAN.yaml is the fault plan of `aryl simulate --faults` (docs/faults.md); TESTBED_DIR is
scripts/testbed.sh's folder (DIR/pids lists "PID testbed", "PID serve", "PID agent NAME" and
"PID proxy NAME", DIR/serve.log, DIR/agent-NAME/agent.log, DIR/agent-NAME/proxy.ctl). It reads
DIR/pids when it starts: start it once the testbed has started its agents, before the run
starts. Plan times are simulated seconds from the start of the run (serve's "the run starts"
line), enacted at plan time / speedup of wall time (every duration below too):

    server_crash: NAME [down_for: D]   SIGKILL to the agent of NAME and to each of its workers'
                                       process groups; after D (if given) the agent is started
                                       again with the same command line, environment and
                                       folder, its log appended to
    worker_crash: JOB                  SIGKILL to one worker of JOB (its lowest rank running
                                       on an agent of the testbed); nothing if none runs
    disconnect: NAME, for: X           NAME's fault proxy forwards nothing for X (`partition`):
                                       the agent is unreachable, its machine and workers run on
    link: NAME, for: X, delay_s: D,    for X, NAME's fault proxy forwards every chunk D late,
          loss: P                      both ways, and drops each heartbeat frame of the agent
                                       with probability P, from a random stream seeded with
                                       the entry's server and time (reproducible); then
                                       delay 0, loss 0
    scheduler_crash: true, down_for: D SIGKILL to serve, which scripts/testbed.sh starts again
                                       after D with the same arguments on the same port (it
                                       waits for that serve and exits with its code); serve
                                       must run with --state FILE, its journal
    surge: N                           skipped here: `aryl serve --faults` enacts it

A plan entry that cannot be enacted (another key, `checkpoint`, a server without an agent in
DIR/pids, a network fault on an agent without a proxy, a scheduler_crash without `--state` or
without scripts/testbed.sh to restart serve) is refused before anything starts, naming the
file, line and kind (exit 2). Faults that overlap on one server are enacted as given (simulate
ignores the later one). Every action is logged on standard output and appended to
DIR/faults.log. Agents it starts again are added to DIR/pids as "PID agent NAME restarted"; it
stops them itself (SIGTERM, then SIGKILL after 10 s) once serve has exited for good (a serve the
testbed restarts is followed by its new pid, "PID serve restarted"), and on SIGTERM or SIGINT.
Debian's /usr/bin/python3 (python3-yaml).
"""

import argparse
import math
import os
import signal
import stat
import subprocess
import sys
import time
import zlib

import yaml

START_LINE = "every agent registered; the run starts"
KINDS = "server_crash, worker_crash, surge, disconnect, link, scheduler_crash"
QUALIFIERS = ("down_for", "for", "delay_s", "loss", "slow_s", "fail")
NETWORK = ("disconnect", "link")  # enacted by the agent's fault proxy
RESTART_GRACE_S = 10  # past a scheduler_crash's down time, how long the testbed may take to list the new serve


class PlanError(Exception):
    pass


class Fault:
    """One plan entry: `at` (simulated s), its kind and value, its qualifiers as numbers."""

    def __init__(self, at, kind, value, numbers, where, key_at):
        self.at, self.kind, self.value, self.where, self.key_at = at, kind, value, where, key_at
        self.down_for = numbers.get("down_for")
        self.for_s = numbers.get("for")
        self.delay_s = numbers.get("delay_s", 0.0)
        self.loss = numbers.get("loss", 0.0)


def refuse_repeated_keys(path, node):
    """A key given twice in a map is an error, as in aryl's own reader (a dict keeps the last)."""
    if isinstance(node, yaml.MappingNode):
        first = {}
        for k, v in node.value:
            line = k.start_mark.line + 1
            if isinstance(k, yaml.ScalarNode):
                if k.value in first:
                    raise PlanError(f"{path}:{line}: duplicate key '{k.value}' (first given on line {first[k.value]})")
                first[k.value] = line
            refuse_repeated_keys(path, v)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            refuse_repeated_keys(path, item)


def read_plan(path, bed):
    """[Fault], sorted by time; PlanError for an entry `bed` (a Testbed) cannot enact."""
    try:
        with open(path) as f:
            root = yaml.compose(f)
    except OSError as e:
        raise PlanError(f"{path}: cannot read: {e.strerror}")
    except yaml.YAMLError as e:
        raise PlanError(f"{path}: not YAML: {e}")
    refuse_repeated_keys(path, root)
    faults = None
    if isinstance(root, yaml.MappingNode):
        for k, v in root.value:
            if k.value == "faults" and isinstance(v, yaml.SequenceNode):
                faults = v
    if faults is None:
        raise PlanError(f"{path}: expected a map with a `faults:` list")
    for k, _ in root.value:
        if k.value != "faults":
            raise PlanError(f"{path}:{k.start_mark.line + 1}: unknown top-level key '{k.value}' "
                            "(a plan holds only `faults:`)")
    plan = []
    for item in faults.value:
        where = f"{path}:{item.start_mark.line + 1}"
        if not isinstance(item, yaml.MappingNode):
            raise PlanError(f"{where}: each fault is a map (at, and one of {KINDS})")
        if any(not isinstance(v, yaml.ScalarNode) for _, v in item.value):
            raise PlanError(f"{where}: each key of a fault takes a single value")
        entry = {k.value: (v.value, f"{path}:{k.start_mark.line + 1}") for k, v in item.value}
        at = entry.pop("at", None)
        if at is None:
            raise PlanError(f"{where}: a fault needs `at` (seconds)")
        qualifiers = {q: entry.pop(q) for q in QUALIFIERS if q in entry}
        kinds = list(entry)
        if len(kinds) != 1:
            raise PlanError(f"{where}: a fault has exactly one of {KINDS} (got {', '.join(kinds) or 'none'})")
        kind = kinds[0]
        value, key_at = entry[kind]
        numbers = {}
        timed = {"at": at, **{q: v for q, v in qualifiers.items() if q not in ("slow_s", "fail")}}  # checkpoint's: refused
        for name, (text, _) in timed.items():
            try:
                numbers[name] = float(text)
            except (TypeError, ValueError):
                raise PlanError(f"{where}: `{name}` must be a number (got '{text}')")
            if not (numbers[name] >= 0 and math.isfinite(numbers[name])):
                raise PlanError(f"{where}: `{name}` must be a finite number >= 0 (got '{text}')")
        fault = Fault(numbers["at"], kind, value, numbers, where, key_at)
        check_enactable(fault, bed)
        plan.append(fault)
    plan.sort(key=lambda e: e.at)
    return plan


def check_enactable(f, bed):
    """PlanError, naming the entry, unless `bed` can enact `f`."""
    if f.kind in ("server_crash", *NETWORK) and f.value not in bed.agents:
        raise PlanError(f"{f.key_at}: {f.kind}: no agent '{f.value}' in the testbed "
                        f"(its agents: {', '.join(sorted(bed.agents)) or 'none'}); cannot be enacted live")
    if f.kind == "worker_crash":
        if not str(f.value).isdigit():
            raise PlanError(f"{f.key_at}: worker_crash: '{f.value}' is not a job index")
    elif f.kind in NETWORK:
        if f.for_s is None:
            raise PlanError(f"{f.where}: {f.kind} needs `for` (seconds)")
        if not f.loss <= 1:
            raise PlanError(f"{f.where}: link: `loss` must be in [0, 1] (got {f.loss:g})")
        if not bed.has_proxy(f.value):
            raise PlanError(f"{f.key_at}: {f.kind}: {f.value}'s agent has no fault proxy in the testbed "
                            f"(no 'proxy {f.value}' in DIR/pids with its FIFO DIR/agent-{f.value}/proxy.ctl); "
                            f"start the testbed with `scripts/testbed.sh --proxy {f.value}`")
    elif f.kind == "scheduler_crash":
        if str(f.value).lower() != "true":
            raise PlanError(f"{f.key_at}: scheduler_crash: must be `true` (got '{f.value}')")
        if f.down_for is None:
            raise PlanError(f"{f.where}: scheduler_crash needs `down_for` (seconds)")
        argv = bed.serve_argv()
        if argv is None:
            raise PlanError(f"{f.key_at}: scheduler_crash: serve (pid {bed.serve}) is not running; "
                            f"cannot read its command line")
        if not any(a == "--state" or a.startswith("--state=") for a in argv):
            raise PlanError(f"{f.key_at}: scheduler_crash: serve (pid {bed.serve}) was not started with "
                            f"--state FILE; a restart without a journal would lose the run")
        if bed.testbed is None or not alive(bed.testbed):
            raise PlanError(f"{f.key_at}: scheduler_crash: no scripts/testbed.sh runs for this testbed "
                            f"(no live 'PID testbed' in DIR/pids) to start serve again")
    elif f.kind == "checkpoint":
        raise PlanError(f"{f.key_at}: checkpoint: not enacted live (a slow or failed checkpoint is "
                        f"injected in simulated time only)")
    elif f.kind not in ("server_crash", "surge"):
        raise PlanError(f"{f.key_at}: '{f.kind}' cannot be enacted live "
                        f"(server_crash, worker_crash, disconnect, link, scheduler_crash; surge is serve's)")


def read_pids(testbed):
    """(testbed pid, latest serve pid, {agent: pid}, {proxied agent: pid}) from DIR/pids."""
    bed, serve, agents, proxies = None, None, {}, {}
    with open(os.path.join(testbed, "pids")) as f:
        for line in f:
            words = line.split()
            if len(words) < 2 or not words[0].isdigit():
                continue
            if words[1] == "testbed":
                bed = int(words[0])
            elif words[1] == "serve":
                serve = int(words[0])  # the last one listed: a restarted serve follows the first
            elif len(words) >= 3 and words[1] == "agent":
                agents[words[2]] = int(words[0])
            elif len(words) >= 3 and words[1] == "proxy":
                proxies[words[2]] = int(words[0])
    return bed, serve, agents, proxies


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
    """The processes of a testbed, as DIR/pids lists them, and the faults done to them."""

    def __init__(self, testbed, speedup):
        self.dir, self.speedup = testbed, speedup
        self.testbed, self.serve, self.agents, self.proxies = read_pids(testbed)
        self.commands = {}   # name -> (argv, env, cwd) of its agent, kept before killing it
        self.started = []    # (Popen, name): agents started again here
        self.restart_until = None  # while serve is down for a restart: when to stop waiting for it
        self.began = None

    def log(self, text):
        stamp = f"t={time.monotonic() - self.began:.2f} s" if self.began else "before the run"
        line = f"[faults] {stamp}: {text}"
        print(line, flush=True)
        with open(os.path.join(self.dir, "faults.log"), "a") as f:
            f.write(line + "\n")

    def control(self, name):
        return os.path.join(self.dir, f"agent-{name}", "proxy.ctl")

    def has_proxy(self, name):
        try:
            return name in self.proxies and stat.S_ISFIFO(os.stat(self.control(name)).st_mode)
        except OSError:
            return False

    def serve_argv(self):
        try:
            with open(f"/proc/{self.serve}/cmdline", "rb") as f:
                return [a.decode(errors="replace") for a in f.read().split(b"\0")[:-1]] or None
        except (OSError, TypeError):
            return None

    def serve_ended(self):
        """True once serve has exited for good: not running, and not down for a restart of
        ours that the testbed has yet to make. Follows a restarted serve's new pid."""
        # The request first, then the pids: the testbed lists the new serve before removing it.
        pending = os.path.exists(os.path.join(self.dir, "serve.restart"))
        try:
            latest = read_pids(self.dir)[1]
        except OSError:  # the testbed's folder is gone: nothing new to follow
            latest = self.serve
        if latest != self.serve:
            self.serve = latest
            self.restart_until = None
            self.log(f"scheduler_crash: serve started again by the testbed, pid {latest}")
        if alive(self.serve):
            return False
        if self.restart_until is None:
            return True
        if pending and alive(self.testbed) and time.monotonic() < self.restart_until:
            return False
        self.log("scheduler_crash: the testbed did not start serve again; the run has ended")
        self.restart_until = None
        return True

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

    def tell_proxy(self, name, command, what):
        """One command line to NAME's fault proxy, through its FIFO (a non-blocking open: one
        that fails means the proxy has ended)."""
        try:
            fd = os.open(self.control(name), os.O_WRONLY | os.O_NONBLOCK)
            try:
                os.write(fd, (command + "\n").encode())
            finally:
                os.close(fd)
        except OSError as e:
            self.log(f"{what}: cannot command {name}'s proxy ({self.control(name)}): {e.strerror}; not enacted")
            return
        self.log(f"{what}: {name}'s proxy told '{command}'")

    def crash_scheduler(self, down_s):
        """SIGKILL to serve; scripts/testbed.sh, which waits for it, starts it again after down_s
        when it finds DIR/serve.restart, written before the kill."""
        if not alive(self.serve):
            self.log("scheduler_crash: serve is not running; nothing to crash")
            return
        if self.testbed is None or not alive(self.testbed):
            self.log("scheduler_crash: the testbed that would start serve again has ended; serve left running")
            return
        request = os.path.join(self.dir, "serve.restart")
        with open(request + ".tmp", "w") as f:
            f.write(f"{down_s:.3f}\n")
        os.replace(request + ".tmp", request)
        try:
            os.kill(self.serve, signal.SIGKILL)
        except ProcessLookupError:
            os.unlink(request)
            self.log("scheduler_crash: serve has just ended; nothing to crash")
            return
        self.restart_until = time.monotonic() + down_s + RESTART_GRACE_S
        self.log(f"scheduler_crash: SIGKILL to serve {self.serve}; the testbed starts it again in {down_s:g} s")

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


def timeline(plan, speedup):
    """The plan as timed actions, (wall s after the start, order, action, arguments): a crash
    with down_for, and a network fault, each give two."""
    events = []
    for i, f in enumerate(plan):
        at = f.at / speedup
        if f.kind == "server_crash":
            events.append((at, i, "server_crash", (f.value,)))
            if f.down_for is not None:
                events.append(((f.at + f.down_for) / speedup, i, "server_back", (f.value,)))
        elif f.kind == "worker_crash":
            events.append((at, i, "worker_crash", (int(f.value),)))
        elif f.kind == "disconnect":
            events.append((at, i, "proxy", (f.value, f"partition {f.for_s / speedup:g}", f"disconnect {f.value}")))
        elif f.kind == "link":
            what, end = f"link {f.value}", (f.at + f.for_s) / speedup
            seed = zlib.crc32(f"{f.value} {f.at:g}".encode())  # the entry's server and time
            if f.delay_s > 0:
                events.append((at, i, "proxy", (f.value, f"delay {f.delay_s / speedup:g}", what)))
                events.append((end, i, "proxy", (f.value, "delay 0", what + " ends")))
            if f.loss > 0:
                events.append((at, i, "proxy", (f.value, f"loss {f.loss:g} {seed}", what)))
                events.append((end, i, "proxy", (f.value, "loss 0", what + " ends")))
        elif f.kind == "scheduler_crash":
            events.append((at, i, "scheduler_crash", (f.down_for / speedup,)))
        else:
            events.append((at, i, "serve", (f"{f.kind} {f.value} ({f.where}): enacted by serve",)))
    events.sort(key=lambda e: (e[0], e[1]))
    return events


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
        plan = read_plan(a.plan, bed)
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
        ended = False
        for due, _, action, args in timeline(plan, a.speedup):
            while not stop and time.monotonic() - bed.began < due:
                ended = bed.serve_ended()
                if ended:
                    break
                time.sleep(0.02)
            if stop or ended or bed.serve_ended():
                break
            if action == "server_crash":
                bed.crash_server(*args)
            elif action == "server_back":
                bed.restart_server(*args)
            elif action == "worker_crash":
                bed.crash_worker(*args)
            elif action == "proxy":
                bed.tell_proxy(*args)
            elif action == "scheduler_crash":
                bed.crash_scheduler(*args)
            else:
                bed.log(*args)
        while not stop and not bed.serve_ended():
            time.sleep(0.1)
    finally:
        bed.stop_started()
    return 0


if __name__ == "__main__":
    sys.exit(main())
