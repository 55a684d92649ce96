#!/usr/bin/env bash
# Real-GPU check of the NVML backend (device machine, not CI): a PyTorch program holding 8 GiB of
# VRAM and 4 GiB of pinned host memory must show as such in `gpuledger --json` and in
# `gpuledger record -- python3 alloc.py`. Usage: tests/gpu/h200_check.sh BIN OUTDIR
set -euo pipefail
BIN=${1:-gpu-bin/gpuledger}; OUT=${2:-${OUT:-/tmp/gpuledger-h200}}
mkdir -p "$OUT"; here=$(dirname "$0")
nvidia-smi --query-gpu=pci.bus_id,name,memory.total,memory.used,driver_version --format=csv > "$OUT/nvidia-smi.csv" || true
python3 "$here/alloc.py" 40 --wait-baseline > "$OUT/alloc.txt" 2>&1 &
prog=$!
for _ in $(seq 120); do grep -q BASELINE "$OUT/alloc.txt" && break; sleep 0.5; done
"$BIN" --json > "$OUT/baseline.json"   # the CUDA context alone
touch "/tmp/gpuledger-go-$prog"
for _ in $(seq 120); do grep -q READY "$OUT/alloc.txt" && break; sleep 0.5; done
cat "$OUT/alloc.txt"
grep -q "/dev/zero" /proc/$prog/maps && echo "pinned memory is a /dev/zero mapping" || echo "no /dev/zero mapping seen"
grep -E "RssShmem|VmRSS" /proc/$prog/status
nvidia-smi --query-compute-apps=pid,used_memory --format=csv | tee "$OUT/apps.csv"
"$BIN" --json > "$OUT/snapshot.json"
"$BIN" > "$OUT/snapshot.txt"; cat "$OUT/snapshot.txt"
kill $prog; wait $prog 2>/dev/null || true
"$BIN" record -o "$OUT/run.ledger" --interval 500ms -- python3 "$here/alloc.py" 6 > "$OUT/record.txt" 2>&1 || true
cat "$OUT/record.txt"
"$BIN" show "$OUT/run.ledger" --json > "$OUT/show.json"
python3 - "$OUT" "$prog" <<'PY'
import json, re, sys
out, pid = sys.argv[1], int(sys.argv[2])
alloc = open(f"{out}/alloc.txt").read()
m = re.search(r"device_used_by_process=(\d+) pinned=(\d+)", alloc)
used_by_torch, pinned = int(m.group(1)), int(m.group(2))
def vram_of(doc):
    p = next((p for p in doc["processes"] if p["pid"] == pid), None)
    return sum(u["resident"] or 0 for u in p["usage"] if u["region"] == "vram") if p else 0
base = vram_of(json.load(open(f"{out}/baseline.json")))
snap = json.load(open(f"{out}/snapshot.json"))
p = next(p for p in snap["processes"] if p["pid"] == pid)
vram = vram_of(snap)
shm = sum(u["resident"] or 0 for u in p["usage"] if u["region"] == "pinned-shmem")
gib = 2**30
print(f"CUDA context alone: {base/gib:.3f} GiB; allocations = vram - context = {(vram-base)/gib:.3f} GiB "
      f"(8 GiB asked: {100*((vram-base)/(8*gib)-1):+.2f} %)")
print(f"snapshot pid {pid}: vram {vram/gib:.3f} GiB (8 GiB asked: {100*(vram/(8*gib)-1):+.1f} %; "
      f"device memory the process took per cudaMemGetInfo {used_by_torch/gib:.3f} GiB: {100*(vram/used_by_torch-1):+.1f} %), "
      f"pinned-shmem {shm/gib:.3f} GiB (4 GiB asked: {100*(shm/pinned-1):+.1f} %)")
show = json.load(open(f"{out}/show.json"))
for pk in show["peaks"]:
    print(f"record peak pid {pk['pid']} {pk['device']}: device-local {pk['device_local_peak']/gib:.3f} GiB, host {pk['host_peak']/gib:.3f} GiB")
PY
