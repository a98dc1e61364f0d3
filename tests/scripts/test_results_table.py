"""scripts/experiments.sh and scripts/results_table.py on the small trace: the parameters
results.md prints are the runs' own (config.json), not assumed by the script.

  test_results_table.py --aryl build/aryl --source . TEST_NAME
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

ARGS = None


def expect(ok, message):
    if not ok:
        raise AssertionError(message)


def experiments(tmp, **env):
    """Runs experiments.sh on tests/e2e/data/small.csv into tmp; returns (work, results.md text)."""
    work, out = os.path.join(tmp, "work"), os.path.join(tmp, "out")
    e = dict(os.environ, ARYL=ARGS.aryl, TRACE="tests/e2e/data/small.csv", FORMAT="canonical",
             INFERENCE="tests/e2e/data/small_demand.csv", INFERENCE_FORMAT="canonical", WORK=work, OUT=out, JOBS="2")
    e.update(env)
    r = subprocess.run(["bash", os.path.join(ARGS.source, "scripts", "experiments.sh")], cwd=ARGS.source,
                       env=e, capture_output=True, text=True)
    expect(r.returncode == 0, f"experiments.sh exited {r.returncode}\n{r.stderr[-3000:]}")
    with open(os.path.join(out, "results.md")) as f:
        return work, f.read()


def results_md_prints_the_runs_settings(tmp):
    # Two setups that differ only in what the runs were given: each results.md must print its own.
    for train, infer, extra, wanted in [
            ("2", "1", "", ["2 servers x 8 V100", "1 servers x 8 T4", "times 0.66 when", "restart overhead 60 s",
                            "50% elastic"]),
            ("3", "2", "--set model.cross_server_eff=0.5 --set jobs.restart_overhead_s=7 --set gpu_speed.T4=0.4",
             ["3 servers x 8 V100", "2 servers x 8 T4 (speed 0.4 of a V100)", "times 0.5 when",
              "restart overhead 7 s"])]:
        sub = os.path.join(tmp, f"{train}-{infer}")
        _, text = experiments(sub, TRAIN=train, INFER=infer, EXTRA=extra)
        for w in wanted:
            expect(w in text, f"results.md of TRAIN={train} INFER={infer} EXTRA={extra!r} lacks {w!r}")


def expect_refused_by_name(tmp, work, run, key):
    """Changes `key` in run `run`'s config.json; results_table.py must then refuse the runs, naming both."""
    path = os.path.join(work, run, "config.json")
    cfg = json.load(open(path))
    cfg[key] += 1
    json.dump(cfg, open(path, "w"))
    r = subprocess.run([sys.executable, os.path.join(ARGS.source, "scripts", "results_table.py"), work,
                        os.path.join(tmp, "again.md")], capture_output=True, text=True)
    expect(r.returncode != 0, f"results_table.py accepted {run} with a different {key}")
    expect(run in r.stderr and key in r.stderr, f"the error should name the run and the key:\n{r.stderr[-2000:]}")


def a_main_run_with_other_settings_is_refused_by_name(tmp):
    # Parameters are printed once per window: a run that ran with different settings would make
    # them false for it, so the table refuses to mix it in.
    work, _ = experiments(tmp, TRAIN="2", INFER="1")
    expect_refused_by_name(tmp, work, "main-w0-fifo", "jobs.scale_overhead_s")


def a_seed_run_with_other_settings_is_refused_by_name(tmp):
    # The seed table compares each seed's runs with the main runs' setup: a seed run that differs
    # in anything but its seed is refused, and the table names the seeds it was given.
    work, text = experiments(tmp, TRAIN="2", INFER="1", SEEDS="3")
    expect("seeds 1 to 3" in text and "| whole trace (evaluation) |" in text,
           "results.md lacks the seed table of SEEDS=3:\n" + text[-3000:])
    expect_refused_by_name(tmp, work, "seed-w0-3-srtf", "jobs.restart_overhead_s")
    r = subprocess.run(["bash", os.path.join(ARGS.source, "scripts", "experiments.sh")], cwd=ARGS.source,
                       env=dict(os.environ, ARYL=ARGS.aryl, SEEDS="0", WORK=os.path.join(tmp, "w0"), OUT=tmp),
                       capture_output=True, text=True)
    expect(r.returncode != 0 and "SEEDS='0'" in r.stderr, f"SEEDS=0 should be refused by name:\n{r.stderr[-2000:]}")


TESTS = [results_md_prints_the_runs_settings, a_main_run_with_other_settings_is_refused_by_name,
         a_seed_run_with_other_settings_is_refused_by_name]

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--aryl", required=True)
    p.add_argument("--source", required=True)
    p.add_argument("test", choices=[t.__name__ for t in TESTS])
    ARGS = p.parse_args()
    ARGS.aryl = os.path.abspath(ARGS.aryl)
    if not shutil.which("gnuplot"):
        print("skipped: experiments.sh draws its plots with gnuplot, which is not installed")
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="aryl-results-table-")
    try:
        dict((t.__name__, t) for t in TESTS)[ARGS.test](tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("ok")
