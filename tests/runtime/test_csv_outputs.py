"""aryl's CSV outputs read back with Python's csv module (RFC 4180): job names holding commas,
quotes and edge spaces come back as written, every row has the header's fields.

  test_csv_outputs.py --aryl build/aryl --source .
"""
import argparse
import csv
import os
import subprocess
import sys
import tempfile

# Legal canonical job ids (quoted where the trace needs it) and the names they stand for.
NAMES = {
    '"a,b"': "a,b",
    '"say ""hi"""': 'say "hi"',
    '" padded "': " padded ",
    '"x,""y"",z"': 'x,"y",z',
    "plain": "plain",
}


def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.reader(f, strict=True))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--aryl", required=True)
    ap.add_argument("--source", required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="aryl-csv-") as work:
        trace = os.path.join(work, "names.csv")
        with open(trace, "w") as f:
            f.write("job_id,submit_s,gpus,duration_s\n")
            for i, quoted in enumerate(NAMES):
                f.write(f"{quoted},{i * 10},1,100\n")
        out = os.path.join(work, "out")
        r = subprocess.run([args.aryl, "simulate", "--trace", trace, "--set", "cluster.inference.servers=0",
                            "--quiet", "--out", out], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"aryl simulate exited {r.returncode}:\n{r.stdout}{r.stderr}")
        failures = []
        for name in ("jobs.csv", "timeline.csv"):
            rows = read_rows(os.path.join(out, name))
            width = len(rows[0])
            for n, row in enumerate(rows[1:], start=2):
                if len(row) != width:
                    failures.append(f"{name} row {n}: {len(row)} fields, the header has {width}: {row}")
        jobs = list(csv.DictReader(open(os.path.join(out, "jobs.csv"), newline="")))
        got = sorted(j["name"] for j in jobs)
        want = sorted(NAMES.values())
        if got != want:
            failures.append(f"jobs.csv names {got!r}, expected {want!r}")
        if failures:
            sys.exit("\n".join(failures))
    print("ok")


if __name__ == "__main__":
    main()
