#!/usr/bin/env bash
# A live-mode testbed on one machine: `aryl serve` and one `aryl agent` per configured server,
# all on loopback, each agent with its own work directory under DIR. Runs until the serve
# process ends (its workload is done, or it failed), then stops every process it started, by
# pid, also when interrupted or when anything fails. Exits with the serve's exit code.
#
#   scripts/testbed.sh [--dir DIR] [--training N] [--inference M] [--gpus G] -- SERVE_ARGS...
#
# The training servers are t0..t(N-1) (V100), the inference servers i0..i(M-1) (T4), as
# `aryl serve --servers N --set cluster.inference.servers=M` names them. DIR/pids lists every
# pid started; DIR/serve.log and DIR/agent-NAME/agent.log hold their logs. ARYL_BIN, if set,
# names the aryl binary (default build/aryl).
set -euo pipefail
cd "$(dirname "$0")/.."
aryl="${ARYL_BIN:-$PWD/build/aryl}"  # ARYL_BIN: another build of aryl
dir="testbed"
training=4
inference=4
gpus=8
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir="$2"; shift 2 ;;
    --training) training="$2"; shift 2 ;;
    --inference) inference="$2"; shift 2 ;;
    --gpus) gpus="$2"; shift 2 ;;
    --) shift; break ;;
    *) echo "testbed: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -x "$aryl" ] || { echo "testbed: $aryl not built (run scripts/setup.sh)" >&2; exit 2; }

mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
rm -f "$dir/port" "$dir/pids"
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
  exit $rc
}
trap stop_all EXIT
trap 'exit 130' INT TERM

"$aryl" serve --token-file "$dir/token" --port-file "$dir/port" --work-dir "$dir/work" \
  --servers "$training" --set cluster.training.gpus_per_server="$gpus" \
  --set cluster.inference.servers="$inference" --set cluster.inference.gpus_per_server="$gpus" \
  "$@" > "$dir/serve.out" 2> "$dir/serve.log" &
serve=$!
pids+=("$serve")
echo "$serve serve" >> "$dir/pids"

for _ in $(seq 300); do
  [ -s "$dir/port" ] && break
  kill -0 "$serve" 2>/dev/null || break
  sleep 0.05
done
if [ ! -s "$dir/port" ]; then
  echo "testbed: aryl serve did not start listening; its log:" >&2
  cat "$dir/serve.log" >&2
  exit 3
fi
port="$(cat "$dir/port")"

start_agent() {  # name gpu_type pool
  mkdir -p "$dir/agent-$1"
  "$aryl" agent --port "$port" --token-file "$dir/token" --name "$1" --gpu-type "$2" --gpus "$gpus" \
    --pool "$3" --work-dir "$dir/agent-$1" 2> "$dir/agent-$1/agent.log" &
  pids+=("$!")
  echo "$! agent $1" >> "$dir/pids"
}
for ((i = 0; i < training; i++)); do start_agent "t$i" V100 training; done
for ((i = 0; i < inference; i++)); do start_agent "i$i" T4 inference; done

set +e
wait "$serve"
rc=$?
set -e
cat "$dir/serve.out"
[ $rc -eq 0 ] || { echo "testbed: aryl serve exited $rc; last lines of its log:" >&2; tail -5 "$dir/serve.log" >&2; }
exit $rc
