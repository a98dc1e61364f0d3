#!/usr/bin/python3
"""Prints the constants of the synthetic workload (runtime/inputs/synthetic_workload.cpp) as
derived from the Philly trace: the size mix, the duration quantiles per size class (linear
interpolation between order statistics, numpy's default) and the submissions per hour of day.

  scripts/synthetic_constants.py PHILLY_CSV      (e.g. ../shared/traces/philly-sia/philly.csv)
"""
import collections
import csv
import sys

LEVELS = [0, .01, .05, .1, .2, .3, .4, .5, .6, .7, .8, .9, .95, .98, .99, .995, .999, 1]
CLASSES = {'1': lambda g: g == 1, '2': lambda g: g == 2, '4': lambda g: g == 4,
           '8': lambda g: g == 8, '>=12': lambda g: g >= 12}


def quantile(xs, q):
    h = (len(xs) - 1) * q
    i = int(h)
    return xs[-1] if i + 1 >= len(xs) else xs[i] + (h - i) * (xs[i + 1] - xs[i])


def main(path):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    print(len(rows), "jobs")
    sizes = collections.Counter(int(r['num_gpus']) for r in rows)
    print("sizes", sorted(sizes.items()))
    hours = collections.Counter(int(r['timestamp'][11:13]) for r in rows)
    print("per hour", [hours[h] for h in range(24)])
    for name, member in CLASSES.items():
        d = sorted(float(r['duration']) for r in rows if member(int(r['num_gpus'])))
        print(name, len(d), [round(quantile(d, q), 1) for q in LEVELS])


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
