#!/usr/bin/env bash
# Two torchrun ranks recorded twice (plain, then NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=0), diffed.
# Usage: tests/gpu/ddp_check.sh BIN OUTDIR   (device machine, not CI)
set -euo pipefail
BIN=${1:-gpu-bin/gpuledger}; OUT=${2:-${OUT:-/tmp/gpuledger-ddp}}
mkdir -p "$OUT"; here=$(dirname "$0")
export NCCL_NVLS_ENABLE=0
"$BIN" record -o "$OUT/A.ledger" --interval 500ms -- torchrun --standalone --nproc-per-node=2 "$here/ddp_repro.py" 8 > "$OUT/A.txt" 2>&1 || true
NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=0 "$BIN" record -o "$OUT/B.ledger" --interval 500ms -- torchrun --standalone --nproc-per-node=2 "$here/ddp_repro.py" 8 > "$OUT/B.txt" 2>&1 || true
cat "$OUT/A.txt"; echo ---; "$BIN" diff "$OUT/A.ledger" "$OUT/B.ledger" | tee "$OUT/diff.txt"
"$BIN" show "$OUT/A.ledger" --json > "$OUT/A.json"
"$BIN" report "$OUT/A.ledger" "$OUT/B.ledger" --template generic -o "$OUT/report.md"
sed -n '/## Environment/,/### GPUs/p;/### Over time/,/## Expected/p' "$OUT/report.md"
grep -h "reserved" "$OUT/A.txt" "$OUT/B.txt"
python3 - "$OUT" <<'PY'
import json, re, sys
out = sys.argv[1]
for run in ("A", "B"):
    text = open(f"{out}/{run}.txt").read()
    reserved = {int(m.group(1)): int(m.group(2)) for m in re.finditer(r"rank (\d+) pid \d+ .* reserved (\d+)", text)}
    show = json.load(open(f"{out}/A.json")) if run == "A" else None
    if show:
        for pk in show["peaks"]:
            r = pk["rank"]
            if r in reserved:
                print(f"run {run} rank {r}: gpuledger device-local peak {pk['device_local_peak']/2**30:.3f} GiB vs torch reserved {reserved[r]/2**30:.3f} GiB ({100*(pk['device_local_peak']/reserved[r]-1):+.1f} %)")
PY
