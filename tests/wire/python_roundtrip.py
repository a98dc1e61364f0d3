#!/usr/bin/python3
"""Interop check of the wire protocol, run by test_wire_python (tests/wire/test_python_interop.cpp).

    /usr/bin/python3 tests/wire/python_roundtrip.py IN OUT

IN holds the frames C++ encoded from tests/wire/samples.hpp. Each is decoded with the
framing code of examples/python_agent.py and compared, values and Python types, with
EXPECTED below (the same messages written as Python dicts). Then EXPECTED is encoded the
Python way (keys in reverse order, an unknown extra field, optional fields as None or
absent, whole numbers as ints) into OUT, for C++ to decode and compare.
Exit status: 0 all equal, 1 a difference (printed), 2 usage, 77 no msgpack module.
"""

import os
import sys

try:
    import msgpack  # noqa: F401  (python_agent needs it; checked here to report a skip)
except ImportError:
    print("skipped: this python3 has no msgpack module (Debian: python3-msgpack)")
    sys.exit(77)

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))
from python_agent import FrameDecoder, encode_frame  # noqa: E402

# Keep in step with tests/wire/samples.hpp, message for message.
EXPECTED = [
    {"type": "hello", "role": "client", "token": "s3cr3t-token", "name": "cli-\u03bb"},
    {"type": "hello_ok", "identity": "alice", "role": "user"},
    {"type": "register", "server": "node-07", "gpu_type": "a100", "gpus": 8, "pool": "inference",
     "workers": [{"job_id": 42, "rank": 3, "gpus": [0, 1], "pid": 12345},
                 {"job_id": 43, "rank": 0, "gpus": [7], "exit_code": 0, "exit_signal": 9}],
     "address": "node-07.example", "version": "0.14.0"},
    {"type": "heartbeat", "seq": 1 << 40},
    {"type": "launch", "job_id": 9000000000, "rank": 2, "world_size": 4, "gpus": [4, 5],
     "checkpoint_dir": "/ckpt/job-9", "rendezvous": "10.0.0.7:29500",
     "command": ["python3", "train.py", "--lr=0.1"],
     "env": {"ARYL_JOB": "9", "NCCL_DEBUG": "INFO"}, "work_s": 3600.0, "rate": 1.25, "user": "alice"},
    {"type": "stop", "job_id": 77, "grace_s": 30.5},
    {"type": "progress", "job_id": 77, "rank": 1, "work_done": 1234.75, "step": 5000},
    {"type": "exit", "job_id": 77, "rank": 1, "code": -2, "signal": 9},
    {"type": "submit", "name": "r\u00e9sum\u00e9-\u03bb", "gpus": 8, "min_workers": 2,
     "max_workers": 16, "command": ["bash", "-c", "echo hi"], "expected_duration_s": 7200.25,
     "gpu_type": "v100", "tenant": "vision", "priority": -3, "after": "3:ok,4:any", "array": "0-99%10",
     "hold": True, "key": "nightly-2026-12-06"},
    {"type": "submit_ok", "job_id": 123, "note": "runs on at least 4 workers"},
    {"type": "cancel", "job_id": 124},
    {"type": "status_request", "all": True},
    {"type": "status_reply",
     "jobs": [{"job_id": 1, "name": "a", "state": "running", "workers": 4, "gpus": 4, "min_workers": 2,
               "max_workers": 8, "gpu_type": "a100", "run_s": 61.5, "servers": "node-01:4", "predicted": False,
               "tenant": "vision", "user": "alice"},
              {"job_id": 2, "name": "b", "state": "queued", "workers": 0,
               "reason": "behind job 1 in queue order (aryl)", "held": True, "array_job": 2, "array_task": 7}],
     "servers": [{"name": "node-01", "gpu_type": "a100", "gpus": 8, "free": 2, "pool": "training", "state": "up"},
                 {"name": "node-02", "gpu_type": "a100", "gpus": 8, "free": 0, "pool": "training", "state": "lost"},
                 {"name": "node-03", "gpu_type": "a100", "gpus": 8, "free": 0, "pool": "training", "state": "up",
                  "hold": "draining", "reason": "disk swap"},
                 {"name": "inf-01", "gpu_type": "t4", "gpus": 4, "free": 4, "pool": "inference"}],
     "loans": [{"server": "inf-01", "state": "reclaiming"}],
     "tenants": [{"name": "vision", "quota": 8, "in_use": 4, "lent": 0, "borrowed": 0, "queued": 1},
                 {"name": "", "in_use": 0, "lent": 0, "borrowed": 0, "queued": 0}]},
    {"type": "demand", "servers_needed": 3},
    {"type": "error", "reason": "token rejected"},
    {"type": "bye"},
    {"type": "show_request", "job_id": 5, "array_task": 3},
    {"type": "show_reply",
     "job": {"job_id": 5, "name": "c", "state": "cancelled", "workers": 0, "predicted": True},
     "command": ["train.sh"], "expected_duration_s": 3600.0, "submit_s": 12.25, "end_s": 99.5,
     "history": [{"t_s": 12.25, "event": "submit", "detail": "gpus=2 elastic=0 name=c", "why": ""},
                 {"t_s": 13.0, "event": "start", "detail": "workers=2 a100 [node-01:2]",
                  "why": "fits its base demand"}]},
    {"type": "shutdown", "reason": "the run is over"},
    {"type": "logs_request", "job_id": 5, "rank": 1, "offset": 4096, "array_task": 2},
    {"type": "log_fetch", "request": 77, "job_id": 5, "rank": 1, "offset": 4096, "max_bytes": 60000},
    {"type": "log_chunk", "request": 77, "text": "step=10 loss=0.5\n", "size": 4113},
    {"type": "logs_reply", "job_id": 5, "rank": 1, "server": "node-01", "offset": 4096,
     "text": "step=10 loss=0.5\n", "size": 4113, "active": True},
    {"type": "node_request", "server": "node-03", "action": "drain", "reason": "disk swap", "now": True},
    {"type": "node_reply", "server": "node-03",
     "text": "node-03: draining: no new work; 1 job runs on there until it ends"},
    {"type": "token_request", "action": "create", "name": "node-07", "role": "agent", "gpu_type": "a100",
     "pool": "training"},
    {"type": "token_reply", "text": "created node-07 (agent)", "token": "aryl_0123456789abcdef"},
    {"type": "show_node_request", "server": "node-03"},
    {"type": "show_node_reply",
     "node": {"name": "node-03", "gpu_type": "a100", "gpus": 8, "free": 0, "pool": "training", "state": "up",
              "hold": "draining", "reason": "disk swap"},
     "mode": "training", "jobs": [{"job_id": 1, "name": "a", "workers": 2, "ranks": [0, 3]}],
     "heard_s": 0.5, "address": "10.0.0.3", "agent_version": "0.14.0"},
    {"type": "job_request", "job_id": 42, "array_task": 7, "action": "update", "priority": 2,
     "time_limit_s": 3600.0, "min_workers": 2, "max_workers": 8, "expected_duration_s": 1800.5,
     "after": "41:notok"},
    {"type": "job_reply", "job_id": 42, "text": "job 42_7 updated"},
    {"type": "history_request", "since_us": 1790000000000000, "users": ["alice", "bob"], "tenants": [],
     "outcomes": ["done", "running"], "after": 4096, "limit": 500},
    {"type": "history_reply",
     "jobs": [{"job_id": 7, "name": "bert", "user": "alice", "tenant": "vision", "state": "ended",
               "outcome": "failed", "submit_us": 1790000000000000, "start_us": 1790000030000000,
               "end_us": 1790000090500000, "wait_s": 30.0, "gpus": 4, "exits": "0:1 1:sig15", "attempts": 2},
              {"job_id": 9, "name": "queued-one", "user": "", "tenant": "", "state": "queued",
               "submit_us": 1790000100000000, "wait_s": 12.5, "gpus": 2, "exits": "", "attempts": 0}],
     "next_after": 9},
]


