#!/usr/bin/python3
"""Without a CA, `aryl` clients and agents dial loopback only, and a request over the frame
limit is refused before it is sent.

    test_live_plain_text.py --aryl BUILD/aryl --source SOURCE_DIR [--dir TMP]

On one of this machine's addresses that is not loopback (skipped where there is none), a
listener that accepts nothing on its own:
  - `aryl status` and `aryl agent` without --tls-ca exit 2 naming the address, --tls-ca FILE
    and --insecure, and nothing dials the listener (not even a TCP handshake);
  - with --insecure each dials it, and the client's first frame is its hello;
  - on loopback, `aryl submit` with a command of 1.2 MB exits 2 naming the 1 MiB limit and the
    command, without dialling.
Every process is stopped by its pid on every way out; no port stays bound.
"""

import os
import select
import socket
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from live_harness import check, main  # noqa: E402


def non_loopback_address():
    try:
        out = subprocess.run(["hostname", "-I"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    for a in out.split():
        if ":" not in a and not a.startswith("127."):
            return a
    return None


def listen(address):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((address, 0))
    s.listen(8)
    return s


def dialled(s, timeout=0.0):
    return bool(select.select([s], [], [], timeout)[0])


def run(a, work, procs):
    token = os.path.join(work, "token")
    with open(os.open(token, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write("0123456789abcdef0123456789abcdef\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARYL_") and k != "XDG_CONFIG_HOME"}
    env["HOME"] = work  # no client config file of the user's
    log = os.path.join(work, "commands.log")

    def aryl(*args, timeout=30):
        r = subprocess.run([a.aryl, *args], capture_output=True, text=True, env=env, timeout=timeout)
        return r.returncode, r.stderr

    ports, sockets = [], []
    try:
        here = listen("127.0.0.1")
        sockets.append(here)
        ports.append(here.getsockname()[1])
        rc, err = aryl("submit", "--host", "127.0.0.1", "--port", str(ports[0]), "--token-file", token, "--name", "big",
                       "--", *(["a" * 60000] * 20))
        check(rc == 2 and "1048576-byte (1 MiB) frame limit" in err and "shrink the job's command" in err,
              f"a 1.2 MB submit is refused naming the limit and the command ({err.strip()!r})")
        check(not dialled(here), "the oversized submit dials nothing")

        address = non_loopback_address()
        if not address:
            check(True, "skipped the non-loopback checks: this machine has no address but loopback")
            return ports
        away = listen(address)
        sockets.append(away)
        port = away.getsockname()[1]
        ports.append(port)
        where = f"{address}:{port} is not a loopback address"

        rc, err = aryl("status", "--host", address, "--port", str(port), "--token-file", token)
        check(rc == 2 and where in err and "--tls-ca FILE" in err and "--insecure" in err,
              f"aryl status to {address} without a CA is refused naming the ways out ({err.strip()!r})")
        check(not dialled(away), "the refused client dials nothing")

        agent_dir = os.path.join(work, "agent")
        rc, err = aryl("agent", "--host", address, "--port", str(port), "--token-file", token, "--name", "n0",
                       "--work-dir", agent_dir, "--gpus", "1", "--gpu-type", "V100", "--give-up-after", "2")
        check(rc == 2 and where in err and "--tls-ca FILE" in err and "--insecure" in err,
              f"aryl agent to {address} without a CA exits 2 naming the ways out ({err.strip()!r})")
        check(not dialled(away), "the refused agent dials nothing")

        client = procs.start("status --insecure", [a.aryl, "status", "--host", address, "--port", str(port),
                                                   "--token-file", token, "--insecure"], log, env=env)
        check(dialled(away, 10), "with --insecure the client dials")
        conn, _ = away.accept()
        conn.settimeout(10)
        head = conn.recv(4096)
        check(b"hello" in head, "and its first frame is its hello")
        conn.close()
        client.wait(timeout=20)

        agent = procs.start("agent --insecure", [a.aryl, "agent", "--host", address, "--port", str(port),
                                                 "--token-file", token, "--name", "n0", "--work-dir", agent_dir,
                                                 "--gpus", "1", "--gpu-type", "V100", "--insecure"], log, env=env)
        check(dialled(away, 10), "with --insecure the agent dials")
        conn, _ = away.accept()
        conn.close()
        agent.terminate()
        agent.wait(timeout=20)
    finally:
        for s in sockets:
            s.close()
    return ports


if __name__ == "__main__":
    sys.exit(main("plain_text", 120, run, ["../commands.log"]))
