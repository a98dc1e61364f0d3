#!/usr/bin/python3
"""What unauthenticated TLS connections cost `aryl serve` in memory (docs/reliability.md).

    scripts/bench_tls_memory.py [--aryl build/aryl] [--connections N]

Starts `aryl serve --tls-cert/--tls-key` on 127.0.0.1 (a throwaway certificate made with the
openssl CLI; caps before hello raised to hold every connection, hello deadline 120 s), then
measures serve's resident memory (VmRSS) at rest and after each of, in turn:
  idle       N TCP connections that send nothing;
  handshake  N connections that send a TLS ClientHello and stop (the handshake half done);
  tls-idle   N connections that finish the TLS handshake and send no hello;
  closed     all of them closed, 3 s later.
Prints one line per step: the RSS in MiB and its change over the step's N connections, in KiB each.
A benchmark, not a test: the figures vary with the allocator and the machine.
"""

import argparse
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def make_cert(d):
    key, pem = os.path.join(d, "k.pem"), os.path.join(d, "c.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", key, "-out", pem, "-days", "1", "-subj", "/CN=bench", "-addext",
                    "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    return pem, key


def client_hello():
    """The first flight of a real TLS client, taken from Python's ssl over memory BIOs."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, out, server_side=False)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return out.read()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--aryl", default="build/aryl")
    p.add_argument("--connections", type=int, default=1000)
    a = p.parse_args()
    n = a.connections
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 3 * n + 256
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    work = tempfile.mkdtemp(prefix="aryl-bench-tls-")
    serve = None
    socks = []
    try:
        pem, key = make_cert(work)
        token = os.path.join(work, "token")
        with open(os.open(token, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write("bench-tls-memory-token\n")
        port_file = os.path.join(work, "port")
        caps = str(4 * n)
        serve = subprocess.Popen(
            [os.path.abspath(a.aryl), "serve", "--no-workload", "--servers", "1", "--set",
             "cluster.inference.servers=0", "--token-file", token, "--port", "0", "--port-file", port_file,
             "--work-dir", os.path.join(work, "w"), "--tls-cert", pem, "--tls-key", key, "--agent-wait", "600",
             "--set", f"live.max_before_hello={caps}", "--set", f"live.max_before_hello_per_address={caps}",
             "--set", f"live.max_connections={caps}", "--set", "live.hello_timeout_s=120"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "serve.log"), "w"),
            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard)))
        for _ in range(300):
            if os.path.exists(port_file) and open(port_file).read().strip():
                break
            time.sleep(0.1)
        port = int(open(port_file).read())
        time.sleep(1)
        rest = rss_kib(serve.pid)
        print(f"{'at rest':10s} RSS {rest / 1024:7.1f} MiB")

        last = [rest]

        def report(step):
            time.sleep(2)
            r = rss_kib(serve.pid)
            print(f"{step:10s} RSS {r / 1024:7.1f} MiB  {(r - last[0]) / n:+7.1f} KiB per connection of this step"
                  f"  ({len(socks)} open)", flush=True)
            last[0] = r

        for _ in range(n):
            socks.append(socket.create_connection(("127.0.0.1", port)))
        report("idle")
        hello = client_hello()
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(hello)
            socks.append(s)
        report("handshake")
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        for _ in range(n):
            socks.append(ctx.wrap_socket(socket.create_connection(("127.0.0.1", port))))
        report("tls-idle")
        for s in socks:
            s.close()
        socks.clear()
        time.sleep(1)
        report("closed")
    finally:
        for s in socks:
            s.close()
        if serve:
            serve.terminate()
            try:
                serve.wait(timeout=10)
            except subprocess.TimeoutExpired:
                serve.kill()
                serve.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
