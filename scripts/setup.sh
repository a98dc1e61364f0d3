#!/usr/bin/env bash
# Installs aryl's build dependencies from Debian and builds Release into build/.
# Idempotent: safe to run again; it only installs what is missing and rebuilds incrementally.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install_packages.sh build-essential cmake ninja-build libcaf-dev libboost-dev libmsgpack-cxx-dev \
  doctest-dev libyaml-cpp-dev nlohmann-json3-dev libcli11-dev libfmt-dev libbenchmark-dev gnuplot-nox \
  clang libclang-rt-14-dev python3-msgpack python3-yaml prometheus libsqlite3-dev libssl-dev openssl

# ARYL_WERROR=1 (CI): compiler warnings are errors.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DARYL_WERROR="$([ "${ARYL_WERROR:-0}" = 1 ] && echo ON || echo OFF)"
cmake --build build -j2
