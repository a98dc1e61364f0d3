#!/usr/bin/python3
"""The hostile peers of scripts/bench_live_abuse.sh, in one process, until killed.

    bench_live_attackers.py PORT TOKEN [--metrics-port P] [--tls-ca CA] [--logs-job J]

Against serve's listener (with --tls-ca: over TLS, verified against CA):
  idle      1,000 connections that send nothing;
  slow      300 that start and never finish: in plain text a header announcing a 1 MiB frame and
            4 KiB of it, then a byte every 5 s; with TLS a ClientHello, then nothing (a handshake
            half done, the costlier state);
  flood     one client that pipelines status requests and never reads;
  oversized one client that submits jobs of about 900 KiB of command (over the submit size
            limit) as fast as serve answers, and every tenth time a frame over the 1 MiB frame
            limit (serve closes the connection; it dials again);
  logs      one client that pipelines 1,000 logs requests for job J's rank 0 (default 0), then
            100 more a second, and never reads.
Against the metrics port (--metrics-port): 200 idle connections and 100 that send a request
line and then one header byte every 2 s.
Every connection that serve closes is dialled again. Prints one line of counts every 0.05 s:
`flood bytes N reconnects N (by cause) oversized N logs N metrics N`.
"""

import argparse
import errno
import os
import select
import socket
import ssl
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import python_agent as wire  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("port", type=int)
    p.add_argument("token")
    p.add_argument("--metrics-port", type=int, default=0)
    p.add_argument("--tls-ca", default="")
    p.add_argument("--logs-job", type=int, default=0)
    a = p.parse_args()
    ctx = None
    if a.tls_ca:
        ctx = ssl.create_default_context(cafile=a.tls_ca)
        ctx.check_hostname = False  # the certificate names 127.0.0.1 as an IP; verified by the CA

    def dial(port=a.port):
        c = socket.socket()
        c.setblocking(False)
        try:
            c.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        return c

    def client(name):
        """A client past hello, its socket non-blocking (TLS: wrapped)."""
        s = socket.create_connection(("127.0.0.1", a.port), timeout=30)
        if ctx:
            s = ctx.wrap_socket(s)
        s.sendall(wire.encode_frame({"type": "hello", "role": "client", "token": a.token, "name": name}))
        s.recv(4096)
        s.setblocking(False)
        return s

    hello_flight = b""
    if ctx:  # a real client's first flight, to send and then stall on
        inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
        try:
            ctx.wrap_bio(inc, out, server_side=False).do_handshake()
        except ssl.SSLWantReadError:
            pass
        hello_flight = out.read()

    idle = [dial() for _ in range(1000)]
    slow = [dial() for _ in range(300)]
    started = set()
    m_idle = [dial(a.metrics_port) for _ in range(200)] if a.metrics_port else []
    m_slow = [dial(a.metrics_port) for _ in range(100)] if a.metrics_port else []
    m_started = set()
    flood = client("flood")
    status = wire.encode_frame({"type": "status_request"}) * 1000
    big = wire.encode_frame({"type": "submit", "name": "big", "gpus": 1, "min_workers": 1, "max_workers": 1,
                             "command": ["/bin/true"] + ["x" * 60000] * 15})
    over = (2 << 20).to_bytes(4, "big") + b"\x80" * 4096  # announces 2 MiB
    oversized, oversized_sent = None, 0
    logs_conn, logs_sent = None, 0
    logs_request = wire.encode_frame({"type": "logs_request", "job_id": a.logs_job, "rank": 0, "offset": 0})
    sent = reconnects = m_reconnects = 0
    why = {}
    last_trickle = last_m_trickle = last_logs = 0.0
    pending = b""  # of the oversized client's current frame

    def send_some(c, data):
        try:
            return c.send(data)
        except (OSError, ssl.SSLError):
            return 0

    while True:
        now = time.time()
        sent += send_some(flood, status)
        # Slow peers.
        for c in slow:
            try:
                if c.fileno() not in started:
                    c.send(hello_flight if ctx else b"\x00\x10\x00\x00" + b"\x90" * 4096)
                    started.add(c.fileno())
                elif not ctx and now - last_trickle >= 5:
                    c.send(b"\x90")
            except OSError:
                pass
        if now - last_trickle >= 5:
            last_trickle = now
        for c in m_slow:
            try:
                if c.fileno() not in m_started:
                    c.send(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
                    m_started.add(c.fileno())
                elif now - last_m_trickle >= 2:
                    c.send(b"X")
            except OSError:
                pass
        if now - last_m_trickle >= 2:
            last_m_trickle = now
        # The oversized client: one frame at a time, reading serve's answers.
        try:
            if oversized is None:
                oversized = client("oversized")
            if not pending:
                oversized_sent += 1
                pending = over if oversized_sent % 10 == 0 else big
            n = send_some(oversized, pending)
            pending = pending[n:]
            try:
                if oversized.recv(65536) == b"":
                    raise ConnectionError
            except (BlockingIOError, ssl.SSLWantReadError):
                pass
        except (OSError, ssl.SSLError, ConnectionError):
            if oversized is not None:
                oversized.close()
            oversized, pending = None, b""
        # The logs client: pipelined requests, never read.
        try:
            if logs_conn is None:
                logs_conn = client("logs")
                logs_sent += send_some(logs_conn, logs_request * 1000) // len(logs_request)
            elif now - last_logs >= 1:
                logs_sent += send_some(logs_conn, logs_request * 100) // len(logs_request)
                last_logs = now
        except (OSError, ssl.SSLError):
            logs_conn = None
        # A connection serve closed is dialled again.
        for group, port, marks in ((idle, a.port, None), (slow, a.port, started),
                                   (m_idle, a.metrics_port, None), (m_slow, a.metrics_port, m_started)):
            if not group:
                continue
            poller = select.poll()
            by_fd = {c.fileno(): c for c in group}
            for fd in by_fd:
                poller.register(fd, select.POLLIN)
            for fd, _ in poller.poll(0):
                c = by_fd[fd]
                try:
                    data, end = c.recv(4096), "closed"
                except OSError as e:
                    data, end = b"", errno.errorcode.get(e.errno, str(e.errno))
                if data and port == a.port and not ctx:
                    continue  # an error frame before the close
                if data and port != a.port:
                    data = b""  # the metrics port answered (or refused): done with it
                if not data:
                    if port == a.port:
                        why[end] = why.get(end, 0) + 1
                        reconnects += 1
                    else:
                        m_reconnects += 1
                    if marks is not None:
                        marks.discard(c.fileno())
                    group[group.index(c)] = dial(port)
                    c.close()
        print(f"flood bytes {sent} reconnects {reconnects} (" + ", ".join(f"{k} {v}" for k, v in sorted(why.items()))
              + f") oversized {oversized_sent} logs {logs_sent} metrics-redials {m_reconnects}", flush=True)
        time.sleep(0.05)


if __name__ == "__main__":
    sys.exit(main())
