#!/usr/bin/env bash
# Installs aryl's build dependencies from Debian and builds Release into build/.
# Idempotent: safe to run again; it only installs what is missing and rebuilds incrementally.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake ninja-build libcaf-dev libboost-dev libmsgpack-cxx-dev
          doctest-dev libyaml-cpp-dev nlohmann-json3-dev libcli11-dev libfmt-dev
          libbenchmark-dev gnuplot-nox clang libclang-rt-14-dev python3-msgpack prometheus)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j2
