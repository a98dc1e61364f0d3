#!/usr/bin/env python3
"""A minimal aryl node agent in Python: the live-mode wire protocol (docs/protocol.md).

It connects to the scheduler, sends hello (role "agent"), waits for hello_ok, sends
register, then a heartbeat every few seconds, and prints every message it receives. It
starts no workers.

    /usr/bin/python3 examples/python_agent.py HOST PORT --token SECRET --gpus 8

Needs Debian's python3-msgpack. The framing functions (encode_frame, decode_body,
FrameDecoder) are importable; tests/wire/python_roundtrip.py uses them.
"""

import argparse
import select
import socket
import struct
import sys
import time

import msgpack

PROTOCOL_VERSION = 1
MAX_FRAME_BYTES = 1 << 20
MAX_STRING_BYTES = 64 * 1024
MAX_LIST = 4096
MAX_MAP = 1024


class ProtocolError(Exception):
    """A frame the peer should not have sent; the connection is to be closed."""


def encode_frame(msg):
    """The frame of `msg`, a dict with "type" and the message's fields ("v" is added)."""
    body = msgpack.packb({"v": PROTOCOL_VERSION, **msg}, use_bin_type=True)
    if len(body) > MAX_FRAME_BYTES:
        raise ProtocolError(f"frame of {len(body)} bytes exceeds the {MAX_FRAME_BYTES}-byte limit")
    return struct.pack(">I", len(body)) + body


def decode_body(body):
    """The message dict of one frame body (without "v"); ProtocolError if it is malformed."""
    try:
        msg = msgpack.unpackb(body, raw=False, max_str_len=MAX_STRING_BYTES,
                              max_bin_len=MAX_STRING_BYTES, max_ext_len=MAX_STRING_BYTES,
                              max_array_len=MAX_LIST, max_map_len=MAX_MAP)
    except msgpack.ExtraData:
        raise ProtocolError("trailing bytes in frame") from None
    except (ValueError, msgpack.UnpackException) as e:
        raise ProtocolError(f"malformed msgpack body: {e}") from None
    if not isinstance(msg, dict):
        raise ProtocolError("body is not a msgpack map")
    version = msg.pop("v", None)
    if version != PROTOCOL_VERSION:
        raise ProtocolError(f"protocol version {version} not supported (this is {PROTOCOL_VERSION})")
    if not isinstance(msg.get("type"), str):
        raise ProtocolError("field 'type' must be a string")
    return msg


class FrameDecoder:
    """Splits a byte stream into frames: feed() bytes in any chunking, then iterate."""

    def __init__(self, max_frame_bytes=MAX_FRAME_BYTES):
        self._buf = bytearray()
        self._max = max_frame_bytes

    def feed(self, data):
        self._buf += data

    def __iter__(self):
        """Yields each complete message; raises ProtocolError on a bad frame."""
        while len(self._buf) >= 4:
            (n,) = struct.unpack(">I", self._buf[:4])
            if n > self._max:
                raise ProtocolError(f"frame of {n} bytes exceeds the {self._max}-byte limit")
            if len(self._buf) < 4 + n:
                return
            body = bytes(self._buf[4:4 + n])
            del self._buf[:4 + n]
            yield decode_body(body)


def receive_one(sock, decoder):
    """The next message from `sock`, or None if the peer closed first."""
    while True:
        for msg in decoder:
            return msg
        data = sock.recv(65536)
        if not data:
            return None
        decoder.feed(data)


def run(host, port, token, name, gpu_type, gpus, pool, heartbeat_s):
    """Connects, registers and heartbeats until the scheduler says bye or closes."""
    sock = socket.create_connection((host, port))
    decoder = FrameDecoder()
    sock.sendall(encode_frame({"type": "hello", "role": "agent", "token": token, "name": name}))
    reply = receive_one(sock, decoder)
    print(reply, flush=True)
    if reply is None or reply["type"] != "hello_ok":
        return 1
    sock.sendall(encode_frame({"type": "register", "server": name, "gpu_type": gpu_type,
                               "gpus": gpus, "pool": pool, "workers": []}))
    seq = 0
    next_beat = time.monotonic()
    while True:
        now = time.monotonic()
        if now >= next_beat:
            seq += 1
            sock.sendall(encode_frame({"type": "heartbeat", "seq": seq}))
            next_beat = now + heartbeat_s
        readable, _, _ = select.select([sock], [], [], max(0.0, next_beat - now))
        if not readable:
            continue
        data = sock.recv(65536)
        if not data:
            print("scheduler closed the connection")
            return 0
        decoder.feed(data)
        for msg in decoder:
            if msg["type"] == "heartbeat":  # the scheduler's answer to ours: it hears us
                continue
            print(msg, flush=True)
            if msg["type"] in ("bye", "error"):
                sock.sendall(encode_frame({"type": "bye"}))
                sock.close()
                return 0 if msg["type"] == "bye" else 1


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("host")
    p.add_argument("port", type=int)
    p.add_argument("--token", required=True)
    p.add_argument("--name", default=socket.gethostname())
    p.add_argument("--gpu-type", default="a100")
    p.add_argument("--gpus", type=int, default=8)
    p.add_argument("--pool", choices=["training", "inference"], default="training")
    p.add_argument("--heartbeat-s", type=float, default=5.0)
    a = p.parse_args(argv)
    try:
        return run(a.host, a.port, a.token, a.name, a.gpu_type, a.gpus, a.pool, a.heartbeat_s)
    except (OSError, ProtocolError) as e:
        print(f"python_agent: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
