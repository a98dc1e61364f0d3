"""A small loopback bed for live tests that drive `aryl serve` through its clients: one serve
(port 0, published with --port-file), the agents named, and the client commands. Every process
is started through live_harness.Processes, so it is stopped by its pid on every way out."""

import json
import os
import subprocess

from live_harness import check, read, wait_for


class Bed:
    def __init__(self, a, work, procs, token_text):
        self.aryl = os.path.abspath(a.aryl)
        self.work, self.procs = work, procs
        self.dir = os.path.join(work, "testbed")
        self.out = os.path.join(work, "out")
        os.makedirs(self.dir)
        self.token = os.path.join(self.dir, "token")
        with open(os.open(self.token, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(token_text + "\n")
        self.port = 0
        self.agents = {}
        # How serve authenticates peers: the cluster token, or (identity tests) --identities FILE.
        self.serve_auth = ["--token-file", self.token]

    def serve(self, args, log="serve.log", port=0):
        """Starts serve with `args` after the common ones; returns its process once it listens,
        or None (a failed check says why)."""
        port_file = os.path.join(self.dir, "port")
        if os.path.exists(port_file):
            os.remove(port_file)
        argv = [self.aryl, "serve", *self.serve_auth, "--port", str(port), "--port-file", port_file,
                "--work-dir", os.path.join(self.dir, "work"), "--out", self.out, "--stop-grace", "3",
                "--agent-wait", "30", *args]
        p = self.procs.start("serve", argv, os.path.join(self.dir, log),
                             stdout=open(os.path.join(self.dir, log.replace(".log", ".out")), "w"))
        if not check(wait_for(lambda: read(port_file).strip() or p.poll() is not None, 30, "serve's port")
                     and p.poll() is None, f"serve listens ({log})"):
            return None
        self.port = int(read(port_file))
        return p

    def agent(self, name, gpus, pool="training", gpu_type="V100", token=None, env=None, label=None):
        """`token`: its credential's file (default: the cluster token); `env`: its whole
        environment, where the test gives the address and token as ARYL_ADDR and ARYL_TOKEN_FILE."""
        folder = os.path.join(self.dir, f"agent-{label or name}")
        os.makedirs(folder, exist_ok=True)
        where = [] if env else ["--port", str(self.port), "--token-file", token or self.token]
        p = self.procs.start(f"agent {label or name}", [
            self.aryl, "agent", *where, "--name", name, "--gpu-type",
            gpu_type, "--gpus", str(gpus), "--pool", pool, "--work-dir", folder], os.path.join(folder, "agent.log"),
            **({"env": env} if env else {}))
        self.agents[name] = p
        return p

    def run_starts(self, log="serve.log"):
        return check(wait_for(lambda: "the run starts" in read(os.path.join(self.dir, log)), 40, "the run to start"),
                     f"the run starts ({log})")

    def client(self, *args, token=None):
        """`aryl ARGS` against this serve; the address and token go before a `--` in ARGS."""
        args = list(args)
        at = args.index("--") if "--" in args else len(args)
        args[at:at] = ["--port", str(self.port), "--token-file", token or self.token]
        return subprocess.run([self.aryl, *args], capture_output=True, text=True, timeout=20)

    def submit(self, *args):
        """The id `aryl submit` prints, or what went wrong (a string)."""
        r = self.client("submit", *args)
        if r.returncode == 0 and r.stdout.strip().isdigit():
            return int(r.stdout)
        return f"rc {r.returncode}: {r.stderr.strip()}"

    def status(self):
        """`aryl status --json` as a dict, or None."""
        r = self.client("status", "--json")
        if r.returncode != 0:
            return None
        return json.loads(r.stdout)

    def idle(self):
        s = self.status()
        return s is not None and s["jobs"] == []

    def stop(self, serve, what="serve"):
        """SIGTERM, as an operator stops it; True once it exited 0."""
        serve.terminate()
        try:
            rc = serve.wait(timeout=30)
        except subprocess.TimeoutExpired:
            return check(False, f"{what} ends within 30 s of SIGTERM")
        return check(rc == 0, f"{what} exits 0 (got {rc})")

    def rows(self, name):
        """A CSV output as a list of dicts."""
        lines = read(os.path.join(self.out, name)).splitlines()
        if not lines:
            return []
        head = lines[0].split(",")
        return [dict(zip(head, line.split(","))) for line in lines[1:]]

    def summary(self):
        text = read(os.path.join(self.out, "summary.json"))
        return json.loads(text) if text else {}

    def events(self):
        return read(os.path.join(self.out, "events.log"))
