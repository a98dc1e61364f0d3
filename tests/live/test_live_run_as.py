#!/usr/bin/python3
"""`aryl agent` as root runs each launch as the user it names, with a clean environment.

    test_live_run_as.py --aryl BUILD/aryl --source SOURCE_DIR [--dir TMP]

As root (skipped, exit 77, otherwise): two Unix users are made with useradd (A also in an extra
group) and removed with `userdel -r` on every way out. A scheduler stand-in on 127.0.0.1 (port 0)
speaks the wire protocol to one `aryl agent`, started as root with ARYL_ADDR, ARYL_TOKEN_FILE,
ARYL_TOKEN and other variables in its environment, and `--pass-env OPERATOR_*`. Then:
  - a job of B writes a private note in its job folder;
  - a job of A, while it runs, has A's uid, gid and groups in /proc/PID/status; it then writes
    `id`, its folder and its environment, and tries to read a root-only 0600 file, the agent's
    token file and environment, and B's job folder: its uid and groups are A's, its environment
    holds HOME/USER/LOGNAME/SHELL from A's passwd entry, OPERATOR_NOTE, no ARYL_TOKEN*,
    ARYL_ADDR, ARYL_TLS_* nor the token file's path, and every read is denied; its job folder
    and checkpoint folder are A's, mode 0700, and its log the agent's, mode 0600;
  - launches for an unknown user and for root exit 127, the reason in the agent's log;
  - a launch whose checkpoint folder sits under a folder A may not search exits 127, naming it;
  - `aryl agent --pass-env ARYL_TOKEN_FILE` is refused at the start (exit 2), naming it.
Every process is stopped by its pid on every way out; no port stays bound. A few seconds.
"""

import atexit
import os
import grp
import pwd
import shutil
import socket
import stat
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from live_harness import check, main, read, wait_for  # noqa: E402

# The scheduler stand-in speaks the protocol with examples/python_agent.py's framing.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))
try:
    from python_agent import FrameDecoder, ProtocolError, encode_frame, receive_one  # noqa: E402
except ImportError:  # no msgpack module (Debian: python3-msgpack, which scripts/setup.sh installs)
    FrameDecoder = None

DEADLINE_S = 60
TOKEN = "live-run-as-test-token-0123456789"
PREFIX = f"arylt_{os.getpid()}"
USER_A, USER_B, GROUP, NOBODY = PREFIX + "_a", PREFIX + "_b", PREFIX + "_g", PREFIX + "_nobody"


class Scheduler(threading.Thread):
    """The scheduler's end for one agent connection: takes hello and register, answers
    heartbeats, records exits by job id."""

    def __init__(self):
        super().__init__(daemon=True)
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(1)
        self.port = self.listener.getsockname()[1]
        self.conn = None
        self.decoder = FrameDecoder()
        self.registered = threading.Event()
        self.exits = {}
        self.lock = threading.Lock()

    def recv_frame(self):
        m = receive_one(self.conn, self.decoder)
        if m is None:
            raise ConnectionError("closed")
        return m

    def send(self, fields):
        with self.lock:
            self.conn.sendall(encode_frame(fields))

    def run(self):
        try:
            self.listener.settimeout(20)
            self.conn, _ = self.listener.accept()
            hello = self.recv_frame()
            if hello.get("type") != "hello" or hello.get("token") != TOKEN:
                return
            self.send({"type": "hello_ok"})
            if self.recv_frame().get("type") == "register":
                self.registered.set()
            while True:
                m = self.recv_frame()
                if m.get("type") == "heartbeat":
                    self.send({"type": "heartbeat", "seq": m["seq"]})
                elif m.get("type") == "exit":
                    with self.lock:
                        self.exits[m["job_id"]] = (m["code"], m["signal"])
        except (OSError, ConnectionError, ProtocolError):
            pass

    def exit_of(self, job_id):
        with self.lock:
            return self.exits.get(job_id)

    def close(self):
        """Closes both sockets; shutdown first wakes the thread from a blocked accept or recv."""
        for s in (self.conn, self.listener):
            if s:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()
        self.join(5)


# ---- users -----------------------------------------------------------------------------

def quiet(argv):
    return subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


def make_users():
    return (quiet(["groupadd", GROUP]) and quiet(["useradd", "-m", "-s", "/bin/sh", "-G", GROUP, USER_A])
            and quiet(["useradd", "-m", "-s", "/bin/sh", USER_B]))


def remove_users():
    """userdel -r each test user (after SIGKILL, by pid, to any process of theirs: all started by
    this test), then the extra group. Safe to call twice."""
    for name in (USER_A, USER_B):
        try:
            uid = pwd.getpwnam(name).pw_uid
        except KeyError:
            continue
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                if os.stat(f"/proc/{pid}").st_uid == uid:
                    os.kill(int(pid), 9)
            except OSError:
                pass
        quiet(["userdel", "-r", name])
    try:
        grp.getgrnam(GROUP)
        quiet(["groupdel", GROUP])
    except KeyError:
        pass


