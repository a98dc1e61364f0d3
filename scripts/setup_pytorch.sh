#!/usr/bin/env bash
# Installs what examples/pytorch/train.py needs from Debian: python3-torch (CPU build) and
# python3-numpy, for the system interpreter /usr/bin/python3. Idempotent: installs only what is
# missing. Run as root or as a user with sudo.
set -euo pipefail

packages=(python3 python3-torch python3-numpy)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
/usr/bin/python3 -c 'import torch, torch.distributed as d; assert d.is_available() and d.is_gloo_available(); print("torch", torch.__version__, "with gloo")'
