#!/usr/bin/env bash
# A live-mode testbed on one machine: `aryl serve` and one `aryl agent` per configured server,
# all on loopback, each agent with its own work directory under DIR. Runs until the serve
# process ends (its workload is done, or it failed), then stops every process it started, by
# pid, also when interrupted or when anything fails. Exits with the serve's exit code.
#
#   scripts/testbed.sh [--dir DIR] [--training N] [--inference M] [--gpus G] [--proxy NAMES] \
#     [--tls] -- SERVE_ARGS...
#
# The training servers are t0..t(N-1) (V100), the inference servers i0..i(M-1) (T4), as
# `aryl serve --servers N --set cluster.inference.servers=M` names them. --proxy t1,t2 (or
# `all`) puts a scripts/fault_proxy.py between each named agent and serve, commanded through
# the FIFO DIR/agent-NAME/proxy.ctl (scripts/live_faults.py enacts a plan's network faults
# there). DIR/pids lists this script ("PID testbed") and every pid it started ("PID serve",
# "PID agent NAME", "PID proxy NAME"); DIR/serve.log, DIR/agent-NAME/agent.log and
# DIR/agent-NAME/proxy.log hold their logs. --tls makes a CA and a certificate for 127.0.0.1 in
# DIR/tls (openssl CLI): serve listens with TLS and the agents verify it against DIR/tls/ca.pem,
# which clients take with --tls-ca or ARYL_TLS_CA. ARYL_BIN, if set, names the aryl binary (default
# build/aryl). Relative paths, --dir's and those among SERVE_ARGS, are taken from the caller's
# directory.
#
# A scheduler restart (live_faults.py's `scheduler_crash`): whoever SIGKILLs serve first writes
# DIR/serve.restart holding the seconds it stays down. Serve killed by SIGKILL with that file
# present is started again after that time, with the same arguments on the same port (the one
# in DIR/port), its output appended to the same logs; DIR/pids gets "PID serve restarted", and
# the testbed waits for that serve and exits with its code. Without the file, a SIGKILL ends
# the run as any other exit does.
set -euo pipefail
# Relative paths (--dir, and serve's --out, --trace, ... among SERVE_ARGS) are the caller's:
# everything runs from the caller's directory; the repository is found from this script.
root="$(cd "$(dirname "$0")/.." && pwd)"
aryl="${ARYL_BIN:-$root/build/aryl}"  # ARYL_BIN: another build of aryl
dir="testbed"
training=4
inference=4
gpus=8
proxied=""
tls=0
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir="$2"; shift 2 ;;
    --training) training="$2"; shift 2 ;;
    --inference) inference="$2"; shift 2 ;;
    --gpus) gpus="$2"; shift 2 ;;
    --proxy) proxied="$2"; shift 2 ;;
    --tls) tls=1; shift ;;
    --) shift; break ;;
    *) echo "testbed: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -x "$aryl" ] || { echo "testbed: $aryl not built (run scripts/setup.sh)" >&2; exit 2; }

names=()
for ((i = 0; i < training; i++)); do names+=("t$i"); done
for ((i = 0; i < inference; i++)); do names+=("i$i"); done
# Which agents go through a fault proxy: checked before anything starts.
declare -A proxy=()
if [ "$proxied" = all ]; then
  for name in "${names[@]}"; do proxy[$name]=1; done
elif [ -n "$proxied" ]; then
  IFS=, read -ra wanted <<< "$proxied"
  for name in "${wanted[@]}"; do
    [[ " ${names[*]} " == *" $name "* ]] || {
      echo "testbed: --proxy $name: no such agent (the agents: ${names[*]})" >&2; exit 2; }
    proxy[$name]=1
  done
fi

mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
rm -f "$dir/port" "$dir/pids" "$dir/serve.restart"
echo "$$ testbed" >> "$dir/pids"  # the process that restarts serve (see above)
# A fresh random token for this testbed, readable by its owner only.
(umask 077; head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$dir/token")

pids=()
stop_all() {
  local rc=$?
  trap - EXIT INT TERM
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  # Agents stop their workers within their own grace period; give them a little longer.
  for _ in $(seq 100); do
    local alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ $alive -eq 0 ] && break
    sleep 0.1
  done
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -f "$dir/serve.restart"  # a restart that will not come
  exit $rc
}
trap stop_all EXIT
trap 'exit 130' INT TERM

serve_cmd=("$aryl" serve --token-file "$dir/token" --port-file "$dir/port" --work-dir "$dir/work"
  --servers "$training" --set cluster.training.gpus_per_server="$gpus"
  --set cluster.inference.servers="$inference" --set cluster.inference.gpus_per_server="$gpus")
