#!/usr/bin/python3
"""The shipped Grafana dashboard and Prometheus alert rules work against a real run: every
panel's and every rule's PromQL returns data from a real Prometheus scraping a testbed.

    test_live_dashboard.py --aryl BUILD/aryl --source SOURCE_DIR [--dir TMP]

`promtool check rules` accepts deploy/prometheus/aryl-rules.yml and `promtool check config`
the example deploy/prometheus/prometheus.yml. Then on loopback: `aryl serve` (two tenants with
quotas, two training agents and one inference agent of 2 GPUs, speedup 10, /metrics on port 0),
and Debian's Prometheus (127.0.0.1 port 0, its own data folder, scrape and rule evaluation every
second, the shipped rule file). While Prometheus scrapes: inference demand 0 (the inference
server is loaned), six jobs of both tenants (more than the cluster holds at once), t1 cordoned
and resumed, demand 1 (the loan is reclaimed). Once every job ended and a few more scrapes came,
each expression of deploy/grafana/aryl.json's panels, and the expression of each alert rule
without its threshold, is queried over the run (query_range, 1 s step): each must return a
series with at least one number (not NaN). No process is left, no port bound. Exits 77 (CTest:
skipped) without Debian's prometheus package.
"""

import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from live_harness import check, main, read, wait_for  # noqa: E402
from serve_bed import Bed  # noqa: E402

DEADLINE_S = 200


def query_range(port, expr, start, end):
    q = urllib.parse.urlencode({"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": "1"})
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/query_range?{q}", timeout=10) as r:
        body = json.loads(r.read())
    if body.get("status") != "success":
        return None, body.get("error", "no status")
    return body["data"]["result"], ""


def numbers(result):
    return sum(1 for series in result for _, v in series.get("values", []) if not math.isnan(float(v)))


