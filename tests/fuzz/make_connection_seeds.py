#!/usr/bin/python3
"""Writes the generated seeds of tests/fuzz/corpus/connection/ (fuzz_connection.cpp says what
the first byte means): one per client request type of runtime/wire/messages.hpp and one per
kind of registration; and the registrations' frames, without that byte, to
tests/fuzz/corpus/registration/ (fuzz_registration.cpp). Needs python3-msgpack (Debian's
/usr/bin/python3 has it).

    tests/fuzz/make_connection_seeds.py [corpus folder]   # default: tests/fuzz/corpus
"""
import os
import struct
import sys

import msgpack

CLIENT = 0x00
AGENT = 0x01                  # the target registers t0 itself
AGENT_REGISTERS = 0x03        # the input's first frame is the register
AGENT_REGISTERS_HELD = 0x07   # ... while another agent (instance "fuzz-holder") holds t0


def frame(type_, **fields):
    body = msgpack.packb({"v": 1, "type": type_, **fields}, use_bin_type=True)
    return struct.pack(">I", len(body)) + body


def register(server="t0", gpu_type="V100", gpus=8, pool="training", **optional):
    return frame("register", server=server, gpu_type=gpu_type, gpus=gpus, pool=pool,
                 workers=optional.pop("workers", []), **optional)


BYE = frame("bye")
HEARTBEAT = frame("heartbeat", seq=1)

SEEDS = {
    # Every client request, each with its optional fields.
    "client_submit_every_field": (CLIENT, [
        frame("submit", name="bert", gpus=4, min_workers=2, max_workers=8, command=["python3", "train.py"],
              expected_duration_s=600.0, gpu_type="V100", tenant="research", priority=2),
        BYE]),
    "client_submit_nil_optionals": (CLIENT, [
        frame("submit", name="nil", gpus=1, min_workers=1, max_workers=1, command=["true"],
              expected_duration_s=None, gpu_type=None, tenant=None, priority=None)]),
    "client_cancel_known_and_huge": (CLIENT, [
        frame("cancel", job_id=7), frame("cancel", job_id=2**64 - 1), BYE]),
    "client_status_all": (CLIENT, [
        frame("status_request", all=True), frame("status_request", all=False), BYE]),
    "client_show": (CLIENT, [frame("show_request", job_id=1), frame("show_request", job_id=99), BYE]),
    "client_logs": (CLIENT, [frame("logs_request", job_id=1, rank=0, offset=0),
                             frame("logs_request", job_id=7, rank=3, offset=2**40)]),
    "client_node_cordon": (CLIENT, [
        frame("node_request", server="t0", action="cordon", reason="disk swap"), BYE]),
    "client_node_drain_now": (CLIENT, [
        frame("node_request", server="t0", action="drain", reason="reboot", now=True), BYE]),
    "client_node_resume": (CLIENT, [frame("node_request", server="t0", action="resume"), BYE]),
    "client_node_bad": (CLIENT, [
        frame("node_request", server="t9", action="cordon"),
        frame("node_request", server="t0", action="resume", now=True),
        frame("node_request", server="t0", action="reboot"), BYE]),
    "client_token_create": (CLIENT, [
        frame("token_request", action="create", name="n1", role="agent", gpu_type="V100", pool="training"), BYE]),
    "client_token_revoke": (CLIENT, [frame("token_request", action="revoke", name="alice"), BYE]),
    "client_token_list": (CLIENT, [frame("token_request", action="list", name=""), BYE]),
    "client_demand": (CLIENT, [frame("demand", servers_needed=2), frame("demand", servers_needed=2**32 - 1), BYE]),
    "client_bye": (CLIENT, [BYE]),

    # Registrations supplied by the input.
    "register_t0_every_field": (AGENT_REGISTERS, [
        register(workers=[{"job_id": 1, "rank": 0, "gpus": [0, 1, 2, 3], "pid": 4242, "generation": 3},
                          {"job_id": 2, "rank": 1, "gpus": [7], "exit_code": 1, "exit_signal": 0}],
                 address="node-0.example", instance="0123456789abcdef0123456789abcdef"),
        HEARTBEAT, frame("exit", job_id=2, rank=1, code=1, signal=0), BYE]),
    "register_i0": (AGENT_REGISTERS, [register("i0", "T4", 4, "inference"), HEARTBEAT, BYE]),
    "register_name_empty": (AGENT_REGISTERS, [register("")]),
    "register_name_64_bytes": (AGENT_REGISTERS, [register("t" * 64)]),
    "register_name_63_bytes": (AGENT_REGISTERS, [register("j" * 63)]),
    "register_name_bad_char": (AGENT_REGISTERS, [register("t0/x")]),
    "register_name_control": (AGENT_REGISTERS, [register("t0\x1b[2J")]),
    "register_name_leading_dot": (AGENT_REGISTERS, [register(".t0")]),
    "register_name_utf8": (AGENT_REGISTERS, [register("t\u00e90")]),
    "register_gpu_type_bad": (AGENT_REGISTERS, [register(gpu_type="V 100")]),
    "register_gpus_0": (AGENT_REGISTERS, [register(gpus=0)]),
    "register_gpus_1025": (AGENT_REGISTERS, [register(gpus=1025)]),
    "register_gpu_index_beyond": (AGENT_REGISTERS, [
        register(workers=[{"job_id": 1, "rank": 0, "gpus": [8]}])]),
    "register_address_bad": (AGENT_REGISTERS, [register(address="a b")]),
    "register_config_mismatch": (AGENT_REGISTERS, [register(gpus=4)]),
    "register_unknown_server": (AGENT_REGISTERS, [register("x9", "T4", 4, "inference")]),
    "register_joins": (AGENT_REGISTERS, [register("j1", "V100", 2), HEARTBEAT, BYE]),
    "register_join_refused": (AGENT_REGISTERS, [register("x9", "K80", 2)]),
    "register_twice": (AGENT_REGISTERS, [register(), register()]),
    "register_then_client_request": (AGENT_REGISTERS, [register(), frame("status_request")]),
    "register_not_first": (AGENT_REGISTERS, [HEARTBEAT, register()]),
    "register_held": (AGENT_REGISTERS_HELD, [register(instance="another-process")]),
    "register_held_same_instance": (AGENT_REGISTERS_HELD, [register(instance="fuzz-holder"), HEARTBEAT, BYE]),
}


def main():
    corpus = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus")
    for target in ("connection", "registration"):
        os.makedirs(os.path.join(corpus, target), exist_ok=True)
    written = 0
    for name, (role, frames) in SEEDS.items():
        with open(os.path.join(corpus, "connection", name), "wb") as f:
            f.write(bytes([role]) + b"".join(frames))
        written += 1
        if name.startswith("register_"):
            with open(os.path.join(corpus, "registration", name), "wb") as f:
                f.write(b"".join(frames))
            written += 1
    print(f"{written} seeds in {corpus}/connection and {corpus}/registration")


if __name__ == "__main__":
    main()
