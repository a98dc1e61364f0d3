"""What the end-to-end live tests share: checks that are counted, process hygiene (every
process started is stopped by its pid on every way out, none is left, no port stays bound, the
whole test ends within its deadline), and a /proc sampler that sees a job launched twice at once."""

import argparse
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time

START = time.monotonic()
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)
    return ok


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


class Processes:
    """Everything the test starts, stopped by pid on every way out."""

    def __init__(self):
        self.procs = []

    def start(self, name, argv, log, **kw):
        with open(log, "a") as f:
            p = subprocess.Popen(argv, stdout=kw.pop("stdout", f), stderr=f, **kw)
        self.procs.append((name, p))
        return p

    def stop_all(self, extra_pids=()):
        """Stops the processes started here and `extra_pids` (started by a script of ours)."""
        for _, p in self.procs:
            if p.poll() is None:
                p.terminate()
        for pid in extra_pids:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        until = time.monotonic() + 12
        for _, p in self.procs:
            try:
                p.wait(timeout=max(0.1, until - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for pid in extra_pids:
            while time.monotonic() < until and os.path.exists(f"/proc/{pid}"):
                time.sleep(0.05)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def wait_for(pred, timeout_s, what):
    until = time.monotonic() + timeout_s
    while time.monotonic() < until:
        if pred():
            return True
        time.sleep(0.05)
    print(f"timed out after {timeout_s:g} s waiting for {what}", flush=True)
    return False


def environ(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
    except OSError:
        return None


class Sampler(threading.Thread):
    """Worker processes of the test, from /proc every 50 ms: per job, the launches alive (a
    launch is told apart by ARYL_DECIDED_UNIX_NS, set once per assignment)."""

    def __init__(self, work):
        super().__init__(daemon=True)
        self.work = work.encode()
        self.stop = threading.Event()
        self.overlaps = []   # (job, launches) seen alive together
        self.alive = {}      # job -> {launch: [pids]} at the last sample
        self.samples = 0
        self.lock = threading.Lock()

    def sample(self):
        now = {}
        for pid in filter(str.isdigit, os.listdir("/proc")):
            env = environ(pid)
            if not env or b"ARYL_JOB_ID" not in env or self.work not in env.get(b"ARYL_CHECKPOINT_DIR", b""):
                continue
            job = int(env[b"ARYL_JOB_ID"])
            now.setdefault(job, {}).setdefault(env.get(b"ARYL_DECIDED_UNIX_NS", b"?"), []).append(
                (int(pid), int(env.get(b"ARYL_RANK", b"-1"))))
        with self.lock:
            for job, sets in now.items():
                if len(sets) > 1:
                    self.overlaps.append((job, sorted(sets)))
            self.alive = now
            self.samples += 1

    def run(self):
        while not self.stop.is_set():
            self.sample()
            time.sleep(0.05)

    def running_jobs(self):
        """job -> [(pid, rank)] alive at the last sample."""
        with self.lock:
            return {job: sorted(w for ws in sets.values() for w in ws) for job, sets in self.alive.items()}


def ancestors():
    """This process and those it runs under (a `timeout` wrapper names --dir too)."""
    out, pid = set(), os.getpid()
    while pid > 1 and pid not in out:
        out.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return out


def leftover(work):
    """Processes whose environment or command line points into the test's folder."""
    left, mine = [], ancestors()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) in mine:
            continue
        for part in ("environ", "cmdline"):
            try:
                with open(f"/proc/{pid}/{part}", "rb") as f:
                    if work.encode() in f.read():
                        left.append(int(pid))
                        break
            except OSError:
                pass
    return left


def port_bound(port):
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in read(table).splitlines()[1:]:
            fields = line.split()
            if len(fields) > 3 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                return True
    return False


def server(status, name):
    """The server `name` of a `status --json` answer, or {}."""
    for s in (status or {}).get("servers", []):
        if s["name"] == name:
            return s
    return {}


def job(status, job_id):
    """The job `job_id` of a `status --json` answer, or {}."""
    for j in (status or {}).get("jobs", []):
        if j["job_id"] == job_id:
            return j
    return {}


def outcomes(out):
    """Job id -> outcome, from a run's jobs.csv; a job listed twice appears once (check with
    the count of rows, the second value)."""
    rows = [r.split(",") for r in read(os.path.join(out, "jobs.csv")).splitlines()]
    if not rows:
        return {}, 0
    col = rows[0].index("outcome")
    return {r[0]: r[col] for r in rows[1:]}, len(rows) - 1


def launches(log_text):
    """The work_done of each launch's first progress line in one rank-0 log (steps restart,
    or stay, at a new launch: it resumes from the checkpoint's step)."""
    firsts, last_step = [], None
    for m in re.finditer(r"ARYL_PROGRESS work_done=([0-9.eE+-]+) step=(\d+)", log_text):
        work, step = float(m.group(1)), int(m.group(2))
        if last_step is None or step <= last_step:
            firsts.append(work)
        last_step = step
    return firsts


def main(name, deadline_s, run, logs, extra_pids=lambda work: ()):
    """Runs `run(args, work, procs)` (it returns the ports it bound, or None) in a work folder
    under a deadline, then stops everything, checks nothing is left and, on a failure, prints
    the last lines of `logs` (paths under WORK/testbed). Returns the exit code."""
    p = argparse.ArgumentParser()
    p.add_argument("--aryl", required=True)
    p.add_argument("--source", required=True)
    p.add_argument("--dir", help="work folder (default: a fresh temporary one, removed on success)")
    a = p.parse_args()
    a.source = os.path.abspath(a.source)
    work = os.path.abspath(a.dir) if a.dir else tempfile.mkdtemp(prefix=f"aryl-test-{name}-")
    if a.dir:
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
    procs = Processes()
    ports = None
    # The deadline: SIGALRM ends the test (its finally still stops everything).
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError("test deadline")))
    signal.alarm(deadline_s)
    try:
        ports = run(a, work, procs)
    except TimeoutError:
        check(False, f"the test ends within {deadline_s} s")
    finally:
        signal.alarm(0)
        procs.stop_all(extra_pids(work))
    left = leftover(work)
    check(not left, f"no process is left (found {left})")
    if ports:
        check(not any(port_bound(p) for p in ports), f"no port is left bound ({ports})")
    if failures:
        bed = os.path.join(work, "testbed")
        for log in logs:
            print(f"--- last lines of {log}\n" + "".join(read(os.path.join(bed, log)).splitlines(True)[-15:]))
        print(f"{len(failures)} check(s) failed; kept {work}")
        return 1
    if not a.dir:
        shutil.rmtree(work, ignore_errors=True)
    return 0
