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
