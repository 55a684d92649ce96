#!/usr/bin/env bash
# Real jobs recorded on the H200 (device machine, not CI): JAX with XLA's preallocation (issue 34:
# a 105 GiB hold from about 2.7 s, released on exit), JAX without it, and a PyTorch job (alloc.py:
# 8 GiB VRAM + 4 GiB pinned); `show` and `report` of each. Usage: tests/gpu/recorded_jobs.sh BIN OUTDIR
set -uo pipefail
BIN=${1:-gpu-bin/gpuledger}; OUT=${2:-${OUT:-/tmp/gpuledger-jobs}}
mkdir -p "$OUT"; here=$(dirname "$0")
JAX='import jax.numpy as jnp, time; x = jnp.ones((8192, 8192)); (x @ x).block_until_ready(); time.sleep(4)'
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
python3 -c 'import jax, jaxlib, torch; print("jax", jax.__version__, "jaxlib", jaxlib.__version__, "torch", torch.__version__, "cuda", torch.version.cuda)'
run() { # NAME, then the command
  local name=$1; shift
  echo "=== $name: $*"
  "$BIN" record -o "$OUT/$name.ledger" --interval 150ms -- "$@" 2>&1 | tail -3
  "$BIN" show "$OUT/$name.ledger" 2>&1
  "$BIN" show "$OUT/$name.ledger" --json > "$OUT/$name.show.json" 2>&1
  "$BIN" report "$OUT/$name.ledger" -o "$OUT/$name.report.md" --force 2>&1
  sqlite3 "$OUT/$name.ledger" "SELECT key, value FROM meta WHERE key IN ('python','driver_versions','modules','kernel_log')" 2>/dev/null \
    || python3 -c "import sqlite3,sys; [print(*r) for r in sqlite3.connect(sys.argv[1]).execute(\"SELECT key, value FROM meta WHERE key IN ('python','driver_versions','modules','kernel_log')\")]" "$OUT/$name.ledger"
  grep -n "installed here\|not found\|python\|CUDA runtime\|NVIDIA driver\|modules\|kernel log\|No finding" "$OUT/$name.report.md"
}
run jax-prealloc python3 -c "$JAX"
XLA_PYTHON_CLIENT_PREALLOCATE=false run jax-grow python3 -c "$JAX"
run torch-alloc python3 "$here/alloc.py" 4
ls -la "$OUT"
