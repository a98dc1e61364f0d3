#!/usr/bin/python3
"""A loopback TCP proxy that puts network faults between one node agent and `aryl serve`.

    fault_proxy.py --target HOST:PORT --port-file FILE [--control FIFO] [--schedule "T COMMAND [ARG]"]...

Listens on 127.0.0.1, a port the OS chooses (written to --port-file once listening); every
connection it accepts is forwarded to --target. The agent is pointed at the proxy's port
instead of serve's. Commands, one per line on standard input, written to the --control FIFO
(created if missing; `echo "delay 2" > FIFO`, as scripts/live_faults.py does) or at T seconds
after start (--schedule, repeatable):

    delay S       every chunk is forwarded S seconds after it arrived (0: none), both ways
    drop          closes every current connection, both sides, at once
    partition D   forwards nothing, either way, for D seconds: data, closes and new
                  connections are held (as TCP would retransmit them), then delivered
    heal          ends a partition now
    loss P SEED   drops each heartbeat frame from the agent with probability P (0: none), drawn
                  from a random stream seeded with SEED; every other frame passes

The agent-to-serve direction is split into the protocol's frames (docs/protocol.md: a 4-byte
big-endian length, then one msgpack map), each forwarded once whole, so that a heartbeat can be
dropped without cutting the stream; `loss` needs Debian's python3-msgpack, everything else only
the standard library (Debian's /usr/bin/python3). Each command and connection is logged on
standard error with the time since start. Ends on SIGTERM, SIGINT or when standard input is
closed with --exit-on-eof; it removes a --control FIFO it created.
"""

import argparse
import asyncio
import os
import random
import signal
import stat
import struct
import sys
import threading
import time

BEGAN = time.monotonic()
MAX_FRAME_BYTES = 1 << 20  # the protocol's limit: a longer frame is passed on raw, for serve to refuse

try:
    import msgpack  # Debian's python3-msgpack: only `loss` needs it
except ImportError:
    msgpack = None


def say(text):
    print(f"[proxy {time.monotonic() - BEGAN:7.2f}] {text}", file=sys.stderr, flush=True)


class Link:
    """The faults in force: a delay, heartbeat loss, and whether data flows (not partitioned)."""

    def __init__(self):
        self.delay_s = 0.0
        self.loss = 0.0
        self.draws = random.Random(0)
        self.dropped = self.heartbeats = 0
        self.flowing = asyncio.Event()
        self.flowing.set()
        self.heal_at = None
        self.pairs = set()

    async def partition(self, seconds):
        self.flowing.clear()
        self.heal_at = time.monotonic() + seconds
        say(f"partition for {seconds:g} s")
        await asyncio.sleep(seconds)
        if self.heal_at is not None and time.monotonic() >= self.heal_at - 1e-3:
            self.heal()

    def heal(self):
        if not self.flowing.is_set():
            say("healed")
        self.heal_at = None
        self.flowing.set()

    def drop(self):
        say(f"drop: closing {len(self.pairs)} connection(s)")
        for p in list(self.pairs):
            p.close()

    def set_loss(self, p, seed):
        if p > 0 and msgpack is None:
            say(f"cannot enact 'loss {p:g}': heartbeat loss needs python3-msgpack")
            return
        if self.loss > 0:
            say(f"loss {self.loss:g} ended: {self.dropped} of {self.heartbeats} heartbeat(s) dropped")
        self.loss, self.draws = p, random.Random(seed)
        self.dropped = self.heartbeats = 0
        if p > 0:
            say(f"loss {p:g}, seed {seed}: each heartbeat from the agent dropped with that probability")

    def passes(self, frame):
        """False for a heartbeat the loss drops; one draw per heartbeat while a loss is set."""
        if self.loss <= 0:
            return True
        try:
            body = msgpack.unpackb(frame[4:], raw=False)
        except Exception:  # not ours to judge: serve refuses a bad frame itself
            return True
        if not isinstance(body, dict) or body.get("type") != "heartbeat":
            return True
        self.heartbeats += 1
        if self.draws.random() < self.loss:
            self.dropped += 1
            say(f"heartbeat {body.get('seq')} dropped ({self.dropped} of {self.heartbeats})")
            return False
        return True


