#!/usr/bin/env bash
# The tracer's overhead on the device machine (not CI), conditions interleaved round by round:
# calls.c (4 KiB cuMemAlloc/cuMemFree pairs, the traced calls, and cuCtxGetDevice, not traced)
# bare, with CUPTI and an empty callback (null_inject.c: CUPTI's own floor), under
# `record --trace` and `record --no-trace`; then train.py's step loop bare / traced / untraced.
# Builds the two C files with the CUDA toolkit (CUDA_HOME, else nvcc's, else /usr/local/cuda).
# Then the medians per condition (summary.py). TRAIN=0 leaves the step loop out.
# Usage: tests/gpu/overhead/overhead.sh BIN [OUTDIR] [ROUNDS]
set -uo pipefail
BIN=${1:?usage: $0 GPULEDGER_BINARY [OUTDIR] [ROUNDS]}
OUT=${2:-${OUT:-/tmp/gpuledger-overhead}}
ROUNDS=${3:-3}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
cuda=${CUDA_HOME:-$(dirname "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")}
inc="-I$cuda/include -I$cuda/extras/CUPTI/include"
lib="-L$cuda/lib64 -L$cuda/lib64/stubs -L$cuda/extras/CUPTI/lib64"
gcc -O2 $inc "$here/calls.c" -o "$OUT/calls" $lib -lcuda || exit 1
gcc -O2 -shared -fPIC $inc "$here/null_inject.c" -o "$OUT/libnull_inject.so" $lib -lcupti \
  -Wl,-rpath,"$cuda/extras/CUPTI/lib64:$cuda/lib64" || exit 1
n=400000
for r in $(seq "$ROUNDS"); do
  "$OUT/calls" $n 2 | sed 's/^/bare: /'
  CUDA_INJECTION64_PATH="$OUT/libnull_inject.so" "$OUT/calls" $n 2 | sed 's/^/cupti-empty: /'
  "$BIN" record -o "$OUT/calls-trace-$r.ledger" --force --trace -- "$OUT/calls" $n 2 2>/dev/null |
    sed 's/^/traced: /'
  "$BIN" record -o "$OUT/calls-notrace-$r.ledger" --force --no-trace -- "$OUT/calls" $n 2 \
    2>/dev/null | sed 's/^/untraced: /'
done
"$BIN" show "$OUT/calls-trace-1.ledger" | sed -n '/^By call/,/^$/p'
[ "${TRAIN:-1}" = 0 ] && exit 0
for r in $(seq "$ROUNDS"); do
  python3 "$here/train.py" | sed 's/^/bare: /'
  "$BIN" record -o "$OUT/train-trace-$r.ledger" --force --trace -- python3 "$here/train.py" \
    2>/dev/null | sed 's/^/traced: /'
  "$BIN" record -o "$OUT/train-notrace-$r.ledger" --force --no-trace -- python3 "$here/train.py" \
    2>/dev/null | sed 's/^/untraced: /'
done
"$BIN" show "$OUT/train-trace-1.ledger" | sed -n '/^By call/,/^$/p'
