#!/usr/bin/python3
"""Times the scheduler's answers while a live run goes on: one client connection sends
status_request COUNT times, INTERVAL_S apart, and prints the round trips' p50, p99 and max in
milliseconds. Uses Debian's /usr/bin/python3 with python3-msgpack.

    bench_live_probe.py PORT TOKEN_FILE COUNT INTERVAL_S
"""
import os
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import python_agent as wire  # noqa: E402  (the protocol's Python framing)


def main(argv):
    port, token_file, count, interval = int(argv[1]), argv[2], int(argv[3]), float(argv[4])
    token = open(token_file).read().strip()
    sock = socket.create_connection(("127.0.0.1", port))
    decoder = wire.FrameDecoder()
    sock.sendall(wire.encode_frame({"type": "hello", "role": "client", "token": token, "name": "bench"}))
    if wire.receive_one(sock, decoder)["type"] != "hello_ok":
        sys.exit("bench: hello refused")
    rtts = []
    for _ in range(count):
        start = time.perf_counter()
        sock.sendall(wire.encode_frame({"type": "status_request"}))
        reply = wire.receive_one(sock, decoder)
        rtts.append((time.perf_counter() - start) * 1000)
        if reply is None or reply["type"] != "status_reply":
            sys.exit(f"bench: no status ({reply})")
        time.sleep(interval)
    sock.sendall(wire.encode_frame({"type": "bye"}))
    rtts.sort()
    def pick(q):  # numpy.percentile's default, linear between the closest ranks: summary.json's definition
        h = q * (len(rtts) - 1)
        lo = int(h)
        return rtts[lo] if lo + 1 >= len(rtts) else rtts[lo] + (h - lo) * (rtts[lo + 1] - rtts[lo])
    print(f"status_rtt_ms p50 {pick(0.5):.2f} p99 {pick(0.99):.2f} max {rtts[-1]:.2f} n {len(rtts)}")


if __name__ == "__main__":
    main(sys.argv)
