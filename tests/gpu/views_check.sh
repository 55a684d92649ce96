#!/usr/bin/env bash
# Real-GPU check of what a person or a dashboard sees (device machine, not CI): while alloc.py
# holds 8 GiB of VRAM and 4 GiB of pinned host memory, the snapshot's VRAM USED / TOTAL column and
# driver-held parts, the CSV and --pid/--device filters, serve's device-memory, driver-held and
# known-issue families, doctor, and top without a terminal are compared with nvidia-smi.
# Usage: tests/gpu/views_check.sh BIN [OUTDIR]
set -uo pipefail
BIN=${1:?usage: $0 GPULEDGER_BINARY [OUTDIR]}
OUT=${2:-${OUT:-/tmp/gpuledger-views}}
here=$(dirname "$0")
mkdir -p "$OUT"
python3 "$here/alloc.py" 60 > "$OUT/alloc.txt" 2>&1 &
prog=$!
for _ in $(seq 120); do grep -q READY "$OUT/alloc.txt" && break; sleep 0.5; done
cat "$OUT/alloc.txt"
echo "== nvidia-smi"
nvidia-smi --query-gpu=index,pci.bus_id,memory.used,memory.total,driver_version --format=csv,nounits
nvidia-smi --query-compute-apps=pid,used_memory --format=csv,nounits
echo "== snapshot"
"$BIN" | tee "$OUT/snapshot.txt"
echo "== csv, --pid $prog"
"$BIN" --format csv --pid "$prog" | tee "$OUT/snapshot.csv"
echo "== --device 0 --json (devices kept)"
"$BIN" --device 0 --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print([(x["id"], x.get("vram_total"), x.get("vram_used")) for x in d["devices"]])'
echo "== serve"
port=19464
"$BIN" serve --listen "127.0.0.1:$port" --interval 1s 2> "$OUT/serve.err" &
srv=$!
for _ in $(seq 40); do curl -sf "http://127.0.0.1:$port/metrics" > "$OUT/metrics.txt" && break; sleep 0.25; done
grep -E '^gpuledger_(device_memory_bytes|driver_held_bytes|known_issue|findings)' "$OUT/metrics.txt"
curl -s "http://127.0.0.1:$port/" | head -20
kill $srv
echo "== doctor"
"$BIN" doctor | tee "$OUT/doctor.txt"
echo "== top without a terminal"
"$BIN" top < /dev/null > "$OUT/top.txt" 2>&1; echo "top exit $?"; cat "$OUT/top.txt"
kill $prog; wait $prog 2>/dev/null
