"""scripts/check_doc_refs.py: the source tree cites only docs pages and headings that exist, and a
citation of a missing page or heading fails naming the file and line.

  test_doc_refs.py --aryl build/aryl --source . TEST_NAME
"""
import argparse
import os
import subprocess
import sys
import tempfile

ARGS = None


def expect(ok, message):
    if not ok:
        print("FAILED: " + message)
        sys.exit(1)


def check(*paths):
    script = os.path.join(ARGS.source, "scripts", "check_doc_refs.py")
    return subprocess.run([sys.executable, script, *paths], capture_output=True, text=True)


def the_source_tree_cites_existing_pages_and_headings(tmp):
    r = check()
    expect(r.returncode == 0 and r.stdout == "", f"check_doc_refs.py found broken citations:\n{r.stdout}{r.stderr}")


def a_missing_page_or_heading_fails_by_file_and_line(tmp):
    # The citations are assembled here so that this file itself cites nothing that is missing.
    missing, round_page = "docs/" + "no_such_page.md", "docs/" + "round.md"
    src = os.path.join(tmp, "cites.cpp")
    with open(src, "w") as f:
        f.write('// fine: docs/round.md, "The steps"; docs/preemption.md, "Backfill", "Starved jobs"\n'
                f"// a page that is not there: {missing}\n"
                f'/// a heading that is not there ({round_page},\n/// "No such heading"): wrapped\n')
    r = check(src)
    expect(r.returncode == 1, f"expected exit 1, got {r.returncode}:\n{r.stdout}{r.stderr}")
    lines = r.stdout.splitlines()
    expect(len(lines) == 2, f"expected two problems, got:\n{r.stdout}")
    expect(lines[0].endswith(f"cites.cpp:2: cites {missing}, which does not exist"), lines[0])
    expect(lines[1].endswith(f'cites.cpp:3: cites {round_page}, "No such heading": no such heading there'), lines[1])


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--aryl")
    p.add_argument("--source", required=True)
    p.add_argument("test")
    ARGS = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        globals()[ARGS.test](tmp)
    print("ok")
