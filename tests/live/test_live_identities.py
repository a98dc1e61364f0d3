#!/usr/bin/python3
"""Identities and roles (docs/security.md): with `serve --identities`, each user's job runs as
that user's Unix account, sees no credential of the cluster, and no user can touch another's
job; a user cannot drain, an agent credential registers only its own node, a revoked token is
refused, and every refusal and state change is in audit.jsonl.

    test_live_identities.py --aryl BUILD/aryl --source SOURCE_DIR [--dir TMP]

Needs root (CI runs as root; skipped with 77 otherwise): it creates two Unix users with
`useradd` and removes them on every way out. On loopback: serve --no-workload with t0 and t1
(8 GPUs each), agents running as root, each started with its address and token in ARYL_ADDR and
ARYL_TOKEN_FILE as an operator's unit would. Every process is stopped by its pid, also on a
failure; no port is left bound.
"""

import atexit
import json
import os
import pwd
import re
import sqlite3
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from live_harness import check, main, read, wait_for  # noqa: E402
from serve_bed import Bed  # noqa: E402

USERS = [f"arylt{os.getpid() % 100000}{c}" for c in "ab"]


def remove_users():
    for u in USERS:
        subprocess.run(["userdel", "-r", u], capture_output=True)


def run(a, work, procs):
    for u in USERS:
        r = subprocess.run(["useradd", "-M", "-s", "/bin/sh", u], capture_output=True, text=True)
        if not check(r.returncode == 0, f"useradd {u} ({r.stderr.strip()})"):
            return None
    alice, bob = USERS
    bed = Bed(a, work, procs, "live-identities-unused-token")
    # Job users traverse to their checkpoint folders under serve's work dir (a mkdtemp is 0700).
    os.chmod(work, 0o755)
    os.chmod(bed.dir, 0o755)
    ids = os.path.join(bed.dir, "identities")
    tokens = {}

    def create(name, role, *extra):
        r = subprocess.run([bed.aryl, "token", "create", name, "--role", role, "--identities", ids, *extra],
                           capture_output=True, text=True, timeout=20)
        check(r.returncode == 0, f"token create {name} ({r.stderr.strip()})")
        path = os.path.join(bed.dir, f"{name}.token")
        with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(r.stdout.splitlines()[-1] + "\n")
        tokens[name] = path

    create("ops", "admin")
    create("mon", "reader")
    create("t0", "agent", "--gpu-type", "V100", "--pool", "training")
    create("t1", "agent")
    create(alice, "user")
    create(bob, "user")
    bed.serve_auth = ["--identities", ids]
    serve = bed.serve(["--no-workload", "--servers", "2", "--set", "cluster.inference.servers=0", "--speedup", "1",
                       "--set", f"tenants.vision.users={alice}", "--set", "tenants.vision.max_priority=1",
                       "--set", f"tenants.nlp.users={bob}", "--state", os.path.join(bed.dir, "state.db")])
    if not serve:
        return None
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("ARYL_")}
    for name in ("t0", "t1"):
        bed.agent(name, 8, env=dict(base_env, ARYL_ADDR=f"127.0.0.1:{bed.port}", ARYL_TOKEN_FILE=tokens[name]))
    if not bed.run_starts():
        return [bed.port]
    serve_log = os.path.join(bed.dir, "serve.log")

    # An agent credential registers only its own node, and never displaces the connected one.
    impostors = [bed.agent("t1", 8, token=tokens["t0"], label="impostor-t1"),
                 bed.agent("t0", 8, token=tokens["t0"], label="second-t0")]
    check(wait_for(lambda: "t0 (role agent) may register only node t0, not t1" in read(serve_log), 20,
                   "the impostor's refusal"), "t0's credential cannot register t1")
    check(wait_for(lambda: "server 't0' is held by a connected agent" in read(serve_log), 20,
                   "the second t0's refusal"), "t0's credential cannot displace the connected t0")
    for p in impostors:  # they would retry for ever
        p.terminate()
        p.wait(timeout=10)

    def as_user(user, *args):
        return bed.client(*args, token=tokens[user])

    # bob's job keeps a secret in its checkpoint folder; alice's job looks at everything it should not see.
    bob_job = as_user(bob, "submit", "--name", "bobs", "--duration", "30", "--", "/bin/sh", "-c",
                      'echo secret > "$ARYL_CHECKPOINT_DIR/secret"; sleep 30')
    check(bob_job.returncode == 0, f"{bob} submits ({bob_job.stderr.strip()})")
    bob_id = bob_job.stdout.strip()
    check(wait_for(lambda: re.search(rf"launch job {bob_id} rank 0 of 1: pid \d+",
                                     read(os.path.join(bed.dir, "agent-t0", "agent.log"))
                                     + read(os.path.join(bed.dir, "agent-t1", "agent.log"))), 20, "bob's launch"),
          "bob's job starts")
    bob_ckpt = os.path.join(bed.dir, "work", "checkpoints", f"job-{bob_id}")
    # One stream: the worker's stdout and stderr reach the log through separate pipes, so only
    # exec 2>&1 keeps the cat errors after the first marker.
    probe = (f'exec 2>&1; id -u; id -G; env; echo ---; cat {tokens["ops"]} {tokens["t0"]} {ids}; '
             f'ls {bob_ckpt}; cat {bob_ckpt}/secret; echo ---; sleep 4')
    job = as_user(alice, "submit", "--name", "probe", "--duration", "10", "--", "/bin/sh", "-c", probe)
    check(job.returncode == 0, f"{alice} submits ({job.stderr.strip()})")
    job_id = job.stdout.strip()
    logs = {n: os.path.join(bed.dir, f"agent-{n}", "agent.log") for n in ("t0", "t1")}
    pid = []

    def launched():
        for path in logs.values():
            m = re.search(rf"launch job {job_id} rank 0 of 1: pid (\d+)", read(path))
            if m:
                pid.append(int(m.group(1)))
                return True
        return False

    if check(wait_for(launched, 20, "alice's launch"), "alice's job starts"):
        status = read(f"/proc/{pid[0]}/status")
        uid = re.search(r"^Uid:\s+(\d+)\s+(\d+)\s+(\d+)", status, re.M)
        want = pwd.getpwnam(alice).pw_uid
        check(uid and all(int(x) == want for x in uid.groups()),
              f"the worker's real, effective and saved uid are {alice}'s {want} (/proc: {uid and uid.groups()})")
    check(wait_for(lambda: as_user(alice, "logs", job_id).stdout.count("---") >= 2, 30, "alice's output"),
          "alice reads her job's log")
    out = as_user(alice, "logs", job_id).stdout
    lines = out.splitlines()
    check(lines and lines[0] == str(pwd.getpwnam(alice).pw_uid), f"id -u in the job is alice's ({lines[:2]})")
    env_part = out.split("---")[0]
    for bad in ("ARYL_TOKEN", "ARYL_ADDR", "ARYL_TLS", tokens["t0"], tokens["ops"], ids, str(bed.port)):
        check(bad not in env_part, f"the job's environment holds no {bad}")
    secrets = out.split("---")[1] if out.count("---") >= 2 else ""
    for path in (tokens["ops"], tokens["t0"], ids, bob_ckpt):
        check(f"{path}: Permission denied" in secrets or f"'{path}': Permission denied" in secrets,
              f"the job cannot read {path} ({secrets.strip()[:300]!r})")
    check("secret" not in secrets.replace("/secret", ""), "the job did not read bob's secret")
    for tok in tokens.values():
        check(read(tok).strip() not in out, "no token is in the job's output")

    # Tenants bound to users: alice's job runs for her only tenant; others' tenants and priorities
    # above the cap are refused.
    status = json.loads(as_user(alice, "status", "--json").stdout or "{}")
    mine = [j for j in status.get("jobs", []) if str(j.get("job_id")) == job_id]
    check(mine and mine[0].get("tenant") == "vision", f"alice's job runs for her tenant vision ({mine})")
    # Each job names its submitter, so `status --user` keeps one user's jobs.
    users = {str(j["job_id"]): j.get("user") for j in json.loads(
        as_user(alice, "status", "--json", "--all", "--user", alice).stdout or "{}").get("jobs", [])}
    check(users.get(job_id) == alice and set(users.values()) == {alice}, f"status --user {alice} keeps hers ({users})")
    users = {str(j["job_id"]): j.get("user") for j in json.loads(
        as_user(alice, "status", "--json", "--all", "--user", bob).stdout or "{}").get("jobs", [])}
    check(users and set(users.values()) == {bob}, f"status --user {bob} keeps his ({users})")
    r = as_user(alice, "submit", "--tenant", "nlp", "--", "/bin/true")
    check(r.returncode != 0 and f"{alice} may not submit for tenant nlp" in r.stderr,
          f"alice cannot submit for bob's tenant ({r.stderr.strip()})")
    r = as_user(alice, "submit", "--priority", "5", "--", "/bin/true")
    check(r.returncode != 0 and "tenant vision allows up to 1" in r.stderr,
          f"alice's priority is capped by her tenant ({r.stderr.strip()})")

    # bob cannot cancel, show or read the logs of alice's job; alice cannot drain.
    for args in (("cancel", job_id), ("show", job_id), ("logs", job_id)):
        r = as_user(bob, *args)
        check(r.returncode != 0 and f"{bob} (role user) may " in r.stderr and "only its own jobs" in r.stderr,
              f"{bob} cannot {args[0]} alice's job ({r.returncode}, {r.stderr.strip()})")
    show = as_user(alice, "show", job_id)
    check(show.returncode == 0 and "probe" in show.stdout, f"alice shows her own job ({show.stderr.strip()})")
    drain = as_user(alice, "drain", "t1")
    check(drain.returncode != 0 and f"{alice} (role user) may not cordon, drain or resume servers" in drain.stderr,
          f"a user cannot drain ({drain.stderr.strip()})")
    reader = bed.client("submit", "--name", "x", "--", "/bin/true", token=tokens["mon"])
    check(reader.returncode != 0 and "mon (role reader) may not submit jobs" in reader.stderr,
          f"a reader cannot submit ({reader.stderr.strip()})")
    check(bed.client("status", token=tokens["mon"]).returncode == 0, "a reader reads status")
    r = bed.client("show", "node", "t0", token=tokens["mon"])
    check(r.returncode == 0 and "NodeName=t0" in r.stdout, f"a reader shows a node ({r.stderr.strip()})")
    made = bed.client("token", "create", "x", "--role", "user", token=tokens[alice])
    check(made.returncode != 0 and "may not manage identities" in made.stderr, f"a user cannot make tokens ({made.stderr.strip()})")

    # A revoked token is refused on its next request.
    check(as_user(bob, "status").returncode == 0, "bob reads status before the revocation")
    rv = bed.client("token", "revoke", bob, token=tokens["ops"])
    check(rv.returncode == 0, f"ops revokes bob ({rv.stderr.strip()})")
    after = as_user(bob, "status")
    check(after.returncode != 0 and f"the credential of {bob} was revoked" in after.stderr,
          f"bob's revoked token is refused ({after.stderr.strip()})")
    check(re.search(rf"^{bob} user sha256:[0-9a-f]{{64}} revoked$", read(ids), re.M),
          "the revocation is written to the identities file")
    cancel = bed.client("cancel", bob_id, token=tokens["ops"])
    check(cancel.returncode == 0, f"an admin cancels another user's job ({cancel.stderr.strip()})")

    check(wait_for(lambda: "done" in as_user(alice, "show", job_id).stdout, 30, "alice's job to end"),
          "alice's job ends")
    audit = [json.loads(line) for line in read(os.path.join(bed.out, "audit.jsonl")).splitlines()]

    def audited(identity, action, result_part):
        return any(e["identity"] == identity and e["action"].startswith(action) and result_part in e["result"]
                   for e in audit)

    for who, act in ((bob, "cancel"), (bob, "show"), (bob, "logs"), (alice, "node"), ("mon", "submit"),
                     (alice, "token"), (bob, "hello"), ("t0", "register")):
        check(audited(who, act, "refused"), f"audit.jsonl has {who}'s refused {act}")
    for who, act in ((alice, "submit"), (bob, "submit"), ("ops", "token revoke"), ("ops", "cancel"),
                     ("t0", "register"), ("t1", "register")):
        check(audited(who, act, "ok"), f"audit.jsonl has {who}'s {act}")
    check(all(set(e) == {"time", "identity", "role", "peer", "action", "target", "result"} for e in audit),
          "every audit line has time, identity, role, peer, action, target, result")
    bed.stop(serve)
    db = sqlite3.connect(os.path.join(bed.dir, "state.db"))
    journaled = [json.loads(row[0]) for row in db.execute("SELECT line FROM audit ORDER BY seq")]
    db.close()
    check(journaled == audit, f"the state file journals the audit lines, in order ({len(journaled)} of {len(audit)})")
    return [bed.port]


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("skipped: creating Unix users needs root")
        sys.exit(77)
    atexit.register(remove_users)
    try:
        rc = main("live-identities", 150, run, ("serve.log", "agent-t0/agent.log", "agent-t1/agent.log"))
    finally:
        remove_users()
    sys.exit(rc)
