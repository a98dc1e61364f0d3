#!/usr/bin/env bash
# Builds if needed and runs every test; exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
cmake --build build -j2
cd build && ctest --output-on-failure -j2