def run(a, work, procs):
    rules = os.path.join(a.source, "deploy", "prometheus", "aryl-rules.yml")
    dashboard = os.path.join(a.source, "deploy", "grafana", "aryl.json")
    r = subprocess.run(["promtool", "check", "rules", rules], capture_output=True, text=True)
    check(r.returncode == 0, f"promtool check rules accepts {rules} ({r.stdout.strip()[-200:]} {r.stderr.strip()[-200:]})")
    example = os.path.join(work, "prometheus-example")
    os.makedirs(example)
    shutil.copy(os.path.join(a.source, "deploy", "prometheus", "prometheus.yml"), example)
    shutil.copy(rules, example)
    r = subprocess.run(["promtool", "check", "config", os.path.join(example, "prometheus.yml")], capture_output=True,
                       text=True)
    check(r.returncode == 0, f"promtool check config accepts the example prometheus.yml ({r.stderr.strip()[-200:]})")

    bed = Bed(a, work, procs, "live-dashboard-test-token")
    metrics_file = os.path.join(bed.dir, "metrics.port")
    serve = bed.serve(["--no-workload", "--servers", "2", "--set", "cluster.training.gpus_per_server=2",
                       "--set", "cluster.inference.servers=1", "--set", "cluster.inference.gpus_per_server=2",
                       "--set", "tenants.a.quota=2", "--set", "tenants.b.quota=2", "--speedup", "10",
                       "--set", "jobs.restart_overhead_s=0", "--set", "jobs.scale_overhead_s=0",
                       "--metrics-port", "0", "--metrics-port-file", metrics_file])
    if not serve:
        return None
    ports = [bed.port]
    bed.agent("t0", 2)
    bed.agent("t1", 2)
    bed.agent("i0", 2, pool="inference", gpu_type="T4")
    if not bed.run_starts():
        return ports
    metrics_port = int(read(metrics_file))
    ports.append(metrics_port)

    prom_dir = os.path.join(work, "prometheus")
    os.makedirs(prom_dir)
    with open(os.path.join(prom_dir, "prometheus.yml"), "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                f"rule_files:\n  - {rules}\n"
                f"scrape_configs:\n  - job_name: aryl\n    static_configs:\n"
                f"      - targets: ['127.0.0.1:{metrics_port}']\n")
    prom_log = os.path.join(prom_dir, "prometheus.log")
    procs.start("prometheus", ["prometheus", f"--config.file={prom_dir}/prometheus.yml",
                               f"--storage.tsdb.path={prom_dir}/data", "--web.listen-address=127.0.0.1:0"], prom_log)
    listening = lambda: re.search(r'msg="Listening on" address=127\.0\.0\.1:(\d+)', read(prom_log))  # noqa: E731
    if not check(wait_for(listening, 30, "Prometheus to listen"), "Prometheus listens"):
        return ports
    prom_port = int(listening().group(1))
    ports.append(prom_port)
    began = time.time()

    def scraped():
        try:
            got, _ = query_range(prom_port, "up", time.time() - 30, time.time())
            return got and got[0]["values"] and got[0]["values"][-1][1] == "1"
        except OSError:
            return False

    check(wait_for(scraped, 30, "a scrape"), "Prometheus scrapes serve's /metrics")

    # The run the panels are to show: a loan, jobs of both tenants, a cordon, a reclaim.
    check(bed.client("demand", "0").returncode == 0, "demand 0: the inference server may be loaned")
    ids = []
    for i in range(6):
        got = bed.submit("--name", f"j{i}", "--gpus", "1", "--duration", str(30 + 10 * i), "--tenant", "ab"[i % 2])
        check(isinstance(got, int), f"job j{i} is submitted ({got})")
        ids.append(got)
    check(bed.client("cordon", "t1", "--reason", "dashboard test").returncode == 0, "t1 is cordoned")
    time.sleep(3)
    check(bed.client("resume", "t1").returncode == 0, "t1 is resumed")
    time.sleep(2)
    check(bed.client("demand", "1").returncode == 0, "demand 1: the loan is reclaimed")

    def all_ended():
        s = bed.client("status", "--all", "--json")
        if s.returncode != 0:
            return False
        jobs = json.loads(s.stdout).get("jobs", [])
        return len(jobs) >= 6 and not any(j.get("state") in ("queued", "running") for j in jobs)

    check(wait_for(all_ended, 90, "every job's end"), "every job ends")
    time.sleep(4)  # a few scrapes and rule evaluations after the last end
    end = time.time()

    panels = json.loads(read(dashboard)).get("panels", [])
    check(len(panels) >= 10, f"the dashboard has its panels ({len(panels)})")
    for p in panels:
        for t in p.get("targets", []):
            result, error = query_range(prom_port, t["expr"], began, end)
            check(result is not None and numbers(result) > 0,
                  f"panel '{p['title']}': {t['expr']} returns data ({error or f'{numbers(result or [])} numbers'})")
    text = read(rules)
    exprs = re.findall(r"^\s*expr: (.*)$", text, re.M)
    check(len(exprs) >= 4, f"the rule file has its alerts ({len(exprs)})")
    for e in exprs:
        measured = re.sub(r"\s*(==|!=|>=|<=|>|<)\s*[0-9.]+\s*$", "", e)
        result, error = query_range(prom_port, measured, began, end)
        check(result is not None and numbers(result) > 0,
              f"rule {e}: {measured} returns data ({error or f'{numbers(result or [])} numbers'})")
    rules_api = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{prom_port}/api/v1/rules", timeout=10).read())
    loaded = [r for g in rules_api["data"]["groups"] for r in g["rules"]]
    check(len(loaded) == len(exprs) and all(r.get("health") == "ok" for r in loaded),
          f"Prometheus loaded every rule and evaluates it without error "
          f"({[(r.get('name'), r.get('health'), r.get('lastError')) for r in loaded]})")
    bed.stop(serve)
    return ports


if __name__ == "__main__":
    if not shutil.which("prometheus") or not shutil.which("promtool"):
        print("skipped: Debian's prometheus package is not installed (scripts/setup.sh installs it)")
        sys.exit(77)
    sys.exit(main("live-dashboard", DEADLINE_S, run, ("serve.log", "../prometheus/prometheus.log")))