class Frames:
    """Splits one direction's byte stream into whole frames (4-byte big-endian length, body).
    A length the protocol refuses (0, or over 1 MiB) ends the splitting: from there on bytes
    pass as they come, for serve to refuse them as it would without the proxy."""

    def __init__(self):
        self.buf = bytearray()
        self.raw = False

    def feed(self, chunk):
        """What `chunk` completes, in order: (bytes, True) per whole frame, (bytes, False) for
        raw bytes once a bad length was seen."""
        if self.raw:
            return [(bytes(chunk), False)]
        self.buf += chunk
        out = []
        while len(self.buf) >= 4:
            (n,) = struct.unpack(">I", self.buf[:4])
            if n == 0 or n > MAX_FRAME_BYTES:
                self.raw = True
                out.append((bytes(self.buf), False))
                self.buf.clear()
                break
            if len(self.buf) < 4 + n:
                break
            out.append((bytes(self.buf[:4 + n]), True))
            del self.buf[:4 + n]
        return out


class Pair:
    """One agent connection and its upstream connection to serve."""

    def __init__(self, link, reader, writer, target):
        self.link, self.target = link, target
        self.down_r, self.down_w = reader, writer
        self.up_r = self.up_w = None
        self.tasks = []

    async def run(self):
        peer = self.down_w.get_extra_info("peername")
        # A connection made during a partition reaches serve only once it heals.
        queue_up = asyncio.Queue()
        reading = asyncio.ensure_future(self.read(self.down_r, queue_up, Frames()))
        await self.link.flowing.wait()
        try:
            self.up_r, self.up_w = await asyncio.open_connection(*self.target)
        except OSError as e:
            say(f"{peer}: cannot reach {self.target[0]}:{self.target[1]}: {e}")
            reading.cancel()
            self.close()
            return
        say(f"{peer}: connected through")
        self.link.pairs.add(self)
        queue_down = asyncio.Queue()
        self.tasks = [reading, asyncio.ensure_future(self.write(queue_up, self.up_w)),
                      asyncio.ensure_future(self.read(self.up_r, queue_down)),
                      asyncio.ensure_future(self.write(queue_down, self.down_w))]
        await asyncio.gather(*self.tasks, return_exceptions=True)
        self.link.pairs.discard(self)
        say(f"{peer}: closed")

    async def read(self, reader, queue, frames=None):
        """Everything read, stamped with when it may be sent; None at the end. With `frames`
        (the agent's direction), whole frames only, less the heartbeats a loss drops."""
        try:
            while chunk := await reader.read(65536):
                if frames is not None:
                    chunk = b"".join(b for b, whole in frames.feed(chunk) if not whole or self.link.passes(b))
                    if not chunk:
                        continue
                await queue.put((time.monotonic() + self.link.delay_s, chunk))
        except (OSError, asyncio.CancelledError):
            pass
        await queue.put((time.monotonic() + self.link.delay_s, None))

    async def write(self, queue, writer):
        while True:
            due, chunk = await queue.get()
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            await self.link.flowing.wait()
            if chunk is None:
                break
            try:
                writer.write(chunk)
                await writer.drain()
            except (OSError, ConnectionError):
                break
        self.close()

    def close(self):
        for w in (self.down_w, self.up_w):
            if w is not None and not w.is_closing():
                w.close()
        for t in self.tasks:
            if t is not asyncio.current_task():
                t.cancel()


