#!/usr/bin/python3
"""`aryl history` asked of a running serve, page by page, on a large database: runs the statements
serve's pages run (runtime/live/history_reader.cpp: the filter, `AND id > LAST ORDER BY id LIMIT
1000`) through Python's sqlite3, and each filter once unpaged, and checks that the pages' rows are
the unpaged query's. Serve refuses a simulation's database, so the statements run here directly.

  KEEP=DIR scripts/bench_history.sh            # writes DIR/history.db (1,000,000 jobs)
  scripts/bench_history_pages.py DIR/history.db [--page 1000]

Prints, per filter: pages, rows, the pages' total time, the unpaged query's time, the slowest page.
"""
import argparse
import json
import sqlite3
import sys
import time

COLUMNS = ("id, name, user, tenant, state, outcome, submit_us, start_us, end_us, queued_s, gpus, exits, "
           "attempts")
DAY_US = 86400 * 1000000


def filters(start_unix_us, speedup):
    def sim(unix_us):
        return int((unix_us - start_unix_us) * speedup)
    # The filters of docs/performance.md, "Job history": (label, SQL after WHERE 1, bindings).
    return [
        ("--outcome timeout --since 1970-01-20", " AND outcome IN (?) AND end_us >= ?", ["timeout", sim(19 * DAY_US)]),
        ("--tenant t3", " AND tenant IN (?)", ["t3"]),
        ("(every job)", "", []),
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db")
    ap.add_argument("--page", type=int, default=1000, help="jobs per page (serve's: 1000)")
    a = ap.parse_args()
    try:
        db = sqlite3.connect(f"file:{a.db}?mode=ro", uri=True)
        if db.execute("SELECT value FROM meta WHERE key = 'format'").fetchone() != ("aryl-state",):
            raise ValueError("no aryl-state format in meta")
        row = db.execute("SELECT value FROM meta WHERE key = 'run'").fetchone()
        # A simulation's database has no run record: its clock starts at 0, speedup 1.
        run = json.loads(row[0]) if row else {"start_unix_us": 0, "speedup": 1}
    except (sqlite3.Error, TypeError, ValueError, KeyError) as e:
        sys.exit(f"bench_history_pages: {a.db}: not an aryl state file or simulation database ({e})")
    print(f"| filter | pages | rows | pages' total (s) | one query (s) | slowest page (ms) |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, where, binds in filters(run["start_unix_us"], run["speedup"]):
        base = f"SELECT {COLUMNS} FROM history WHERE 1{where}"
        t0 = time.monotonic()
        whole = db.execute(base + " ORDER BY id", binds).fetchall()
        one = time.monotonic() - t0
        paged, pages, slowest, last = [], 0, 0.0, None
        t0 = time.monotonic()
        while True:
            t1 = time.monotonic()
            sql = base + (f" AND id > {last}" if last is not None else "") + f" ORDER BY id LIMIT {a.page}"
            rows = db.execute(sql, binds).fetchall()
            slowest = max(slowest, time.monotonic() - t1)
            pages += 1
            paged += rows
            if len(rows) < a.page:
                break
            last = rows[-1][0]
        total = time.monotonic() - t0
        if paged != whole:
            sys.exit(f"bench_history_pages: {label}: the pages' rows differ from the one query's")
        print(f"| `{label}` | {pages} | {len(paged):,} | {total:.2f} | {one:.2f} | {slowest * 1000:.0f} |")


if __name__ == "__main__":
    main()
