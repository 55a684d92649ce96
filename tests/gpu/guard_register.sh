#!/usr/bin/env bash
# guard and memory no counter shows (device machine, not CI): trace_job.py register pins 512 MiB
# of host memory in place (cudaHostRegister) each second up to 4 GiB. Under
# `guard --max-job-host-gpu 1GiB` with tracing (the tracer beside the binary) the job must be
# stopped after at most 1.5 GiB; with --no-trace the counters do not see it and it runs to the end.
# Usage: tests/gpu/guard_register.sh BIN [OUTDIR]
set -uo pipefail
BIN=${1:?usage: $0 GPULEDGER_BINARY [OUTDIR]}
OUT=${2:-${OUT:-/tmp/gpuledger-guard-register}}
here=$(dirname "$0")
mkdir -p "$OUT"
fail=0
for mode in trace no-trace; do
  echo "== guard --max-job-host-gpu 1GiB --$mode"
  "$BIN" guard --max-job-host-gpu 1GiB --interval 250ms --json "--$mode" -- \
    python3 "$here/trace_job.py" register > "$OUT/$mode.out" 2> "$OUT/$mode.err"
  code=$?
  echo "guard exited $code"
  grep -v '^{' "$OUT/$mode.out"
  grep '^{' "$OUT/$mode.out" | python3 -c 'import json, sys
for l in sys.stdin:
    e = json.loads(l)
    print("event", e["event"], "trip", e["trip"], "job_host_gpu", e.get("job_host_gpu"))'
  grep -v '^\[' "$OUT/$mode.err" | tail -8
  last=$(grep -o 'REGISTERED [0-9]*' "$OUT/$mode.out" | tail -1 | awk '{print $2}')
  case $mode in
    trace) { [ "$code" = 4 ] && [ "${last:-0}" -le 1536 ]; } ||
      { echo "FAIL: traced guard did not stop the job by 1.5 GiB (exit $code, last $last MiB)"; fail=1; } ;;
    no-trace) [ "$code" = 0 ] ||
      echo "note: untraced guard exited $code (last $last MiB)" ;;
  esac
done
exit $fail