async def command(link, line):
    words = line.split()
    if not words:
        return
    try:
        if words[0] == "delay":
            link.delay_s = max(0.0, float(words[1]))
            say(f"delay {link.delay_s:g} s")
        elif words[0] == "drop":
            link.drop()
        elif words[0] == "partition":
            asyncio.ensure_future(link.partition(float(words[1])))
        elif words[0] == "heal":
            link.heal()
        elif words[0] == "loss":
            p = float(words[1])
            if not 0 <= p <= 1:
                raise ValueError(p)
            link.set_loss(p, int(words[2]) if len(words) > 2 else 0)
        else:
            say(f"unknown command '{line.strip()}' (delay S, drop, partition D, heal, loss P SEED)")
    except (IndexError, ValueError):
        say(f"bad command '{line.strip()}' (delay S, drop, partition D, heal, loss P SEED)")


async def scheduled(link, at, line):
    await asyncio.sleep(max(0.0, at - (time.monotonic() - BEGAN)))
    await command(link, line)


def stdin_commands(loop, link, exit_on_eof, done):
    """On a thread of its own (a blocking read): hands each line to the event loop."""
    for line in sys.stdin:
        loop.call_soon_threadsafe(lambda l=line: asyncio.ensure_future(command(link, l)))
    if exit_on_eof:
        loop.call_soon_threadsafe(done.set)


def open_control(path):
    """The --control FIFO, opened read-write: the proxy is always a writer too, so it never
    reads an end of file between two writers, and a writer's non-blocking open succeeds for as
    long as the proxy runs (and fails with ENXIO once it has ended). Returns (fd, created)."""
    created = False
    try:
        if not stat.S_ISFIFO(os.stat(path).st_mode):
            raise SystemExit(f"fault_proxy: --control {path}: exists and is not a FIFO")
    except FileNotFoundError:
        os.mkfifo(path, 0o600)
        created = True
    return os.open(path, os.O_RDWR), created


def control_commands(loop, link, fd):
    """On a thread of its own: each line written to the FIFO, to the event loop. A line is one
    write of under PIPE_BUF bytes, so writers' lines never interleave."""
    with os.fdopen(fd, "r") as f:
        for line in f:
            loop.call_soon_threadsafe(lambda l=line: asyncio.ensure_future(command(link, l)))


async def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--target", required=True, help="HOST:PORT of aryl serve")
    p.add_argument("--port-file", required=True, help="where to write the port it listens on")
    p.add_argument("--schedule", action="append", default=[], metavar="'T COMMAND'",
                   help="a command T seconds after start (repeatable)")
    p.add_argument("--exit-on-eof", action="store_true", help="end when standard input is closed")
    p.add_argument("--control", metavar="FIFO", help="a FIFO (created if missing) to read commands from")
    a = p.parse_args()
    host, _, port = a.target.rpartition(":")
    link = Link()
    plan = []
    for entry in a.schedule:
        at, _, line = entry.strip().partition(" ")
        try:
            plan.append((float(at), line))
        except ValueError:
            p.error(f"--schedule '{entry}': expected 'SECONDS COMMAND'")

    # Before the port file: whoever waits for that may write to the FIFO at once.
    control, created = open_control(a.control) if a.control else (None, False)
    server = await asyncio.start_server(
        lambda r, w: Pair(link, r, w, (host, int(port))).run(), "127.0.0.1", 0)
    listening = server.sockets[0].getsockname()[1]
    with open(a.port_file + ".tmp", "w") as f:
        f.write(f"{listening}\n")
    os.replace(a.port_file + ".tmp", a.port_file)
    say(f"listening on 127.0.0.1:{listening}, forwarding to {a.target}")

    done = asyncio.Event()
    loop = asyncio.get_running_loop()
    for s in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(s, done.set)
    for at, line in plan:
        asyncio.ensure_future(scheduled(link, at, line))
    threading.Thread(target=stdin_commands, args=(loop, link, a.exit_on_eof, done), daemon=True).start()
    if control is not None:
        threading.Thread(target=control_commands, args=(loop, link, control), daemon=True).start()
    await done.wait()
    server.close()
    link.heal()
    link.set_loss(0, 0)
    link.drop()
    if created:
        try:
            os.unlink(a.control)
        except FileNotFoundError:  # its folder went first
            pass
    say("stopped")


if __name__ == "__main__":
    asyncio.run(main())
