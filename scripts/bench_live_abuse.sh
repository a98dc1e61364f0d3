#!/usr/bin/env bash
# Live mode under hostile load (docs/reliability.md, "The live surface under hostile load"): a
# testbed of 32 agents (scripts/testbed.sh, loopback) runs 64 one-GPU jobs while one process
# (scripts/bench_live_attackers.py) holds 1,000 idle connections that never say hello, 300 slow
# ones that send a frame header and then one byte every 5 s (with --tls: a ClientHello and then
# nothing), each dialled again when serve closes it, one client that pipelines status requests
# and never reads, one that submits oversized jobs and frames over the limit, one that pipelines
# logs requests and never reads, and 300 idle and slow connections to the metrics port.
# Meanwhile a second client runs `aryl status` 100 times.
# Reports serve's peak RSS, the p50/p99/max of `aryl status`, the connections serve refused,
# the agents reported lost (must be 0) and whether every job completed exactly once. As the
# machine's own part of a status, it times after each status a start of aryl that connects
# nowhere (`aryl --help`); and throughout, a client already running (Python) dials, says
# hello and asks a status every 0.1 s: serve's part, without a process start. It also reports
# the attacker's dials again by the last status, serve's listen backlog (ss -ltn, sampled at
# each status), the load average, and the CPU time each part of the run used while the
# statuses ran (serve, agents, workers, the attacker, the running client, the machine in all).
# Goals: RSS < 256 MiB, status p99 < 100 ms. A benchmark, not a CTest; figures go to
# docs/reliability.md by hand.
#
#   [ARYL_BIN=path/to/aryl] scripts/bench_live_abuse.sh [--defaults | --no-abuse] [--tls]
#
# By default serve's caps before hello are raised (live.max_before_hello*=4000) and its hello
# deadline set to 60 s, so that every hostile connection is held: the memory they cost is
# measured. --defaults keeps serve's defaults. --no-abuse runs
# the same without the hostile peers: the baseline of a loaded machine. --tls runs the testbed
# with TLS (scripts/testbed.sh --tls): agents, clients and attackers alike speak it. ARYL_BIN
# names another build of aryl (serve, agents and clients alike), to compare builds.
set -euo pipefail
cd "$(dirname "$0")/.."
aryl="${ARYL_BIN:-build/aryl}"
export ARYL_BIN="$aryl"
caps=(--set live.max_before_hello=4000 --set live.max_before_hello_per_address=4000 --set live.hello_timeout_s=60)
abuse=1
tls=()
for arg in "$@"; do
  case "$arg" in
    --defaults) caps=() ;;
    --no-abuse) abuse=0 ;;
    --tls) tls=(--tls) ;;
    *) echo "bench_live_abuse: unknown option $arg" >&2; exit 2 ;;
  esac
done
# 1,300 hostile connections, 32 agents and serve's own files: raise the soft limit if needed.
want=4096
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt "$want" ]; then
  hard=$(ulimit -Hn)
  ulimit -n "$([ "$hard" = unlimited ] || [ "$hard" -ge "$want" ] && echo "$want" || echo "$hard")"
fi
work="$(mktemp -d /tmp/aryl-bench-abuse.XXXXXX)"
bed=""
attacker=""
probe=""
cleanup() {
  [ -n "$attacker" ] && kill "$attacker" 2>/dev/null || true
  [ -n "$probe" ] && kill "$probe" 2>/dev/null || true
  [ -n "$bed" ] && kill "$bed" 2>/dev/null || true
  wait 2>/dev/null || true
  [ -n "${ARYL_BENCH_KEEP:-}" ] && echo "kept $work" || rm -rf "$work"
}
trap cleanup EXIT
# 64 inelastic 1-GPU jobs, one every 5 simulated s, 1,200 s each, at speedup 20: about 80 s.
{
  echo "job_id,submit_s,gpus,duration_s,elastic"
  for i in $(seq 0 63); do echo "j$i,$((i * 5)),1,1200,0"; done
} > "$work/trace.csv"
dir="$work/tb"
scripts/testbed.sh --dir "$dir" --training 32 --inference 0 "${tls[@]}" -- --trace "$work/trace.csv" --speedup 20 \
  --out "$dir/out" --metrics-port 0 --metrics-port-file "$dir/metrics.port" "${caps[@]}" > "$work/run.log" 2>&1 &
