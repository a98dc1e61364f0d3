#!/usr/bin/python3
"""A client's job carries its tenant over the wire; `aryl status` shows each tenant's quota,
use, loans and queue; an unknown tenant is refused by name.

    test_live_tenants.py --aryl BUILD/aryl --source SOURCE_DIR [--dir TMP]

On loopback: `aryl serve --no-workload --speedup 6`, one training agent t0 of 4 GPUs, tenants
prod and research with a quota of 2 GPUs each (both lend and borrow). Job wide (prod, 4 GPUs,
30 s) is submitted, then job next (prod, 4 GPUs, 30 s), then a job for tenant ghost.

Checks: ghost is refused with an error naming it and the configured tenants; while wide runs
status lists it with tenant prod, and the tenants section says prod: quota 2, in use 4,
borrowed 2, queued 1 (next), research: quota 2, in use 0, lent 2; the text table has the
TENANT column and section; `aryl show` gives the tenant (text and JSON); both jobs end done and
jobs.csv records their tenant. No process is left, no port bound.
"""

import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from live_harness import check, job, main, wait_for  # noqa: E402
from serve_bed import Bed  # noqa: E402

DEADLINE_S = 120


def tenant(status, name):
    for t in (status or {}).get("tenants", []):
        if t["name"] == name:
            return t
    return {}


def run(a, work, procs):
    bed = Bed(a, work, procs, "live-tenants-test-token")
    serve = bed.serve(["--no-workload", "--servers", "1", "--set", "cluster.training.gpus_per_server=4",
                       "--set", "cluster.inference.servers=0", "--speedup", "6",
                       "--set", "tenants.prod.quota=2", "--set", "tenants.research.quota=2",
                       "--set", "jobs.restart_overhead_s=0", "--set", "jobs.scale_overhead_s=0",
                       "--set", "run.check_invariants=true"])
    if not serve:
        return None
    bed.agent("t0", 4)
    if not bed.run_starts():
        return [bed.port]

    ghost = bed.submit("--name", "lost", "--gpus", "1", "--duration", "30", "--tenant", "ghost")
    check(isinstance(ghost, str) and "unknown tenant 'ghost'" in ghost and "prod, research" in ghost,
          f"a job for an unknown tenant is refused naming it and the configured ones ({ghost})")

    wide = bed.submit("--name", "wide", "--gpus", "4", "--duration", "30", "--tenant", "prod")
    if not check(wide == 0, f"wide gets id 0 ({wide})"):
        return [bed.port]
    if not check(wait_for(lambda: job(bed.status(), 0).get("state") == "running", 20, "wide to run"),
                 "wide runs on the idle cluster, borrowing research's quota"):
        return [bed.port]
    nxt = bed.submit("--name", "next", "--gpus", "4", "--duration", "30", "--tenant", "prod")
    check(nxt == 1, f"next gets id 1 ({nxt})")
    wait_for(lambda: tenant(bed.status(), "prod").get("queued") == 1, 5, "next to be queued")
    s = bed.status()
    print(f"status: {s}", flush=True)
    check(job(s, 0).get("tenant") == "prod" and job(s, 1).get("tenant") == "prod",
          f"status lists each job's tenant ({s and s['jobs']})")
    prod, research = tenant(s, "prod"), tenant(s, "research")
    check((prod.get("quota"), prod.get("in_use"), prod.get("borrowed"), prod.get("lent"), prod.get("queued"))
          == (2, 4, 2, 0, 1), f"prod: quota 2, 4 in use, 2 borrowed, none lent, 1 queued ({prod})")
    check((research.get("quota"), research.get("in_use"), research.get("borrowed"), research.get("lent"),
           research.get("queued")) == (2, 0, 0, 2, 0),
          f"research: quota 2, none in use, 2 lent, none queued ({research})")

    text = bed.client("status").stdout
    print(text, flush=True)
    check("TENANT" in text and "BORROWED" in text and any(
        line.split()[:6] == ["prod", "2", "4", "0", "2", "1"] for line in text.splitlines()),
        "the status table has a tenants section with prod's row")
    shown = bed.client("show", "0").stdout
    check("Tenant=prod" in shown, f"show gives the tenant ({shown})")
    shown_json = bed.client("show", "0", "--json").stdout
    check('"tenant": "prod"' in shown_json, f"show --json gives the tenant ({shown_json})")

    if not check(wait_for(bed.idle, 40, "both jobs to end"), "both jobs end"):
        return [bed.port]
    if not bed.stop(serve):
        return [bed.port]
    rows = {r["name"]: (r["outcome"], r["tenant"]) for r in bed.rows("jobs.csv")}
    check(rows == {"wide": ("done", "prod"), "next": ("done", "prod")},
          f"jobs.csv has both jobs done with their tenant ({rows})")
    return [bed.port]


if __name__ == "__main__":
    sys.exit(main("live-tenants", DEADLINE_S, run, ("serve.log", "agent-t0/agent.log")))
