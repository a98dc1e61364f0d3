#!/usr/bin/env python3
"""Checks that the source tree's includes run one way (docs/architecture.md):

  solvers/  may include solvers/ only (pure: no actors, no clocks, no I/O);
  actors/   may include solvers/ and actors/ only (what the actors speak lives beside them);
  runtime/  may include any floor, but live mode's node side (runtime/node/: what runs on a
            machine, the agent, its workers and processes) and its serve side (runtime/live/:
            the gateway, journal, metrics) include each other never: they meet through
            runtime/wire/, which includes neither.

  scripts/check_layers.py [ROOT]     # exit 0 if clean; else one line per forbidden include
Tests are exempt.
"""
import os
import re
import sys

# Live mode's two sides, by room.
SIDES = {"runtime/node/": "node", "runtime/live/": "serve"}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCE = re.compile(r"\.(c|cc|cpp|h|hpp)$")


def side(path):
    """'node' for a file of runtime/node/, 'serve' for one of runtime/live/, else None."""
    for room, name in SIDES.items():
        if path.startswith(room):
            return name
    return None


def problem(path, target):
    """Why `path` may not include `target` (both relative to the root), or None."""
    floor = path.split("/")[0]
    if floor == "solvers" and not target.startswith("solvers/"):
        return "solvers/ includes only solvers/"
    if floor == "actors" and not target.startswith(("solvers/", "actors/")):
        return "actors/ includes solvers/ and actors/ only"
    if path.startswith("runtime/wire/") and side(target):
        return "runtime/wire/ is what both sides of live mode speak: it includes neither"
    a, b = side(path), side(target)
    if a and b and a != b:
        return f"live mode's {a} side meets its {b} side only through runtime/wire/"
    return None


def check(root):
    found = []
    for floor in ("solvers", "actors", "runtime"):
        for dirpath, _, files in os.walk(os.path.join(root, floor)):
            for name in sorted(files):
                if not SOURCE.search(name):
                    continue
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, root).replace(os.sep, "/")
                with open(full, encoding="utf-8", errors="replace") as f:
                    for n, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m or "/" not in m.group(1):
                            continue
                        why = problem(rel, m.group(1))
                        if why:
                            found.append(f"{rel}:{n}: includes {m.group(1)}: {why}")
    return sorted(found)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    if not os.path.isdir(os.path.join(root, "solvers")):
        print(f"check_layers: {root} has no solvers/ folder: not the source tree", file=sys.stderr)
        return 2
    found = check(root)
    for line in found:
        print(line)
    if found:
        print(f"check_layers: {len(found)} forbidden include(s) (docs/architecture.md)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
