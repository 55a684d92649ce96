#!/usr/bin/env bash
# Real third-party jobs recorded on the H200 (device machine, not CI), the corpus of
# tests/fixtures/recordings/ (issue 34): JAX with and without XLA's preallocation, timm training
# with pinned DataLoader workers, CuPy's pinned pool + hostRegister, PyTorch expandable segments,
# a torch.cuda.OutOfMemoryError, a job stopped by guard, a job killed by SIGKILL, transformers
# inference, a Lightning Trainer run; `show` and `report` of each, the ledgers packed in one tarball.
# Usage: tests/gpu/recorded_jobs.sh BIN OUTDIR
set -uo pipefail
BIN=${1:-gpu-bin/gpuledger}; OUT=${2:-${OUT:-/tmp/gpuledger-jobs}}
mkdir -p "$OUT/ledgers"; here=$(cd "$(dirname "$0")" && pwd); jobs=$here/jobs
JAX='import jax.numpy as jnp, time; x = jnp.ones((8192, 8192)); (x @ x).block_until_ready(); time.sleep(4)'
nvidia-smi --query-gpu=name,driver_version,memory.total,persistence_mode --format=csv
python3 - <<'PY'
import importlib
for m in ["torch", "jax", "jaxlib", "cupy", "timm", "transformers", "lightning", "pytorch_lightning"]:
    try:
        print(m, importlib.import_module(m).__version__)
    except Exception as e:
        print(m, "not importable:", type(e).__name__)
PY
run() { # NAME, then the command
  local name=$1; shift
  local ledger="$OUT/ledgers/$name.ledger"
  echo "=== $name: $*"
  local t0=$SECONDS
  "$BIN" record -o "$ledger" --interval 150ms -- "$@" > "$OUT/$name.job.txt" 2>&1
  echo "record exit $? after $((SECONDS - t0)) s; job output tail:"; tail -4 "$OUT/$name.job.txt"
  "$BIN" show "$ledger" 2>&1
  "$BIN" show "$ledger" --json > "$OUT/ledgers/$name.show.json" 2>&1
  "$BIN" report "$ledger" -o "$OUT/ledgers/$name.report.md" --force 2>&1
  grep -n "installed here\|not found\|python\|CUDA runtime\|NVIDIA driver\|modules\|kernel log\|No finding" "$OUT/ledgers/$name.report.md"
  ls -la "$ledger"
}
run jax-prealloc python3 -c "$JAX"
XLA_PYTHON_CLIENT_PREALLOCATE=false run jax-grow python3 -c "$JAX"
run timm-pinned-loader python3 "$jobs/timm_train.py" 30
run cupy-pinned-register python3 "$jobs/cupy_pinned.py"
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True run torch-expandable python3 "$jobs/torch_expandable.py"
run torch-oom python3 "$jobs/torch_oom.py"
run guard-stopped "$BIN" guard --max-job-host-gpu 3GiB --interval 300ms -- python3 "$here/grow_pinned.py" 40 0.5
run sigkill-midrun sh -c "python3 '$here/alloc.py' 30 & p=\$!; sleep 6; kill -9 \$p; wait \$p"
run bert-inference python3 "$jobs/bert_infer.py"
run lightning-fit python3 "$jobs/lightning_fit.py"
tar -C "$OUT" -czf "$OUT/corpus.tar.gz" ledgers
ls -la "$OUT" "$OUT/ledgers"
