#!/usr/bin/env bash
# Real-GPU check of the job's own evidence (device machine, not CI): evidence_job.py recorded
# twice (8192 and 12288 matrices) with --rate; show must list the CUDA out-of-memory error from
# the traceback, the throughput series and the phase markers; diff must give the throughput row.
# Usage: tests/gpu/evidence_check.sh BIN [OUTDIR]
set -uo pipefail
BIN=${1:?usage: $0 GPULEDGER_BINARY [OUTDIR]}
OUT=${2:-${OUT:-/tmp/gpuledger-evidence}}
here=$(dirname "$0")
mkdir -p "$OUT"
for size in 8192 12288; do
  "$BIN" record -o "$OUT/run-$size.ledger" --interval 250ms \
    --rate 'step=step [0-9]+ ([0-9.]+) s/step:s/step' -- python3 "$here/evidence_job.py" "$size" \
    > "$OUT/run-$size.out" 2> "$OUT/run-$size.err"
  echo "record of $size exited $?"
  tail -3 "$OUT/run-$size.err"
done
"$BIN" show "$OUT/run-8192.ledger"
"$BIN" diff "$OUT/run-8192.ledger" "$OUT/run-12288.ledger"
"$BIN" plot "$OUT/run-8192.ledger" "$OUT/run-12288.ledger" -o "$OUT/plot.html"
grep -c '<section id="throughput">' "$OUT/plot.html"
