#!/usr/bin/python3
"""Checks that every citation of a docs page names a page that exists, and every quoted section
title after it a heading of that page: `docs/round.md, "The steps"`, `docs/protocol.md
("register")`, `docs/preemption.md, "Backfill", "Starved jobs"`. A title matches a heading that
contains it, or a bold label that opens a line or a list item (`- **Backfill** ...`), as
sections are named on these pages (case-insensitive, backticks ignored). Citations may wrap
across comment lines.

  scripts/check_doc_refs.py [PATH...]     files or folders; default: the source tree, docs, configs,
                                          scripts, tests, deploy, examples and README.md
Prints FILE:LINE: what is wrong, one line each; exits 1 if any.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT = ["actors", "runtime", "solvers", "scripts", "tests", "configs", "deploy", "examples", "docs",
           "CMakeLists.txt", "README.md"]
SUFFIXES = (".cpp", ".hpp", ".h", ".py", ".sh", ".txt", ".cmake", ".yaml", ".yml", ".md", ".json")
CITE = re.compile(r"docs/[a-z0-9_/-]+\.md")
# A string continued on the next line ("...md,"  " \"Title\""), and a line break inside a comment.
CONTINUED = re.compile(r'"[ \t]*\n[ \t]*"')
WRAP = re.compile(r'\n[ \t]*(?:///|//|#|\*)?[ \t]*')


def headings(page, cache={}):
    if page not in cache:
        with open(os.path.join(ROOT, page), encoding="utf-8") as f:
            names = []
            for line in f:
                if line.startswith("#"):
                    names.append(line.lstrip("#"))
                else:
                    m = re.match(r"\s*(?:[-*]|\d+\.)?\s*\*\*(.+?)\*\*", line)
                    if m:
                        names.append(m.group(1))
            cache[page] = [n.replace("`", "").strip().lower() for n in names]
    return cache[page]


def titles_after(text):
    """The quoted titles right after a citation: `, "A"`, ` ("A"`, `, "A", "B"`."""
    found, i = [], 0
    while True:
        m = re.match(r'[,;]?\s*\(?\s*"([A-Za-z`][^"\n]{0,100})"', text[i:])
        if not m:
            return found
        found.append(m.group(1))
        i += m.end()


def check_file(path, problems):
    try:
        with open(path, encoding="utf-8") as f:
            raw = f.read()
    except (UnicodeDecodeError, OSError):
        return
    rel = os.path.relpath(path, ROOT)
    text = raw.replace('\\"', '"')
    for m in CITE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        page = m.group(0)
        if not os.path.isfile(os.path.join(ROOT, page)):
            problems.append(f"{rel}:{line}: cites {page}, which does not exist")
            continue
        after = WRAP.sub(" ", CONTINUED.sub("", text[m.end():m.end() + 400]))
        for title in titles_after(after):
            want = title.replace("`", "").strip().lower()
            if not any(want in h for h in headings(page)):
                problems.append(f'{rel}:{line}: cites {page}, "{title}": no such heading there')


def walk(target, problems):
    if os.path.isfile(target):
        check_file(target, problems)
        return
    for d, dirs, files in os.walk(target):
        dirs[:] = [x for x in dirs if not x.startswith(".") and x not in ("corpus", "regressions", "build")]
        for name in sorted(files):
            if name.endswith(SUFFIXES):
                check_file(os.path.join(d, name), problems)


def main(args):
    problems = []
    for t in args or [os.path.join(ROOT, p) for p in DEFAULT]:
        walk(t, problems)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
