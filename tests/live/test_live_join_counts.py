#!/usr/bin/python3
"""An agent of a GPU type the config has no speed for is refused while the others join, and a
machine that joins mid-run counts as configured in /healthz and /metrics.

    test_live_join_counts.py --aryl BUILD/aryl --source SOURCE_DIR [--dir TMP]

On loopback: `aryl serve --join 3 --no-workload --speedup 6` with /metrics; training agents
gpu-a and gpu-b (4 x V100 each) and gpu-x (4 x H100, a type with no gpu_speed entry). Once the
run has started, gpu-c (4 x V100) joins it; serve is then stopped with SIGTERM.

Checks: serve does not exit: its log says gpu-x was refused, naming the agent, its type and the
key to set (gpu_speed.H100), and the run starts on gpu-a and gpu-b, which status lists; gpu-x's
agent is told the same reason; once gpu-c has joined, /healthz says 3 of 3 agents connected
and /metrics has aryl_agents{state="configured"} 3; serve exits 0. No process is left, no port
bound.
"""

import os
import re
import sys
import urllib.request

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from live_harness import check, main, read, server, wait_for  # noqa: E402
from serve_bed import Bed  # noqa: E402

DEADLINE_S = 120


def get(port, path):
    try:
        return urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5).read().decode()
    except OSError as e:
        return f"(no answer: {e})"


def run(a, work, procs):
    bed = Bed(a, work, procs, "live-join-counts-test-token")
    metrics_file = os.path.join(bed.dir, "metrics-port")
    serve = bed.serve(["--join", "3", "--no-workload", "--speedup", "6", "--set", "run.check_invariants=true",
                       "--metrics-port", "0", "--metrics-port-file", metrics_file])
    if not serve:
        return None
    bed.agent("gpu-x", 4, gpu_type="H100")
    bed.agent("gpu-a", 4)
    bed.agent("gpu-b", 4)
    if not bed.run_starts():
        check(serve.poll() is None, f"serve goes on with the other agents (exit code {serve.poll()})")
        return [bed.port]
    log = read(os.path.join(bed.dir, "serve.log"))
    check("agent gpu-x reports GPU type H100, which the config has no speed for: set gpu_speed.H100" in log,
          "serve's log says gpu-x is refused, naming the agent, its type and the key to set")
    check("cluster.training.gpu_type" not in log, "serve's log names no key nobody set")
    s = bed.status()
    names = sorted(v["name"] for v in (s or {}).get("servers", []))
    check(names == ["gpu-a", "gpu-b"], f"the run's cluster is the two agents of a known type ({names})")
    check(wait_for(lambda: "set gpu_speed.H100" in read(os.path.join(bed.dir, "agent-gpu-x", "agent.log")), 10,
                   "gpu-x's agent to log its refusal"),
          "gpu-x's agent is told why it was refused")

    ports = [bed.port, int(read(metrics_file))]
    bed.agent("gpu-c", 4)
    if not check(wait_for(lambda: server(bed.status(), "gpu-c").get("state") == "up", 20, "gpu-c to join"),
                 "gpu-c joins the running cluster"):
        return ports
    healthz = ""

    def three_of_three():
        nonlocal healthz
        healthz = get(ports[1], "/healthz")
        return "3 of 3 agents connected" in healthz

    check(wait_for(three_of_three, 10, "/healthz to count gpu-c"),
          f"/healthz counts the joined machine as configured ({healthz.strip()})")
    text = get(ports[1], "/metrics")
    configured = re.search(r'^aryl_agents\{state="configured"\} (\d+)$', text, re.M)
    check(configured and configured.group(1) == "3",
          f"/metrics counts 3 configured agents ({configured and configured.group(0)})")
    bed.stop(serve)
    return ports


if __name__ == "__main__":
    sys.exit(main("live-join-counts", DEADLINE_S, run,
                  ("serve.log", "agent-gpu-a/agent.log", "agent-gpu-x/agent.log", "agent-gpu-c/agent.log")))
