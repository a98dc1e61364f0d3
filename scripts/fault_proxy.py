#!/usr/bin/python3
"""A loopback TCP proxy that puts network faults between one node agent and `aryl serve`.

    fault_proxy.py --target HOST:PORT --port-file FILE [--schedule "T COMMAND [ARG]"]...

Listens on 127.0.0.1, a port the OS chooses (written to --port-file once listening); every
connection it accepts is forwarded to --target. The agent is pointed at the proxy's port
instead of serve's. Commands, one per line on standard input or at T seconds after start
(--schedule, repeatable):

    delay S       every chunk is forwarded S seconds after it arrived (0: none), both ways
    drop          closes every current connection, both sides, at once
    partition D   forwards nothing, either way, for D seconds: data, closes and new
                  connections are held (as TCP would retransmit them), then delivered
    heal          ends a partition now

Each command and connection is logged on standard error with the time since start. Only the
standard library: runs under Debian's /usr/bin/python3. Ends on SIGTERM, SIGINT or when
standard input is closed with --exit-on-eof.
"""

import argparse
import asyncio
import os
import signal
import sys
import threading
import time

BEGAN = time.monotonic()


def say(text):
    print(f"[proxy {time.monotonic() - BEGAN:7.2f}] {text}", file=sys.stderr, flush=True)


class Link:
    """The faults in force: a delay, and whether data flows (not partitioned)."""

    def __init__(self):
        self.delay_s = 0.0
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
        reading = asyncio.ensure_future(self.read(self.down_r, queue_up))
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

    async def read(self, reader, queue):
        """Everything read, stamped with when it may be sent; None at the end."""
        try:
            while chunk := await reader.read(65536):
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
        else:
            say(f"unknown command '{line.strip()}' (delay S, drop, partition D, heal)")
    except (IndexError, ValueError):
        say(f"bad command '{line.strip()}' (delay S, drop, partition D, heal)")


async def scheduled(link, at, line):
    await asyncio.sleep(max(0.0, at - (time.monotonic() - BEGAN)))
    await command(link, line)


def stdin_commands(loop, link, exit_on_eof, done):
    """On a thread of its own (a blocking read): hands each line to the event loop."""
    for line in sys.stdin:
        loop.call_soon_threadsafe(lambda l=line: asyncio.ensure_future(command(link, l)))
    if exit_on_eof:
        loop.call_soon_threadsafe(done.set)


async def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--target", required=True, help="HOST:PORT of aryl serve")
    p.add_argument("--port-file", required=True, help="where to write the port it listens on")
    p.add_argument("--schedule", action="append", default=[], metavar="'T COMMAND'",
                   help="a command T seconds after start (repeatable)")
    p.add_argument("--exit-on-eof", action="store_true", help="end when standard input is closed")
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
    await done.wait()
    server.close()
    link.heal()
    link.drop()
    say("stopped")


if __name__ == "__main__":
    asyncio.run(main())
