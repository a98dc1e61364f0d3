#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with Debian's clang (ASan + UBSan) into build-fuzz and
# fuzzes each for a while, starting from a temporary copy of its seed corpus and saved regressions
# (the repository is never written). Prints, per target, the inputs tried, the time, the corpus at
# the end (seeds and kept inputs) and the findings (crash, sanitizer report, contract violation,
# timeout, out-of-memory, leak), whose inputs are kept in build-fuzz/findings/<target>/. Exits
# non-zero on any finding. See docs/reliability.md.
#
#   scripts/fuzz.sh [--smoke] [--time S] [--keep-going] [--corpus-only] [--jobs N] [target...]
#
#   --smoke        20 s per target (CI); default 300 s
#   --time S       S seconds per target
#   --keep-going   do not stop at the first finding (libFuzzer -fork=1 -ignore_*): collects several
#   --corpus-only  start from the seed corpus only, not from tests/fuzz/regressions
#   --jobs N       build jobs (default 2)
#   target         e.g. solve or fuzz_solve; default: every target built
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=300
keep_going=0
with_regressions=1
build_jobs=2
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --smoke) seconds=20 ;;
    --time) seconds="$2"; shift ;;
    --keep-going) keep_going=1 ;;
    --corpus-only) with_regressions=0 ;;
    --jobs) build_jobs="$2"; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("${1#fuzz_}") ;;
  esac
  shift
done

command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found (scripts/setup.sh installs it)" >&2; exit 2; }
flags="-fsanitize=fuzzer-no-link,address,undefined,float-cast-overflow -fno-sanitize-recover=all"
flags+=" -fno-omit-frame-pointer -gline-tables-only"
build_start=$(date +%s)
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DARYL_FUZZ=ON \
  -DARYL_FUZZ_ENGINE=libfuzzer -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
cmake --build build-fuzz --target fuzz_targets -j"$build_jobs"
echo "fuzz.sh: build $(( $(date +%s) - build_start )) s"

if [ ${#targets[@]} -eq 0 ]; then
  for bin in build-fuzz/tests/fuzz/fuzz_*; do
    [ -f "$bin" ] && [ -x "$bin" ] && targets+=("$(basename "${bin#build-fuzz/tests/fuzz/fuzz_}")")
  done
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/aryl-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
total_findings=0
summary=()
for t in "${targets[@]}"; do
  bin="build-fuzz/tests/fuzz/fuzz_$t"
  [ -x "$bin" ] || { echo "fuzz.sh: no target fuzz_$t" >&2; exit 2; }
  corpus="$work/$t/corpus"
  findings="build-fuzz/findings/$t"
  mkdir -p "$corpus"
  rm -rf "$findings" && mkdir -p "$findings"
  for dir in "tests/fuzz/corpus/$t" $([ "$with_regressions" = 1 ] && echo "tests/fuzz/regressions/$t"); do
    if [ -d "$dir" ]; then cp -r "$dir"/. "$corpus"/; fi
  done
  args=(-max_total_time="$seconds" -max_len=4096 -timeout=5 -rss_limit_mb=2048 -malloc_limit_mb=2048
        -dict=tests/fuzz/fuzz.dict -print_final_stats=1 -artifact_prefix="$findings/")
  if [ "$keep_going" = 1 ]; then
    args+=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  fi
  log="$work/$t/log"
  start=$(date +%s)
  rc=0
  # The outer timeout only guards against libFuzzer itself hanging. TMPDIR: the targets' scratch
  # folders go inside $work, so even a crashed run leaves nothing behind.
  TMPDIR="$work/$t" timeout $((seconds + 120)) "$bin" "${args[@]}" "$corpus" >"$log" 2>&1 || rc=$?
  elapsed=$(( $(date +%s) - start ))
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || true)
  if [ -z "$execs" ]; then  # fork mode prints no final stats: take the last status line
    execs=$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#' || true)
  fi
  found=$(find "$findings" -type f | wc -l)
  # libFuzzer adds each new interesting input to the first corpus folder: seeds included.
  corpus_size=$(find "$corpus" -type f | wc -l)
  if [ "$found" -eq 0 ] && [ "$rc" -ne 0 ]; then
    found=1  # no input saved, but the fuzzer failed: keep its log as the finding
    cp "$log" "$findings/exit-$rc.log"
  elif [ "$found" -gt 0 ]; then
    cp "$log" "$findings/fuzzer.log"
  fi
  if [ "$found" -gt 0 ]; then
    grep -m3 -E 'FUZZ CONTRACT|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error|SUMMARY' "$log" |
      sed "s/^/  [$t] /" || true
  fi
  total_findings=$((total_findings + found))
  line=$(printf '%-16s %12s execs %5s s  %6s in corpus  %s finding(s)' "$t" "${execs:-?}" "$elapsed" "$corpus_size" "$found")
  [ "$found" -gt 0 ] && line+="  -> $findings/"
  summary+=("$line")
done

echo "fuzz.sh: ${seconds} s per target$([ "$keep_going" = 1 ] && echo ', keep going')"
printf '%s\n' "${summary[@]}"
if [ "$total_findings" -gt 0 ]; then
  echo "fuzz.sh: findings; reproduce with build-fuzz/tests/fuzz/fuzz_<target> <input>" >&2
  exit 1
fi
