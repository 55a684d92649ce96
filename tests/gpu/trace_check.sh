#!/usr/bin/env bash
# Real-GPU check of API-level tracing (device machine, not CI): trace_job.py under `record`
# (tracer beside the binary or in GPULEDGER_TRACER), then `show`; the matmul and per-call
# overheads with the tracer, with --no-trace, and without gpuledger.
# Usage: tests/gpu/trace_check.sh BIN [OUTDIR]
set -uo pipefail
BIN=${1:?usage: $0 GPULEDGER_BINARY [OUTDIR]}
OUT=${2:-${OUT:-/tmp/gpuledger-trace}}
here=$(dirname "$0")
job="$here/trace_job.py"
mkdir -p "$OUT"
"$BIN" record -o "$OUT/trace.ledger" --interval 250ms -- python3 "$job" all \
  > "$OUT/trace.out" 2> "$OUT/trace.err"
echo "record exited $?"
cat "$OUT/trace.out"
grep -v '^\[' "$OUT/trace.err" | tail -40
"$BIN" show "$OUT/trace.ledger"
"$BIN" show --json "$OUT/trace.ledger" > "$OUT/trace.json"
for mode in calls bench; do
  for i in 1 2; do
    "$BIN" record -o "$OUT/$mode-trace-$i.ledger" --trace -- python3 "$job" $mode 2>/dev/null
    "$BIN" record -o "$OUT/$mode-notrace-$i.ledger" --no-trace -- python3 "$job" $mode 2>/dev/null
    python3 "$job" $mode | sed 's/^/bare: /'
  done
done
"$BIN" show "$OUT/calls-trace-1.ledger" | sed -n '/^By call/,$p'