bed=$!
for _ in $(seq 600); do [ -s "$dir/port" ] && break; sleep 0.1; done
port=$(cat "$dir/port")
tls_ca=""
if [ ${#tls[@]} -gt 0 ]; then tls_ca="$dir/tls/ca.pem"; export ARYL_TLS_CA="$tls_ca"; fi
serve=$(awk '$2 == "serve" {print $1}' "$dir/pids")
for _ in $(seq 600); do
  "$aryl" status --port "$port" --token-file "$dir/token" > /dev/null 2>&1 && break
  sleep 0.1
done

if [ "$abuse" = 1 ]; then
/usr/bin/python3 scripts/bench_live_attackers.py "$port" "$(cat "$dir/token")" \
  --metrics-port "$(cat "$dir/metrics.port")" ${tls_ca:+--tls-ca "$tls_ca"} > "$work/attacker.log" 2>&1 &
attacker=$!
fi
sleep 5  # let the hostile connections settle in

rss_peak=0
sample_rss() {
  local kb
  kb=$(awk '/^VmRSS/ {print $2}' "/proc/$serve/status" 2>/dev/null || echo 0)
  [ "${kb:-0}" -gt "$rss_peak" ] && rss_peak=$kb
  # serve's CPU time so far (user + system): what the run and the peers cost it.
  cpu=$(awk -v hz="$hz" '{printf "%.1f s", ($14 + $15) / hz}' "/proc/$serve/stat" 2>/dev/null || echo "$cpu")
  return 0
}
hz=$(getconf CLK_TCK)
cpu="(not read)"
backlog_max=0
: > "$work/backlog"
# The accept queue of serve's listener now (ss: Recv-Q of a listening socket).
sample_backlog() {
  local q
  q=$(ss -ltnH "sport = :$port" 2>/dev/null | awk 'NR == 1 {print $2}')
  [ -n "$q" ] || return 0
  echo "$q" >> "$work/backlog"
  [ "$q" -gt "$backlog_max" ] && backlog_max=$q
  return 0
}
# CPU time (ticks) of the run's parts: serve; the agents; the workers (the agents' children,
# live ones and those reaped, counted in their agent's cutime/cstime); the attacker; the
# running client; and the machine's busy ticks in all (/proc/stat, every core).
cpu_parts() {
  local agents
  agents=$(awk '$2 == "agent" {printf "%s ", $1}' "$dir/pids")
  # One pass over every process: a worker is a child of an agent (ppid, field 4).
  # (A process may end between the glob and the read: cat then fails, and that is no error.)
  { cat /proc/[0-9]*/stat 2>/dev/null || true; } | awk -v agents="$agents" -v serve="$serve" -v attacker="${attacker:-0}" \
    -v probe="${probe:-0}" 'BEGIN { n = split(agents, a, " "); for (i = 1; i <= n; i++) ag[a[i]] = 1 }
    { own = $14 + $15; all = own + $16 + $17
      if ($1 == serve) s += own
      else if ($1 in ag) { g += own; w += $16 + $17 }
      else if ($4 in ag) w += all
      else if ($1 == attacker) t += all
      else if ($1 == probe) p += all }
    END { printf "%d %d %d %d %d", s, g, w, t, p }'
  echo " $(awk '/^cpu / {print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat)"
}
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
: > "$work/status_ms"
: > "$work/start_ms"
/usr/bin/python3 - "$port" "$dir/token" "$work/probe_ms" "$tls_ca" "$(cat "$dir/metrics.port")" "$work/scrape_ms" \
  > "$work/probe.log" 2>&1 <<'PY' &
import os, socket, ssl, sys, time, urllib.request
sys.path.insert(0, os.path.join(os.getcwd(), "examples"))
import python_agent as wire
port, token, out = int(sys.argv[1]), open(sys.argv[2]).read().strip(), open(sys.argv[3], "w")
metrics_port, scrapes = int(sys.argv[5]), open(sys.argv[6], "w")
ctx = None
if sys.argv[4]:
    ctx = ssl.create_default_context(cafile=sys.argv[4])
    ctx.check_hostname = False
while True:
    t0 = time.perf_counter()
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        if ctx:
            s = ctx.wrap_socket(s)
        d = wire.FrameDecoder()
        s.sendall(wire.encode_frame({"type": "hello", "role": "client", "token": token, "name": "probe"}))
        ok = wire.receive_one(s, d)["type"] == "hello_ok"
        s.sendall(wire.encode_frame({"type": "status_request"}))
        ok = ok and wire.receive_one(s, d)["type"] == "status_reply"
        s.close()
        out.write(f"{(time.perf_counter() - t0) * 1e6:.0f} {time.time():.3f}\n" if ok else "failed\n")
    except ConnectionRefusedError:
        break  # serve has ended
    except Exception as e:
        out.write(f"failed: {e}\n")
    out.flush()
    # A scrape, as Prometheus makes one, while the metrics attackers cycle their connections.
    t0 = time.perf_counter()
    try:
        body = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).read()
        scrapes.write(f"{(time.perf_counter() - t0) * 1e6:.0f}\n" if b"aryl_jobs" in body else "failed: no aryl_jobs\n")
    except Exception as e:
        scrapes.write(f"failed: {e}\n")
    scrapes.flush()
    time.sleep(0.1)
PY
probe=$!
read -r -a cpu0 < <(cpu_parts)
t_start=$(date +%s%N)
cpu1=("${cpu0[@]}")
t_end=$t_start
load_max=0
for _ in $(seq 100); do
  [ -d "/proc/$serve" ] || break  # the run has ended: the statuses taken are reported
  sample_rss
  sample_backlog
  load_max=$(awk -v m="$load_max" '{print ($1 > m) ? $1 : m}' /proc/loadavg)
  t0=$(date +%s%N)
  if "$aryl" status --port "$port" --token-file "$dir/token" > /dev/null 2> "$work/error"; then answered=1; else answered=0; fi
  # Each start is timed alone, by two stamps around it, each taken the same way (a fork of
  # date): the bookkeeping below forks too (tail, cut), which under the attack's load once
  # added about 20 ms to every status timed.
  t1=$(date +%s%N)
  if [ "$answered" = 1 ]; then
    # The attacker's dials again by this status: at serve's end every connection closes at
    # once and is dialled again, so the count after the last status answered says what the
    # run cost.
    [ -n "$attacker" ] && redials_at_last=$(tail -1 "$work/attacker.log" | cut -d' ' -f4-)
  else
    echo "failed: $(head -c 300 "$work/error" | tr '\n' ' ')" >> "$work/failures"
  fi
  t2=$(date +%s%N)
  "$aryl" --help > /dev/null 2>&1 || true
  t3=$(date +%s%N)
  echo $(( (t1 - t0) / 1000 )) >> "$work/status_ms"
  echo $(( (t3 - t2) / 1000 )) >> "$work/start_ms"
  # The CPU window ends at the last status taken while serve still ran.
  [ -d "/proc/$serve" ] && { read -r -a cpu1 < <(cpu_parts); t_end=$(date +%s%N); }
  sleep 0.1
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
kill "$probe" 2>/dev/null || true
wait "$probe" 2>/dev/null || true
probe=""
# serve may have ended its run before the last status (a slow tail): say so, not stop here.
fds() { if [ -d "/proc/$serve/fd" ]; then ls "/proc/$serve/fd" | wc -l; else echo "(serve had ended)"; fi; }
held=$(fds)
cpu_by_last=$cpu
if [ -n "$attacker" ]; then
  kill "$attacker" 2>/dev/null || true
  wait "$attacker" 2>/dev/null || true
  attacker=""
fi
sleep 2
sample_rss
rss_after=$(awk '/^VmRSS/ {print $2}' "/proc/$serve/status" 2>/dev/null || echo 0)
held_after=$(fds)
rc=0
wait "$bed" || rc=$?
bed=""

# p50 / p99 / max in ms, and the count, of a file of microseconds (lines that are not numbers
# are failures, counted apart; a number may be followed by the time it was taken).
percentiles() {
  # Linear between the closest ranks (numpy's default, as summary.json).
  awk '$1 ~ /^[0-9]+$/ {print $1}' "$1" | sort -n | awk 'function q(p,  h, lo) { h = p * (NR - 1); lo = int(h) + 1
      return lo >= NR ? v[NR] : v[lo] + (h - (lo - 1)) * (v[lo + 1] - v[lo]) }
    {v[NR] = $1} END {
    if (NR == 0) { print "- - - 0"; exit }
    printf "%.1f %.1f %.1f %d\n", q(0.50) / 1000, q(0.99) / 1000, v[NR] / 1000, NR }'
}
read -r p50 p99 max n < <(percentiles "$work/status_ms")
read -r s50 s99 smax sn < <(percentiles "$work/start_ms")
read -r q50 q99 qmax qn < <(percentiles "$work/probe_ms")
read -r m50 m99 mmax mn < <(percentiles "$work/scrape_ms")
lost=$(grep -c "reported lost" "$dir/serve.log" || true)
refused=$(grep -c "refused a connection" "$dir/serve.log" || true)
unlogged=$(grep -o "not logged before it: [^)]*" "$dir/serve.log" | tail -1 || true)
jobs=$(/usr/bin/python3 -c '
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
ids = [r["job"] for r in rows]
done = sum(r["outcome"] == "done" for r in rows)
print(f"{len(rows)} rows, {len(set(ids))} distinct jobs, {done} done")' "$dir/out/jobs.csv" 2>/dev/null || echo "no jobs.csv")
echo "testbed exit code:            $rc"
echo "serve descriptors under load / after: $held / $held_after"
echo "serve CPU (user + system) by the last status: $cpu_by_last"
echo "serve RSS peak / after:       $((rss_peak / 1024)) MiB / $((rss_after / 1024)) MiB (goal < 256 MiB)"
echo "aryl status p50 / p99 / max:  $p50 / $p99 / $max ms over $n runs of 100 (the rest after serve ended; goal p99 < 100 ms); failures: $(cat "$work/failures" 2>/dev/null | wc -l)"
[ -s "$work/failures" ] && sort "$work/failures" | uniq -c | sed 's/^/  /'
echo "aryl --help (a start, no connection) p50 / p99 / max: $s50 / $s99 / $smax ms over $sn runs"
echo "running client (dial, hello, status) p50 / p99 / max: $q50 / $q99 / $qmax ms over $qn; failures: $(grep -vcE '^[0-9]+ ' "$work/probe_ms" || true)"
echo "GET /metrics (a scrape) p50 / p99 / max: $m50 / $m99 / $mmax ms over $mn; failures: $(grep -vcE '^[0-9]+$' "$work/scrape_ms" || true)"
[ -n "$(grep -vE '^[0-9]+$' "$work/scrape_ms" || true)" ] && grep -vE '^[0-9]+$' "$work/scrape_ms" | sort | uniq -c | head -5 | sed 's/^/  /'
true
echo "agents reported lost:         $lost (must be 0)"
echo "jobs:                         $jobs (64 expected, each once)"
[ "$abuse" = 1 ] && echo "attacker:                     $(tail -1 "$work/attacker.log"); dials again by the last status answered: ${redials_at_last:-?}"
echo "listen backlog (ss -ltn Recv-Q at each status): max $backlog_max, p50 $(sort -n "$work/backlog" | awk '{v[NR] = $1} END {print NR ? v[int(0.5 * NR + 0.999)] : "-"}') over $(wc -l < "$work/backlog") samples"
echo "load average: before $load_before; highest 1-min while the statuses ran $load_max; at their end $load_after"
awk -v hz="$hz" -v cores="$(nproc)" -v ns=$((t_end - t_start)) -v a="${cpu0[*]}" -v b="${cpu1[*]}" 'BEGIN {
  split(a, x, " "); split(b, y, " "); s = ns / 1e9; split("serve agents workers attacker client", name, " ")
  line = sprintf("CPU over the %.0f s of statuses (s; share of one core):", s)
  for (i = 1; i <= 5; i++) { d = (y[i] - x[i]) / hz; ours += d; line = line sprintf(" %s %.1f (%.0f%%);", name[i], d, 100 * d / s) }
  busy = (y[6] - x[6]) / hz
  printf "%s the rest (aryl status and --help, this script, other users) %.1f; machine busy %.1f of %.0f core-s\n",
    line, busy - ours, busy, cores * s }'
echo "serve.log lines:              $(wc -l < "$dir/serve.log") ($refused refusals logged; last count of lines not logged: ${unlogged:-none})"
