#!/usr/bin/python3
"""`aryl serve` over TLS: real clients in two languages speak it, agents run jobs over it, a
plain-text client is refused in words it can read, and plain TCP stays on loopback.

    test_live_tls.py --aryl BUILD/aryl --source SOURCE_DIR [--dir TMP]

A CA, a server certificate for IP 127.0.0.1 signed by it, another CA and a certificate naming
another host are made at test time with the `openssl` CLI. Then:
  - `serve --bind 0.0.0.0` without TLS is refused before it binds (no port file), naming
    --tls-cert and --insecure; --tls-cert without --tls-key is refused naming the missing flag;
  - serve with --tls-cert/--tls-key on 127.0.0.1 port 0; agent t0 verifies it through
    ARYL_TLS_CA and registers;
  - (a) Python's ssl module completes hello and a status request, verifying the certificate
    and its IP address;
  - (b) `aryl status --tls-ca` lists t0;
  - (c) a job submitted through a client config file (ARYL_CONFIG: addr, token_file, tls_ca,
    no flags) runs on the agent to `done` in jobs.csv;
  - (d) a plain-text `aryl status` is refused with "speaks TLS only", a raw plain socket reads
    that refusal as an error frame, serve logs each naming the peer; a peer that stalls its
    handshake is closed at the hello deadline; serve keeps serving;
  - `aryl status` with another CA fails naming the server and the verifier's reason; against a
    certificate naming another host it fails with "IP address mismatch";
  - serve with --tls-ca as well (mutual TLS): a client without a certificate of the CA is
    refused, an agent and a client with one (--tls-cert/--tls-key) get through.
Every process is stopped by its pid on every way out; no port stays bound.
"""

import http.client
import os
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time
import urllib.request

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from live_harness import check, main, read, wait_for  # noqa: E402
from serve_bed import Bed  # noqa: E402

DEADLINE_S = 120
TOKEN = "live-tls-test-token-0123456789"


# ---- a little msgpack, enough for hello, status_request, bye and their answers --------------

def pack(x):
    if isinstance(x, bool):
        return b"\xc3" if x else b"\xc2"
    if isinstance(x, int):
        return bytes([x]) if 0 <= x < 128 else b"\xcf" + struct.pack(">Q", x)
    if isinstance(x, str):
        b = x.encode()
        return (bytes([0xa0 | len(b)]) if len(b) < 32 else b"\xd9" + bytes([len(b)])) + b
    if isinstance(x, dict):
        return bytes([0x80 | len(x)]) + b"".join(pack(k) + pack(v) for k, v in x.items())
    raise TypeError(x)


def frame(fields):
    body = pack({"v": 1, **fields})
    return struct.pack(">I", len(body)) + body


def unpack(b, i=0):
    """(value, next index) of the msgpack value at b[i]."""
    t = b[i]
    fixed = {0xc0: None, 0xc2: False, 0xc3: True}
    if t in fixed:
        return fixed[t], i + 1
    if t < 0x80:
        return t, i + 1
    if t >= 0xe0:
        return t - 256, i + 1
    if 0xa0 <= t <= 0xbf or t in (0xd9, 0xda, 0xdb):
        n, i = ((t & 0x1f, i + 1) if t <= 0xbf else
                (int.from_bytes(b[i + 1:i + 1 + (1 << (t - 0xd9))], "big"), i + 1 + (1 << (t - 0xd9))))
        return b[i:i + n].decode(), i + n
    ints = {0xcc: (1, ">B"), 0xcd: (2, ">H"), 0xce: (4, ">I"), 0xcf: (8, ">Q"), 0xd0: (1, ">b"), 0xd1: (2, ">h"),
            0xd2: (4, ">i"), 0xd3: (8, ">q"), 0xca: (4, ">f"), 0xcb: (8, ">d")}
    if t in ints:
        n, f = ints[t]
        return struct.unpack(f, b[i + 1:i + 1 + n])[0], i + 1 + n
    if 0x80 <= t <= 0x8f or t in (0xde, 0xdf) or 0x90 <= t <= 0x9f or t in (0xdc, 0xdd):
        is_map = t <= 0x8f or t in (0xde, 0xdf)
        if t <= 0x9f:
            n, i = t & 0x0f, i + 1
        else:
            w = 2 if t in (0xdc, 0xde) else 4
            n, i = int.from_bytes(b[i + 1:i + 1 + w], "big"), i + 1 + w
        out = {} if is_map else []
        for _ in range(n):
            k, i = unpack(b, i)
            if is_map:
                v, i = unpack(b, i)
                out[k] = v
            else:
                out.append(k)
        return out, i
    raise ValueError(f"msgpack type 0x{t:02x} not handled")