def same(a, b):
    """Equal values of the same Python types, recursively (so 30 != 30.0 here)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def python_way(msg):
    """`msg` as another implementation might send it: reversed keys, whole floats as ints,
    an unknown field, optional fields spelled None."""
    out = {"py_extra": {"ignored": [1, 2, 3]}}
    for key in reversed(list(msg)):
        value = msg[key]
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        out[key] = value
    if msg["type"] == "register":
        out["workers"] = [dict(w, pid=w.get("pid"), exit_code=w.get("exit_code"), exit_signal=w.get("exit_signal"))
                          for w in msg["workers"]]
    return out


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1], "rb") as f:
        data = f.read()
    decoder = FrameDecoder()
    got = []
    for i in range(0, len(data), 7):  # odd-sized chunks, as from a socket
        decoder.feed(data[i:i + 7])
        got.extend(decoder)
    ok = len(got) == len(EXPECTED)
    if not ok:
        print(f"decoded {len(got)} messages, expected {len(EXPECTED)}")
    for g, e in zip(got, EXPECTED):
        if not same(g, e):
            print(f"{e['type']}: decoded {g!r}\n  expected {e!r}")
            ok = False
    with open(argv[2], "wb") as f:
        for msg in EXPECTED:
            f.write(encode_frame(python_way(msg)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