# ---- the test ------------------------------------------------------------------------------

def launch(job_id, user, script, checkpoint_dir):
    return {"type": "launch", "job_id": job_id, "rank": 0, "world_size": 1, "gpus": [0],
            "checkpoint_dir": checkpoint_dir, "rendezvous": f"file://{checkpoint_dir}/rendezvous-1",
            "command": ["/bin/sh", "-c", script], "env": {"JOB_NOTE": "from the launch"}, "user": user}


def status_ids(pid):
    """{'Uid': [...], 'Gid': [...], 'Groups': [...]} of /proc/PID/status."""
    out = {}
    for line in read(f"/proc/{pid}/status").splitlines():
        key, _, rest = line.partition(":")
        if key in ("Uid", "Gid", "Groups"):
            out[key] = [int(x) for x in rest.split()]
    return out


def run(a, work, procs):
    os.chmod(work, 0o711)  # users search their way to their job folders; they list nothing
    bed = os.path.join(work, "testbed")
    os.makedirs(bed)
    ua, ub = pwd.getpwnam(USER_A), pwd.getpwnam(USER_B)
    token_file = os.path.join(work, "token")
    secret = os.path.join(work, "secret")
    for path, text in ((token_file, TOKEN + "\n"), (secret, "root only\n")):
        with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(text)
    checkpoints = os.path.join(work, "checkpoints")
    os.makedirs(checkpoints, mode=0o755)
    private = os.path.join(work, "private")
    os.makedirs(private, mode=0o700)
    agent_work = os.path.join(work, "agent")

    sched = Scheduler()
    sched.start()
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "USER": "root", "LANG": "C",
           "ARYL_ADDR": f"127.0.0.1:{sched.port}", "ARYL_TOKEN_FILE": token_file, "ARYL_TOKEN": TOKEN,
           "NCCL_DEBUG": "INFO", "OPERATOR_NOTE": "passed", "SECRET_THING": "hidden"}
    agent_log = os.path.join(bed, "agent.log")
    agent = procs.start("agent", [a.aryl, "agent", "--name", "t0", "--gpu-type", "V100", "--gpus", "2",
                                  "--work-dir", agent_work, "--pass-env", "OPERATOR_*"], agent_log, env=env)
    try:
        if not check(sched.registered.wait(15), "the agent registers with the scheduler stand-in"):
            return [sched.port]

        def ended(job_id, what):
            wait_for(lambda: sched.exit_of(job_id) is not None, 15, what)
            return sched.exit_of(job_id)

        # B's job leaves a private note in its folder.
        sched.send(launch(1, USER_B, "echo private-b > note", os.path.join(checkpoints, "job-1")))
        check(ended(1, "B's job to end") == (0, 0), "B's job exits 0")
        b_dir = os.path.join(agent_work, "jobs", USER_B, "1")

        # A's job waits for `go` in its folder, so that it is seen running.
        a_dir = os.path.join(agent_work, "jobs", USER_A, "2")
        a_ckpt = os.path.join(checkpoints, "job-2")
        agent_pid = agent.pid
        script = f"""echo $$ > pid; while [ ! -e go ]; do sleep 0.02; done
echo "uid=$(id -u)"; echo "gid=$(id -g)"; echo "groups=$(id -G)"; echo "pwd=$(pwd)"
env | sed 's/^/env:/'
cat {secret} >/dev/null 2>&1 && echo secret=read || echo secret=denied
cat {token_file} >/dev/null 2>&1 && echo token=read || echo token=denied
cat /proc/{agent_pid}/environ >/dev/null 2>&1 && echo agent_env=read || echo agent_env=denied
ls {b_dir} >/dev/null 2>&1 && echo b_dir=listed || echo b_dir=denied
cat {b_dir}/note >/dev/null 2>&1 && echo b_note=read || echo b_note=denied
touch "$ARYL_CHECKPOINT_DIR/mine" && echo checkpoint=written
"""
        sched.send(launch(2, USER_A, script, a_ckpt))
        pid_file = os.path.join(a_dir, "pid")
        if check(wait_for(lambda: read(pid_file).strip().isdigit(), 15, "A's job to start"), "A's job starts"):
            ids = status_ids(int(read(pid_file)))
            check(ids.get("Uid") == [ua.pw_uid] * 4, f"A's running worker has A's uid, real to filesystem ({ids})")
            check(ids.get("Gid") == [ua.pw_gid] * 4, "and A's gid")
            check(sorted(ids.get("Groups", [])) == sorted(set(os.getgrouplist(USER_A, ua.pw_gid))),
                  "and exactly A's groups")
        with open(os.path.join(a_dir, "go"), "w"):
            pass
        check(ended(2, "A's job to end") == (0, 0), "A's job exits 0")
        out = read(os.path.join(agent_work, "logs", "2-0.log"))
        lines = out.splitlines()
        wenv = dict(line[4:].split("=", 1) for line in lines if line.startswith("env:") and "=" in line)
        extra_gid = grp.getgrnam(GROUP).gr_gid
        check(f"uid={ua.pw_uid}" in lines and f"gid={ua.pw_gid}" in lines, "`id` in A's job gives A's uid and gid")
        groups = next((line[7:].split() for line in lines if line.startswith("groups=")), [])
        check(str(extra_gid) in groups and "0" not in groups, f"A's extra group, none of root's ({groups})")
        check(f"pwd={a_dir}" in lines, "A's job runs in its job folder")
        leaked = sorted(k for k in wenv if k.startswith(("ARYL_TOKEN", "ARYL_ADDR", "ARYL_TLS_")))
        check(not leaked, f"no ARYL_TOKEN*, ARYL_ADDR or ARYL_TLS_* in A's environment ({leaked})")
        check(not any(token_file in v or TOKEN in v for v in wenv.values()), "nor the token file's path or the token")
        check("SECRET_THING" not in wenv, "a variable off the allow-list stays out")
        check(wenv.get("OPERATOR_NOTE") == "passed" and wenv.get("NCCL_DEBUG") == "INFO",
              "--pass-env and the allow-list pass theirs")
        check((wenv.get("HOME"), wenv.get("USER"), wenv.get("LOGNAME"), wenv.get("SHELL")) ==
              (ua.pw_dir, USER_A, USER_A, ua.pw_shell), "HOME, USER, LOGNAME and SHELL are A's")
        check(wenv.get("ARYL_JOB_ID") == "2" and wenv.get("ARYL_CHECKPOINT_DIR") == a_ckpt
              and wenv.get("JOB_NOTE") == "from the launch", "aryl's variables and the launch's env are there")
        for what in ("secret=denied", "token=denied", "agent_env=denied", "b_dir=denied", "b_note=denied",
                     "checkpoint=written"):
            check(what in lines, f"A's job: {what}")
        for path, owner in ((a_dir, ua.pw_uid), (a_ckpt, ua.pw_uid), (b_dir, ub.pw_uid)):
            st = os.lstat(path)
            check(st.st_uid == owner and stat.S_IMODE(st.st_mode) == 0o700,
                  f"{os.path.relpath(path, work)}: its user's, mode 0700 ({st.st_uid}, {oct(st.st_mode)})")
        st = os.stat(os.path.join(agent_work, "logs", "2-0.log"))
        check(st.st_uid == 0 and stat.S_IMODE(st.st_mode) == 0o600, "A's log is the agent's, mode 0600")

        # Refused launches end with 127, the reason in the agent's log.
        sched.send(launch(3, NOBODY, "true", os.path.join(checkpoints, "job-3")))
        sched.send(launch(4, "root", "true", os.path.join(checkpoints, "job-4")))
        hidden = os.path.join(private, "checkpoints", "job-5")
        sched.send(launch(5, USER_A, "true", hidden))
        for job in (3, 4, 5):
            check(ended(job, f"job {job} to end") == (127, 0), f"job {job} exits 127")
        log = read(agent_log)
        check(f"launch job 3 rank 0 failed: no user '{NOBODY}' on this node" in log, "an unknown user is named")
        check("launch job 4 rank 0 failed: jobs as root are refused on this node: agent --allow-root-jobs allows them"
              in log, "root is refused without --allow-root-jobs")
        check(f"job 5 rank 0: cannot use {hidden} as uid {ua.pw_uid}: Permission denied" in log,
              "a checkpoint folder A cannot reach is named")
        check(not os.path.exists(os.path.join(checkpoints, "job-3")), "no folder is made for a refused launch")

        sched.send({"type": "shutdown", "reason": "test over"})
        try:
            code = agent.wait(timeout=10)
        except subprocess.TimeoutExpired:
            code = None
        check(code == 0, f"the agent stops with 0 on shutdown ({code})")

        refused = subprocess.run([a.aryl, "agent", "--name", "t1", "--gpu-type", "V100", "--gpus", "1", "--work-dir",
                                  os.path.join(work, "agent-refused"), "--pass-env", "ARYL_TOKEN_FILE"],
                                 env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=20)
        check(refused.returncode == 2 and "--pass-env 'ARYL_TOKEN_FILE'" in refused.stdout,
              f"--pass-env ARYL_TOKEN_FILE is refused at the start ({refused.returncode}: {refused.stdout.strip()})")
    finally:
        sched.close()
    return [sched.port]


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("skipped: running jobs as other users needs root")
        sys.exit(77)
    if FrameDecoder is None:
        print("skipped: this python3 has no msgpack module (Debian: python3-msgpack)")
        sys.exit(77)
    if not shutil.which("useradd"):
        print("skipped: no useradd on this machine")
        sys.exit(77)
    atexit.register(remove_users)
    try:
        if not make_users():
            print(f"cannot add the test users {USER_A} and {USER_B} (groupadd/useradd failed)")
            sys.exit(1)
        code = main("live-run-as", DEADLINE_S, run, ("agent.log",))
    finally:
        remove_users()
    sys.exit(code)
