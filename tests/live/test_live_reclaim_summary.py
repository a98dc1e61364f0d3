#!/usr/bin/python3
"""A live run's summary.json reports the reclaim latencies it measured, those of events.log and
of the /metrics histogram, also when a scheduler restart came between the reclaim and the end.

    test_live_reclaim_summary.py --aryl BUILD/aryl --source SOURCE_DIR [--dir TMP]

On loopback: `aryl serve --state --no-workload --speedup 4` with /metrics, training agent t0
and inference agent i0 of 4 GPUs each; inference demand 0 until 40 simulated s, then 1 server
(looked at every 5 s), so i0 is lent at the start and reclaimed at 40 s. Job base (4 GPUs,
inelastic) fills t0, job spill (elastic, 1 to 4 workers) runs on the lent i0 until the reclaim
stops it. Once i0 serves again, /metrics is read and serve gets SIGKILL; a second serve on the
same port and state file carries the run on and is stopped with SIGTERM.

Checks: the /metrics histogram counted one reclaim; events.log (carried on by the second serve)
has one reclaim and one return, the return later, by the histogram's sum; the second serve's
summary.json's reclaim_latency_p50_s and p99_s are the histogram's sum (to 1 ms). No process is left,
no port bound.
"""

import os
import re
import sys
import urllib.request

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from live_harness import check, main, read, wait_for  # noqa: E402
from serve_bed import Bed  # noqa: E402

DEADLINE_S = 90


def run(a, work, procs):
    bed = Bed(a, work, procs, "live-reclaim-summary-test-token")
    demand = os.path.join(work, "demand.csv")
    with open(demand, "w") as f:
        f.write("t_s,servers_needed\n0,0\n40,1\n")
    metrics_file = os.path.join(bed.dir, "metrics-port")
    args = ["--no-workload", "--state", os.path.join(bed.dir, "state.db"), "--servers", "1",
            "--set", "cluster.training.gpus_per_server=4", "--set", "cluster.inference.servers=1",
            "--set", "cluster.inference.gpus_per_server=4", "--set", f"inference.trace={demand}",
            "--set", "inference.interval_s=5", "--speedup", "4", "--set", "jobs.restart_overhead_s=0",
            "--set", "jobs.scale_overhead_s=0", "--set", "run.check_invariants=true", "--metrics-port", "0",
            "--metrics-port-file", metrics_file]
    serve = bed.serve(args)
    if not serve:
        return None
    bed.agent("t0", 4)
    bed.agent("i0", 4, pool="inference", gpu_type="T4")
    if not bed.run_starts():
        return [bed.port]
    ports = [bed.port, int(read(metrics_file))]
    if not check(wait_for(lambda: (bed.status() or {}).get("loans"), 10, "i0 to be lent"), "i0 is lent"):
        return ports
    base = bed.submit("--name", "base", "--gpus", "4", "--duration", "600")
    spill = bed.submit("--name", "spill", "--gpus", "4", "--min-workers", "1", "--max-workers", "4",
                       "--duration", "600")
    if not check(base == 0 and spill == 1, f"base and spill get ids 0 and 1 ({base}, {spill})"):
        return ports

    def spill_on_i0():
        s = bed.status() or {}
        return any(j["job_id"] == 1 and j["state"] == "running" for j in s.get("jobs", [])) and any(
            v["name"] == "i0" and v["free"] < 4 for v in s.get("servers", []))

    if not check(wait_for(spill_on_i0, 10, "spill to run on i0"), "spill runs on the lent i0"):
        return ports
    # Demand rises at 40 simulated s (10 s in); i0 serves again once spill's workers stopped.
    if not check(wait_for(lambda: (bed.status() or {}).get("loans") == [], 30, "i0 to be returned"),
                 "i0 is reclaimed and returned"):
        return ports
    text = urllib.request.urlopen(f"http://127.0.0.1:{ports[1]}/metrics", timeout=10).read().decode()
    count = re.search(r"^aryl_reclaim_latency_seconds_count (\S+)$", text, re.M)
    total = re.search(r"^aryl_reclaim_latency_seconds_sum (\S+)$", text, re.M)
    if not check(count is not None and float(count.group(1)) == 1 and total is not None,
                 f"/metrics counted one reclaim ({count and count.group(0)}, {total and total.group(0)})"):
        return ports
    serve.kill()
    serve.wait()
    os.remove(metrics_file)
    serve2 = bed.serve(args, log="serve-2.log", port=bed.port)
    if not serve2:
        return ports
    if not check(wait_for(lambda: read(metrics_file).strip(), 10, "the second serve's metrics port"),
                 "the second serve publishes its metrics port"):
        return ports
    ports.append(int(read(metrics_file)))
    if not bed.run_starts("serve-2.log") or not bed.stop(serve2, "the second serve"):
        return ports

    events = bed.events()
    reclaims = re.findall(r"^(\S+) scheduler reclaim ", events, re.M)
    returns = re.findall(r"^(\S+) scheduler return ", events, re.M)
    latency = float(total.group(1))
    if check(len(reclaims) == 1 and len(returns) == 1, f"events.log has one reclaim and one return ({reclaims}, "
                                                       f"{returns})"):
        logged = float(returns[0]) - float(reclaims[0])
        check(logged > 0 and abs(logged - latency) < 1e-3,
              f"the return comes after the reclaim, by the histogram's sum ({logged:.6f} s, {latency})")
    s = bed.summary()
    p50, p99 = s.get("reclaim_latency_p50_s"), s.get("reclaim_latency_p99_s")
    check(s.get("scheduler_restarts") == 1, f"the summary is the carried-on run's ({s.get('scheduler_restarts')} "
                                            f"scheduler restarts)")
    check(p50 is not None and abs(p50 - latency) < 1e-3,
          f"summary.json's reclaim_latency_p50_s is the measured {latency:.6f} s (got {p50})")
    check(p99 is not None and abs(p99 - latency) < 1e-3,
          f"summary.json's reclaim_latency_p99_s is the measured {latency:.6f} s (got {p99})")
    return ports


if __name__ == "__main__":
    sys.exit(main("live-reclaim-summary", DEADLINE_S, run,
                  ("serve.log", "serve-2.log", "agent-t0/agent.log", "agent-i0/agent.log")))
