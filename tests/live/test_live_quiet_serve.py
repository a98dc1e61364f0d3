#!/usr/bin/python3
"""serve's threads sleep between messages: a steady trickle of client requests does not keep
them polling.

    test_live_quiet_serve.py --aryl BUILD/aryl --source SOURCE_DIR [--dir TMP]

On loopback: `aryl serve --no-workload`, training agents t0 and t1 (heartbeats), and one client
connection asking a status every 20 ms. Over 2 s of that trickle (about 100 requests) serve's
threads are counted from /proc: each time one blocked (voluntary context switches) and the CPU
they used.

Checks: every request is answered; serve's threads block fewer than 3,000 times a second in all
(a status is a few hand-offs between threads: network, driver loop, actors); serve uses under a
fifth of a core. CAF's work-stealing scheduler, which polls its queue every 50 us for 500 polls
after each message, blocked 14,235 times a second here at 23% of a core, and fails both. No
process is left, no port bound.
"""

import os
import socket
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from live_harness import check, main  # noqa: E402
from serve_bed import Bed  # noqa: E402

DEADLINE_S = 90


def thread_costs(pid):
    """(times blocked, CPU seconds) summed over a process's threads."""
    blocked, ticks = 0, 0
    task = f"/proc/{pid}/task"
    for tid in os.listdir(task):
        try:
            with open(f"{task}/{tid}/status") as f:
                blocked += sum(int(line.split()[1]) for line in f if line.startswith("voluntary_ctxt_switches"))
            with open(f"{task}/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
                ticks += int(fields[11]) + int(fields[12])  # utime, stime
        except FileNotFoundError:
            pass  # a thread that ended meanwhile
    return blocked, ticks / os.sysconf("SC_CLK_TCK")


def run(a, work, procs):
    sys.path.insert(0, os.path.join(a.source, "examples"))
    import python_agent as wire

    bed = Bed(a, work, procs, "quiet-serve-test-token")
    serve = bed.serve(["--no-workload", "--servers", "2", "--set", "cluster.training.gpus_per_server=4",
                       "--set", "cluster.inference.servers=0"])
    if not serve:
        return None
    bed.agent("t0", 4)
    bed.agent("t1", 4)
    if not bed.run_starts():
        return [bed.port]
    token = open(bed.token).read().strip()
    with socket.create_connection(("127.0.0.1", bed.port), timeout=10) as s:
        decoder = wire.FrameDecoder()
        s.sendall(wire.encode_frame({"type": "hello", "role": "client", "token": token, "name": "trickle"}))
        check(wire.receive_one(s, decoder)["type"] == "hello_ok", "the client is greeted")

        def ask():
            s.sendall(wire.encode_frame({"type": "status_request"}))
            return wire.receive_one(s, decoder)["type"] == "status_reply"

        for _ in range(10):  # warm-up: the actors and the connection are set up
            ask()
            time.sleep(0.02)
        blocked0, cpu0 = thread_costs(serve.pid)
        start = time.monotonic()
        answered = asked = 0
        while time.monotonic() - start < 2:
            asked += 1
            answered += ask()
            time.sleep(0.02)
        seconds = time.monotonic() - start
        blocked1, cpu1 = thread_costs(serve.pid)
        s.sendall(wire.encode_frame({"type": "bye"}))
    rate, share = (blocked1 - blocked0) / seconds, (cpu1 - cpu0) / seconds
    print(f"{asked} statuses in {seconds:.1f} s: serve's threads blocked {rate:.0f} times a second, "
          f"used {100 * share:.0f}% of a core")
    check(answered == asked, f"every status is answered ({answered} of {asked})")
    check(rate < 3000, f"serve's threads block fewer than 3,000 times a second (got {rate:.0f})")
    check(share < 0.2, f"serve uses under a fifth of a core (got {100 * share:.0f}%)")
    bed.stop(serve)
    return [bed.port]


if __name__ == "__main__":
    sys.exit(main("quiet-serve", DEADLINE_S, run, ["serve.log", "agent-t0/agent.log", "agent-t1/agent.log"]))
