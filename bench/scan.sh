#!/usr/bin/env bash
# Full-snapshot cost against fuser, lsof and a minimal raw scan on the same process population,
# then the incremental sampler's steady-state cost at 10 Hz and how fast it sees a new GPU fd.
#   bench/scan.sh [PROCESSES] [FDS_PER_PROCESS] [REPEATS]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000}; M=${2:-100}; R=${3:-5}
cargo build --release -q --bin gpuledger --example raw_scan --example sampler_steady
BIN=target/release/gpuledger; RAW=target/release/examples/raw_scan; STEADY=target/release/examples/sampler_steady

coproc POP { python3 bench/population.py "$N" "$M"; }
read -r ready <&"${POP[0]}"
[ "$ready" = READY ] || { echo "population did not start" >&2; exit 1; }
trap 'kill $POP_PID 2>/dev/null || true' EXIT
echo "population: $N processes x $M fds (+ $(ls /proc | grep -c '^[0-9]') pids in /proc)"

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
time_cmd() {  # prints the median wall time in seconds of R runs
  for _ in $(seq "$R"); do
    s=$(date +%s%N); "$@" >/dev/null 2>&1 || true; e=$(date +%s%N)
    echo "scale=4; ($e - $s) / 1000000000" | bc
  done | median
}
raw=$(time_cmd "$RAW"); gl=$(time_cmd "$BIN" --json)
fu=$(command -v fuser >/dev/null && time_cmd fuser -v /dev/null || echo NA)
ls_=$(command -v lsof >/dev/null && time_cmd lsof -n -w || echo NA)
ratio() { [ "$2" = NA ] && echo NA || echo "scale=2; $1 / $2" | bc; }
printf '%-22s %8s s\n' "raw scan" "$raw" "gpuledger --json" "$gl" "fuser -v /dev/null" "$fu" "lsof -n" "$ls_"
echo "ratios: gpuledger/raw = $(ratio "$gl" "$raw")  gpuledger/fuser = $(ratio "$gl" "$fu")  gpuledger/lsof = $(ratio "$gl" "$ls_")"

# Steady state: a watcher process that opens a /dev/dri/ path after the sampler's warm-up.
mkdir -p /dev/dri 2>/dev/null || true
probe=/dev/dri/gpuledger-bench-$$
if touch "$probe" 2>/dev/null; then
  python3 -c '
import os, sys, time
pid = os.getpid(); print(pid, flush=True)
go = f"/tmp/gpuledger-bench-go-{pid}"
while not os.path.exists(go): time.sleep(0.01)
fd = os.open(sys.argv[1], os.O_RDONLY); time.sleep(30)' "$probe" > /tmp/gpuledger-watch.$$ &
  watcher=$!; sleep 0.5; wpid=$(cat /tmp/gpuledger-watch.$$)
  "$STEADY" 10 10 "$wpid"
  kill "$watcher" 2>/dev/null || true; rm -f "$probe" "/tmp/gpuledger-bench-go-$wpid" /tmp/gpuledger-watch.$$
  rmdir /dev/dri 2>/dev/null || true
else
  "$STEADY" 10 10
fi
