#!/usr/bin/env bash
# Installs the Debian packages named as arguments that are not installed yet (apt-get, as root or
# through sudo). Options before the names go to apt-get install (e.g. --no-install-recommends).
# Used by scripts/setup.sh and scripts/setup_pytorch.sh.
set -euo pipefail
options=()
while [ $# -gt 0 ] && [[ "$1" == -* ]]; do options+=("$1"); shift; done
missing=()
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${options[@]}" "${missing[@]}"
fi