def read_frame(s):
    def exactly(n):
        data = b""
        while len(data) < n:
            more = s.recv(n - len(data))
            if not more:
                raise ConnectionError("closed")
            data += more
        return data
    (n,) = struct.unpack(">I", exactly(4))
    return unpack(exactly(n))[0]


# ---- certificates ------------------------------------------------------------------------

def make_certs(d):
    """Paths of: the CA, the server's cert and key (IP 127.0.0.1), another CA, and a cert and
    key signed by the CA naming only another host. None if openssl failed."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    p = {k: os.path.join(d, k) for k in ("ca.pem", "ca.key", "server.pem", "server.key", "server.csr", "other.pem",
                                          "other.key", "elsewhere.pem", "elsewhere.key", "elsewhere.csr",
                                          "client.pem", "client.key", "client.csr", "ip.ext", "dns.ext",
                                          "ops.pem", "ops.key", "ops.csr", "t0.pem", "t0.key", "t0.csr")}
    with open(p["ip.ext"], "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    with open(p["dns.ext"], "w") as f:
        f.write("subjectAltName=DNS:elsewhere.example\n")
    steps = [
        ["req", "-x509", *ec, "-keyout", p["ca.key"], "-out", p["ca.pem"], "-days", "2", "-subj", "/CN=aryl test CA"],
        ["req", "-x509", *ec, "-keyout", p["other.key"], "-out", p["other.pem"], "-days", "2", "-subj",
         "/CN=another CA"],
        ["req", *ec, "-keyout", p["server.key"], "-out", p["server.csr"], "-subj", "/CN=aryl serve"],
        ["x509", "-req", "-in", p["server.csr"], "-CA", p["ca.pem"], "-CAkey", p["ca.key"], "-CAcreateserial",
         "-out", p["server.pem"], "-days", "2", "-extfile", p["ip.ext"]],
        ["req", *ec, "-keyout", p["elsewhere.key"], "-out", p["elsewhere.csr"], "-subj", "/CN=elsewhere"],
        ["x509", "-req", "-in", p["elsewhere.csr"], "-CA", p["ca.pem"], "-CAkey", p["ca.key"], "-CAcreateserial",
         "-out", p["elsewhere.pem"], "-days", "2", "-extfile", p["dns.ext"]],
        ["req", *ec, "-keyout", p["client.key"], "-out", p["client.csr"], "-subj", "/CN=aryl client"],
        ["x509", "-req", "-in", p["client.csr"], "-CA", p["ca.pem"], "-CAkey", p["ca.key"], "-CAcreateserial",
         "-out", p["client.pem"], "-days", "2"],
    ]
    for name in ("ops", "t0"):  # identities by certificate: the CN is the name
        steps += [["req", *ec, "-keyout", p[f"{name}.key"], "-out", p[f"{name}.csr"], "-subj", f"/CN={name}"],
                  ["x509", "-req", "-in", p[f"{name}.csr"], "-CA", p["ca.pem"], "-CAkey", p["ca.key"],
                   "-CAcreateserial", "-out", p[f"{name}.pem"], "-days", "2"]]
    for s in steps:
        r = subprocess.run(["openssl", *s], capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            return check(False, f"openssl {' '.join(s)}: {r.stderr.strip()[-300:]}") and None
    return p


# ---- the test ----------------------------------------------------------------------------

def run(a, work, procs):
    bed = Bed(a, work, procs, TOKEN)
    certs = make_certs(bed.dir)
    if not certs:
        return None
    # A clean environment: no ARYL_* of the caller's, no client config file of its home.
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ARYL_") and k != "XDG_CONFIG_HOME"}
    clean["HOME"] = work

    def aryl(*args, env=None):
        try:
            return subprocess.run([bed.aryl, *args], capture_output=True, text=True, timeout=30, env=env or clean)
        except subprocess.TimeoutExpired:  # killed by subprocess.run
            return subprocess.CompletedProcess(args, None, "", "timed out after 30 s")

    # Plain TCP beyond loopback is refused before anything binds. Should a serve bind anyway, it
    # is killed as soon as it says so (its port file).
    port_file = os.path.join(bed.dir, "refused.port")
    refused_log = os.path.join(bed.dir, "refused.log")
    p = procs.start("serve on 0.0.0.0", [
        bed.aryl, "serve", "--bind", "0.0.0.0", "--port", "0", "--port-file", port_file, "--token-file", bed.token,
        "--no-workload", "--servers", "1", "--set", "cluster.inference.servers=0", "--work-dir",
        os.path.join(bed.dir, "refused"), "--out", os.path.join(work, "refused-out")], refused_log, env=clean)
    wait_for(lambda: os.path.exists(port_file) or p.poll() is not None, 20, "serve --bind 0.0.0.0 to end")
    bound = os.path.exists(port_file)
    if p.poll() is None:
        p.kill()
    p.wait()
    text = read(refused_log)
    check(p.returncode == 2 and "--bind 0.0.0.0 is not a loopback address" in text and "--insecure" in text
          and "--tls-cert" in text, f"serve --bind 0.0.0.0 without TLS is refused naming the way out ({text!r})")
    check(not bound and "listening" not in text, "it refuses before binding")
    r = aryl("serve", "--tls-cert", certs["server.pem"], "--token-file", bed.token, "--no-workload")
    check(r.returncode == 2 and "--tls-key is missing" in r.stderr, f"--tls-cert alone is refused ({r.stderr!r})")

    serve = bed.serve(["--no-workload", "--servers", "1", "--set", "cluster.training.gpus_per_server=8",
                       "--set", "cluster.inference.servers=0", "--speedup", "10", "--set", "jobs.restart_overhead_s=0",
                       "--set", "jobs.scale_overhead_s=0", "--set", "live.hello_timeout_s=2",
                       "--tls-cert", certs["server.pem"], "--tls-key",
                       certs["server.key"], "--metrics-port", "0", "--metrics-port-file",
                       os.path.join(bed.dir, "metrics.port"), "--metrics-tls"])
    if not serve:
        return None
    serve_log = os.path.join(bed.dir, "serve.log")
    check("(TLS)" in read(serve_log), "serve says it listens with TLS")
    # The metrics port speaks HTTPS with the listener's certificate, and only that.
    metrics_port = int(read(os.path.join(bed.dir, "metrics.port")) or 0)
    try:
        ctx = ssl.create_default_context(cafile=certs["ca.pem"])
        page = urllib.request.urlopen(f"https://127.0.0.1:{metrics_port}/metrics", timeout=10, context=ctx).read()
        check(b"aryl_agents" in page, "GET https://.../metrics answers over TLS, verified against the CA")
    except (OSError, ValueError) as e:
        check(False, f"GET https://.../metrics: {e!r}")
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).read()
        check(False, "plain GET /metrics on the HTTPS port is not answered")
    except (OSError, ValueError, http.client.HTTPException):
        check(True, "plain GET /metrics on the HTTPS port is not answered")
    folder = os.path.join(bed.dir, "agent-t0")
    os.makedirs(folder)
    procs.start("agent t0", [bed.aryl, "agent", "--port", str(bed.port), "--token-file", bed.token, "--name", "t0",
                             "--gpu-type", "V100", "--gpus", "8", "--work-dir", folder],
                os.path.join(folder, "agent.log"), env=dict(clean, ARYL_TLS_CA=certs["ca.pem"]))
    if not bed.run_starts():
        return [bed.port]

    # (a) A client in another language, from docs/protocol.md: Python's ssl, verifying.
    try:
        ctx = ssl.create_default_context(cafile=certs["ca.pem"])
        with socket.create_connection(("127.0.0.1", bed.port), timeout=10) as raw:
            with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
                s.sendall(frame({"type": "hello", "role": "client", "token": TOKEN, "name": "python-ssl"}))
                ok = read_frame(s)
                s.sendall(frame({"type": "status_request"}))
                reply = read_frame(s)
                s.sendall(frame({"type": "bye"}))
        check(ok.get("type") == "hello_ok", f"Python ssl: hello answered hello_ok ({ok})")
        check(reply.get("type") == "status_reply" and [v["name"] for v in reply["servers"]] == ["t0"],
              f"Python ssl: status_reply lists t0 ({reply})")
    except (OSError, ValueError, ssl.SSLError) as e:
        check(False, f"Python ssl client: {e!r}")

    # (b) aryl status over TLS.
    where = ["--port", str(bed.port), "--token-file", bed.token]
    r = aryl("status", *where, "--tls-ca", certs["ca.pem"])
    check(r.returncode == 0 and "t0" in r.stdout, f"aryl status --tls-ca lists t0 (rc {r.returncode}: {r.stderr})")

    # (c) A job through a client config file alone, run by the agent over TLS.
    config = os.path.join(bed.dir, "client.yaml")
    with open(config, "w") as f:
        f.write(f"addr: 127.0.0.1:{bed.port}\ntoken_file: token\ntls_ca: ca.pem\n")
    with_config = dict(clean, ARYL_CONFIG=config)
    r = aryl("submit", "--name", "over-tls", "--gpus", "8", "--duration", "20", env=with_config)
    check(r.returncode == 0 and r.stdout.strip() == "0", f"submit through ARYL_CONFIG gets id 0 ({r.stdout} {r.stderr})")

    def idle():
        s = aryl("status", "--json", env=with_config)
        return s.returncode == 0 and '"jobs": []' in s.stdout
    check(wait_for(idle, 40, "the job to end"), "the job ran over TLS to its end")

    # (d) Plain text against the TLS listener: refused in words the client reads; serve goes on.
    r = aryl("status", *where)
    check(r.returncode == 2 and "speaks TLS only" in r.stderr and f"127.0.0.1:{bed.port}" in r.stderr,
          f"a plain-text aryl status is refused naming the server ({r.stderr.strip()})")
    try:
        with socket.create_connection(("127.0.0.1", bed.port), timeout=10) as s:
            s.sendall(frame({"type": "hello", "role": "client", "token": TOKEN, "name": "plain"}))
            refusal = read_frame(s)
        check(refusal.get("type") == "error" and "speaks TLS only" in refusal.get("reason", ""),
              f"a raw plain socket reads the refusal as an error frame ({refusal})")
    except (OSError, ValueError) as e:
        check(False, f"plain socket: {e!r}")
    check(wait_for(lambda: read(serve_log).count("TLS handshake failed: the peer does not speak TLS") >= 2, 10,
                   "serve's log lines"), "serve logs each plain-text refusal")
    line = next((x for x in read(serve_log).splitlines() if "does not speak TLS" in x), "")
    check("(127.0.0.1:" in line, f"the log line names the peer ({line})")
    # A peer that starts a TLS handshake and stalls is dropped at the hello deadline.
    try:
        with socket.create_connection(("127.0.0.1", bed.port), timeout=10) as s:
            s.sendall(b"\x16\x03\x01")
            began = time.monotonic()
            try:
                data = s.recv(100)  # b"" once serve closes
            except ConnectionResetError:
                data = b""
            waited = time.monotonic() - began
        check(data == b"" and 1 <= waited < 6,
              f"a stalled TLS handshake is closed at the 2 s hello deadline (after {waited:.1f} s, read {data!r})")
    except OSError as e:
        check(False, f"stalled handshake: {e!r}")
    check(wait_for(lambda: "closing: no hello within 2 s of connecting" in read(serve_log), 5, "the log line"),
          "serve logs the stalled peer's end")
    # Past the budget of closes before hello (10 at once) a plain connection would be silenced;
    # a TLS one is closed all the same, as a handshake cannot be left half done.
    stalled = []
    try:
        for _ in range(20):
            s = socket.create_connection(("127.0.0.1", bed.port), timeout=10)
            s.sendall(b"\x16\x03\x01")
            stalled.append(s)
        began = time.monotonic()
        ended = 0
        for s in stalled:
            s.settimeout(max(0.1, 8 - (time.monotonic() - began)))
            try:
                ended += s.recv(100) == b""
            except ConnectionResetError:
                ended += 1
            except socket.timeout:
                pass
        check(ended == 20, f"20 stalled TLS handshakes at once are all closed at the deadline ({ended} were)")
    except OSError as e:
        check(False, f"stalled handshakes: {e!r}")
    finally:
        for s in stalled:
            s.close()
    check("silenced" not in read(serve_log), "no TLS connection is silenced")
    r = aryl("status", *where, "--tls-ca", certs["ca.pem"])
    check(r.returncode == 0 and serve.poll() is None, "serve keeps serving after the plain-text and stalled peers")

    # A server this client must not trust: another CA; a certificate naming another host.
    folder = os.path.join(bed.dir, "agent-t9")
    os.makedirs(folder)
    stray = procs.start("agent t9", [bed.aryl, "agent", "--port", str(bed.port), "--token-file", bed.token, "--name",
                                     "t9", "--tls-ca", certs["other.pem"], "--work-dir", folder],
                        os.path.join(folder, "agent.log"))
    check(wait_for(lambda: "certificate verify failed" in read(os.path.join(folder, "agent.log")), 10,
                   "the agent's refusal"), "an agent trusting another CA says the handshake failed: " +
          next((x for x in read(os.path.join(folder, "agent.log")).splitlines() if "TLS" in x), "(no line)"))
    stray.terminate()
    check(stray.wait(timeout=10) == 0, "it stops on SIGTERM")
    r = aryl("status", *where, "--tls-ca", certs["other.pem"])
    check(r.returncode == 2 and f"127.0.0.1:{bed.port}: TLS handshake failed: certificate verify failed" in r.stderr,
          f"status with another CA fails naming the server ({r.stderr.strip()})")
    check(wrong_name_refused(bed, certs, aryl), "a certificate naming another host is refused")

    if not bed.stop(serve):
        return [bed.port]
    rows = bed.rows("jobs.csv")
    check(len(rows) == 1 and rows[0]["outcome"] == "done", f"jobs.csv has the job, done ({rows})")
    first_port = bed.port
    return [first_port, *mutual_tls(bed, certs, aryl, clean, procs), *certificate_identities(bed, certs, aryl, clean,
                                                                                             procs)]


def mutual_tls(bed, certs, aryl, clean, procs):
    """serve --tls-ca: a peer without a certificate of the CA is refused; an agent and a client
    with one get through. Returns the port serve bound."""
    serve = bed.serve(["--no-workload", "--servers", "1", "--set", "cluster.training.gpus_per_server=8",
                       "--set", "cluster.inference.servers=0", "--tls-cert", certs["server.pem"], "--tls-key",
                       certs["server.key"], "--tls-ca", certs["ca.pem"]], log="mtls.log")
    if not serve:
        return []
    mine = ["--tls-cert", certs["client.pem"], "--tls-key", certs["client.key"]]
    folder = os.path.join(bed.dir, "agent-t0-mtls")
    os.makedirs(folder)
    procs.start("agent t0 (mutual TLS)", [bed.aryl, "agent", "--port", str(bed.port), "--token-file", bed.token,
                                          "--name", "t0", "--gpus", "8", "--work-dir", folder, *mine],
                os.path.join(folder, "agent.log"), env=dict(clean, ARYL_TLS_CA=certs["ca.pem"]))
    if not bed.run_starts(log="mtls.log"):
        return [bed.port]
    where = ["--port", str(bed.port), "--token-file", bed.token, "--tls-ca", certs["ca.pem"]]
    r = aryl("status", *where)
    check(r.returncode == 2 and f"127.0.0.1:{bed.port}" in r.stderr and "certificate" in r.stderr,
          f"mutual TLS: a client without a certificate is refused naming serve ({r.stderr.strip()})")
    check(wait_for(lambda: "TLS handshake failed" in read(os.path.join(bed.dir, "mtls.log")), 5, "serve's line"),
          "serve logs the refused handshake: " + next(
              (x for x in read(os.path.join(bed.dir, "mtls.log")).splitlines() if "TLS handshake failed" in x), ""))
    r = aryl("status", *where, *mine)
    check(r.returncode == 0 and "t0" in r.stdout, f"mutual TLS: an agent and a client with one get through ({r.stderr})")
    r = aryl("status", "--port", str(bed.port), "--token-file", bed.token, *mine)
    check(r.returncode == 2 and "give --tls-ca" in r.stderr, f"--tls-cert without --tls-ca is refused ({r.stderr})")
    bed.stop(serve, "serve (mutual TLS)")
    return [bed.port]


def certificate_identities(bed, certs, aryl, clean, procs):
    """serve --identities with mutual TLS: an agent and an admin present only certificates
    whose CN names them (no token file anywhere); a certificate of the CA naming no identity is
    refused. Returns the port serve bound."""
    ids = os.path.join(bed.dir, "identities")
    for name, role in (("ops", "admin"), ("t0", "agent")):
        r = aryl("token", "create", name, "--role", role, "--cert", "--identities", ids)
        check(r.returncode == 0 and f"CN={name}" in r.stdout, f"token create {name} --cert ({r.stdout}{r.stderr})")
    bed.serve_auth = ["--identities", ids]
    serve = bed.serve(["--no-workload", "--servers", "1", "--set", "cluster.training.gpus_per_server=8",
                       "--set", "cluster.inference.servers=0", "--tls-cert", certs["server.pem"], "--tls-key",
                       certs["server.key"], "--tls-ca", certs["ca.pem"]], log="ids.log")
    bed.serve_auth = ["--token-file", bed.token]
    if not serve:
        return []
    folder = os.path.join(bed.dir, "agent-t0-ids")
    os.makedirs(folder)
    procs.start("agent t0 (certificate)", [bed.aryl, "agent", "--port", str(bed.port), "--name", "t0", "--gpus", "8",
                                           "--work-dir", folder, "--tls-cert", certs["t0.pem"], "--tls-key",
                                           certs["t0.key"]],
                os.path.join(folder, "agent.log"), env=dict(clean, ARYL_TLS_CA=certs["ca.pem"]))
    if not bed.run_starts(log="ids.log"):
        return [bed.port]
    where = ["--port", str(bed.port), "--tls-ca", certs["ca.pem"]]
    r = aryl("status", *where, "--tls-cert", certs["ops.pem"], "--tls-key", certs["ops.key"])
    check(r.returncode == 0 and "t0" in r.stdout, f"certificate identities: ops and agent t0 need no token ({r.stderr})")
    r = aryl("token", "list", *where, "--tls-cert", certs["ops.pem"], "--tls-key", certs["ops.key"])
    check(r.returncode == 0 and "ops admin cert" in r.stdout, f"ops is an admin by its certificate ({r.stdout}{r.stderr})")
    r = aryl("status", *where, "--tls-cert", certs["client.pem"], "--tls-key", certs["client.key"])
    check(r.returncode != 0 and "certificate for 'aryl client': no such identity" in r.stderr,
          f"a certificate of the CA naming no identity is refused ({r.stderr.strip()})")
    bed.stop(serve, "serve (identities)")
    return [bed.port]


def wrong_name_refused(bed, certs, aryl):
    """`aryl status` against a TLS server (Python's, on 127.0.0.1) whose certificate is the
    CA's but names elsewhere.example only."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(certs["elsewhere.pem"], certs["elsewhere.key"])
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve_once():
        listener.settimeout(20)
        try:
            conn, _ = listener.accept()
            with conn:
                conn.settimeout(10)
                try:
                    ctx.wrap_socket(conn, server_side=True).close()
                except (OSError, ssl.SSLError):
                    pass  # the client refuses the certificate
        except OSError:
            pass

    t = threading.Thread(target=serve_once, daemon=True)
    t.start()
    try:
        r = aryl("status", "--port", str(port), "--token-file", bed.token, "--tls-ca", certs["ca.pem"])
    finally:
        t.join(25)
        listener.close()
    print(f"    ({r.stderr.strip()})", flush=True)
    return r.returncode == 2 and "IP address mismatch" in r.stderr


if __name__ == "__main__":
    sys.exit(main("live-tls", DEADLINE_S, run, ("serve.log", "agent-t0/agent.log")))
