#!/usr/bin/python3
"""The rendezvous store of aryl's torchrun jobs: a c10d TCPStore that no job's machine hosts.

    rdzv_store.py [--bind ADDR] [--port P] [--port-file FILE]

Run it beside `aryl serve` (or on any machine outside the jobs, with the same torch as the
agents' machines) and give its HOST:PORT to serve as `live.rdzv_endpoint`: every torchrun that
aryl starts meets its job's other nodes there (`--rdzv_backend=c10d --rdzv_conf is_host=false`),
each job under its own `--rdzv_id`, so losing any machine of a job leaves its rendezvous intact
(docs/live.md, "Elastic jobs through torchrun"). Port 0 (the default) lets the OS choose; the port
is written to --port-file once the store listens. Runs until SIGTERM or SIGINT, then exits 0.
"""

import argparse
import os
import signal
import sys
from datetime import timedelta


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bind", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="port (default 0: the OS chooses)")
    p.add_argument("--port-file", help="write the port here once listening")
    a = p.parse_args()
    try:
        from torch.distributed import TCPStore
    except ImportError:
        print("rdzv_store.py: this python3 has no torch (Debian: python3-torch; scripts/setup_pytorch.sh)",
              file=sys.stderr)
        return 2
    try:
        store = TCPStore(a.bind, a.port, is_master=True, wait_for_workers=False, timeout=timedelta(seconds=30))
    except (RuntimeError, ValueError) as e:
        print(f"rdzv_store.py: cannot listen on {a.bind}:{a.port}: {e}", file=sys.stderr)
        return 2
    if a.port_file:
        with open(a.port_file + ".tmp", "w") as f:
            f.write(f"{store.port}\n")
        os.replace(a.port_file + ".tmp", a.port_file)
    print(f"rdzv_store.py: listening on {a.bind}:{store.port}", file=sys.stderr, flush=True)
    stop = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.append(True))
    while not stop:
        signal.pause()
    return 0


if __name__ == "__main__":
    sys.exit(main())
