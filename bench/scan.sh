#!/usr/bin/env bash
# One side-by-side run, CPU (user + sys) per refresh, the median of R interleaved rounds:
#   1. the live machine with a population of N processes x M fds (bench/population.py):
#      a raw getdents + readlink walk (the limit), gpuledger --json, fuser, lsof, nvtop -s;
#   2. simulated DDP trees of 2 and 64 ranks (`gpuledger simulate ddp-peer-mirror`): gpuledger
#      --root TREE, and the peers reading the tree as the live machine inside a private mount
#      namespace (unshare -m: the tree's proc/ and sys/ bound over /proc and /sys, /dev a tmpfs
#      with the usual nodes and the tree's DRM minors as `c 226 N` nodes); gpuledger reading that
#      /proc as live is a row too;
#   3. the incremental sampler's steady state at 10 Hz, and how fast it sees a new GPU fd.
# Every row's ratio is gpuledger's CPU over that row's: below 1, gpuledger costs less.
#   bench/scan.sh [PROCESSES] [FDS_PER_PROCESS] [REPEATS]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000}; M=${2:-100}; R=${3:-5}
cargo build --release -q --bin gpuledger --example raw_scan --example sampler_steady
BIN=$PWD/target/release/gpuledger; RAW=$PWD/target/release/examples/raw_scan
STEADY=$PWD/target/release/examples/sampler_steady
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# CPU ms of one run of "$@" (user + sys of the command and its children).
cpu_ms() {
  local t; t=$( { TIMEFORMAT='%3U %3S'; time "$@" >/dev/null 2>&1; } 2>&1 | tail -1 ) || true
  awk '{printf "%.1f\n", ($1 + $2) * 1000}' <<<"$t"
}
have() { command -v "$1" >/dev/null; }
# measure SCENE NAME CMD...: one round's CPU, appended to WORK/SCENE.NAME
measure() { local f="$WORK/$1.$2"; shift 2; cpu_ms "$@" >>"$f"; }

# The peers of one scene, in the order the table shows them (a missing tool is skipped).
peers() {
  local scene=$1 dri=$2
  measure "$scene" "raw walk (the limit)" "$RAW"
  have fuser && measure "$scene" "fuser -v DEVICE" fuser -v "$dri"
  have lsof && measure "$scene" "lsof -n -w" lsof -n -w
  have nvtop && measure "$scene" "nvtop -s" nvtop -s
  return 0
}

# 1. The live population.
coproc POP { python3 bench/population.py "$N" "$M"; }
read -r ready <&"${POP[0]}"
[ "$ready" = READY ] || { echo "population did not start" >&2; exit 1; }
for _ in $(seq "$R"); do
  measure live "gpuledger --json" "$BIN" --json
  peers live /dev/null
done
procs=$(ls /proc | grep -c '^[0-9]')

# 3. Steady state, while the population is there: a watcher opens a /dev/dri/ path after warm-up.
steady_out=$WORK/steady.txt
mkdir -p /dev/dri 2>/dev/null || true
probe=/dev/dri/gpuledger-bench-$$
if touch "$probe" 2>/dev/null; then
  python3 -c '
import os, sys, time
pid = os.getpid(); print(pid, flush=True)
go = f"/tmp/gpuledger-bench-go-{pid}"
while not os.path.exists(go): time.sleep(0.01)
fd = os.open(sys.argv[1], os.O_RDONLY); time.sleep(30)' "$probe" >"$WORK/watch" &
  watcher=$!; sleep 0.5; wpid=$(cat "$WORK/watch")
  "$STEADY" 10 10 "$wpid" >"$steady_out"
  kill "$watcher" 2>/dev/null || true; rm -f "$probe" "/tmp/gpuledger-bench-go-$wpid"
  rmdir /dev/dri 2>/dev/null || true
else
  "$STEADY" 10 10 >"$steady_out"
fi
kill "$POP_PID" 2>/dev/null || true; wait "$POP_PID" 2>/dev/null || true

# 2. Simulated trees, each read by gpuledger as a tree and by every peer as the live /proc.
ns_ok=no
unshare -m true 2>/dev/null && ns_ok=yes
for ranks in 2 64; do
  tree=$WORK/ranks-$ranks; scene="tree-$ranks"
  "$BIN" simulate ddp-peer-mirror --ranks "$ranks" --at 20s --backing registered-only -o "$tree" >/dev/null 2>&1
  minors=$(find "$tree/proc" -path '*/fd/*' -type l -exec readlink {} + | grep -o '/dev/dri/[a-zA-Z]*[0-9]*' | sort -u || true)
  for _ in $(seq "$R"); do
    measure "$scene" "gpuledger --root TREE --json" "$BIN" --root "$tree" --json
    [ "$ns_ok" = yes ] || continue
    export -f measure cpu_ms peers have; export WORK RAW BIN
    unshare -m bash -c '
      set -e; tree=$1; scene=$2; shift 2
      mount --make-rprivate /
      mount -t tmpfs none /dev
      mknod -m 666 /dev/null c 1 3; mknod -m 666 /dev/zero c 1 5; mknod -m 666 /dev/urandom c 1 9
      mkdir /dev/dri
      for node in "$@"; do
        n=${node##*[a-zA-Z]}; mknod -m 666 "$node" c 226 "$n"
      done
      mount --bind "$tree/proc" /proc; mount --bind "$tree/sys" /sys
      measure "$scene" "gpuledger --json (tree bound as live proc)" "$BIN" --json
      peers "$scene" "${1:-/dev/null}"' _ "$tree" "$scene" $minors
  done
done

# The table: one row per scene and tool, gpuledger's ratio to each.
printf '\n%-10s %-40s %10s %14s\n' scene tool "CPU ms" "gpuledger/it"
for scene in live tree-2 tree-64; do
  case $scene in
    live) ours="gpuledger --json";;
    *) ours="gpuledger --root TREE --json";;
  esac
  [ -f "$WORK/$scene.$ours" ] || continue
  g=$(median <"$WORK/$scene.$ours")
  for f in "$WORK/$scene".*; do
    name=${f#"$WORK/$scene."}; m=$(median <"$f")
    printf '%-10s %-40s %10s %14s\n' "$scene" "$name" "$m" \
      "$(awk -v g="$g" -v m="$m" 'BEGIN { if (m > 0) printf "%.2f", g / m; else print "-" }')"
  done
done
echo "live: $N processes x $M fds ($procs pids in /proc); tree-R: R ranks, R^2 DRM clients; medians of $R rounds"
have nvtop || echo "nvtop: not installed (Debian ships it in contrib; apt-get install -y nvtop where that is enabled)"
[ "$ns_ok" = yes ] || echo "peers on trees: skipped (unshare -m needs CAP_SYS_ADMIN)"
cat "$steady_out"
