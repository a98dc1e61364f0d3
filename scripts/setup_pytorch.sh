#!/usr/bin/env bash
# Installs what examples/pytorch/train.py needs from Debian: python3-torch (CPU build) and
# python3-numpy, for the system interpreter /usr/bin/python3. Idempotent: installs only what is
# missing. Run as root or as a user with sudo.
set -euo pipefail

cd "$(dirname "$0")/.."
scripts/install_packages.sh --no-install-recommends python3 python3-torch python3-numpy
/usr/bin/python3 -c 'import torch, torch.distributed as d; assert d.is_available() and d.is_gloo_available(); print("torch", torch.__version__, "with gloo")'