agent_tls=()
if [ "$tls" = 1 ]; then
  t="$dir/tls"
  mkdir -p "$t"
  ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  { openssl req -x509 "${ec[@]}" -keyout "$t/ca.key" -out "$t/ca.pem" -days 7 -subj "/CN=aryl testbed CA" &&
    openssl req "${ec[@]}" -keyout "$t/serve.key" -out "$t/serve.csr" -subj "/CN=aryl serve" &&
    printf 'subjectAltName=IP:127.0.0.1\n' > "$t/ip.ext" &&
    openssl x509 -req -in "$t/serve.csr" -CA "$t/ca.pem" -CAkey "$t/ca.key" -CAcreateserial -out "$t/serve.pem" \
      -days 7 -extfile "$t/ip.ext"; } > "$t/openssl.log" 2>&1 || {
    echo "testbed: --tls: openssl failed; its output:" >&2; cat "$t/openssl.log" >&2; exit 3; }
  chmod 600 "$t/ca.key" "$t/serve.key"
  serve_cmd+=(--tls-cert "$t/serve.pem" --tls-key "$t/serve.key")
  agent_tls=(--tls-ca "$t/ca.pem")
fi
"${serve_cmd[@]}" "$@" > "$dir/serve.out" 2> "$dir/serve.log" &
serve=$!
pids+=("$serve")
echo "$serve serve" >> "$dir/pids"

wait_for_file() {  # file pid: until the file is not empty, or the process has ended
  for _ in $(seq 300); do
    [ -s "$1" ] && return 0
    kill -0 "$2" 2>/dev/null || break
    sleep 0.05
  done
  [ -s "$1" ]
}
if ! wait_for_file "$dir/port" "$serve"; then
  echo "testbed: aryl serve did not start listening; its log:" >&2
  cat "$dir/serve.log" >&2
  exit 3
fi
port="$(cat "$dir/port")"

start_agent() {  # name gpu_type pool
  local folder="$dir/agent-$1" to="$port"
  mkdir -p "$folder"
  if [ -n "${proxy[$1]:-}" ]; then
    rm -f "$folder/proxy.port"
    /usr/bin/python3 "$root/scripts/fault_proxy.py" --target "127.0.0.1:$port" --port-file "$folder/proxy.port" \
      --control "$folder/proxy.ctl" < /dev/null 2> "$folder/proxy.log" &
    local pid=$!
    pids+=("$pid")
    echo "$pid proxy $1" >> "$dir/pids"
    wait_for_file "$folder/proxy.port" "$pid" || {
      echo "testbed: the fault proxy of $1 did not start listening; its log:" >&2; cat "$folder/proxy.log" >&2; exit 3; }
    to="$(cat "$folder/proxy.port")"
  fi
  "$aryl" agent --port "$to" --token-file "$dir/token" --name "$1" --gpu-type "$2" --gpus "$gpus" \
    --pool "$3" --work-dir "$folder" "${agent_tls[@]}" 2> "$folder/agent.log" &
  pids+=("$!")
  echo "$! agent $1" >> "$dir/pids"
}
for ((i = 0; i < training; i++)); do start_agent "t$i" V100 training; done
for ((i = 0; i < inference; i++)); do start_agent "i$i" T4 inference; done

# The same serve arguments on the port the agents were given: any --port of SERVE_ARGS
# replaced by it (the first start may have asked for 0, any free port).
restart_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --port) shift 2 ;;
    --port=*) shift ;;
    *) restart_args+=("$1"); shift ;;
  esac
done
restart_args+=(--port "$port")

while :; do
  set +e
  wait "$serve"
  rc=$?
  set -e
  # 137: killed by SIGKILL. Serve ending by itself as the kill came has its own code, and ends the run.
  if [ $rc -ne 137 ] || [ ! -f "$dir/serve.restart" ]; then break; fi
  down="$(cat "$dir/serve.restart")"
  [[ "$down" =~ ^[0-9]+(\.[0-9]+)?$ ]] || down=0
  echo "testbed: aryl serve was killed for a scheduler restart; starting it again in $down s on port $port" >&2
  sleep "$down" &
  pids+=("$!")
  wait "$!"
  "${serve_cmd[@]}" "${restart_args[@]}" >> "$dir/serve.out" 2>> "$dir/serve.log" &
  serve=$!
  pids+=("$serve")
  echo "$serve serve restarted" >> "$dir/pids"
  rm -f "$dir/serve.restart"  # after the pid is listed: live_faults.py looks for it once this is gone
done
cat "$dir/serve.out"
[ $rc -eq 0 ] || { echo "testbed: aryl serve exited $rc; last lines of its log:" >&2; tail -5 "$dir/serve.log" >&2; }
exit $rc
