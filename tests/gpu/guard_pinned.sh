#!/usr/bin/env bash
# Real-GPU check of guard against NVIDIA pinned host memory (device machine, not CI): a PyTorch job
# pins 1 GiB every ~1.5 s (grow_pinned.py). Guard must stop it before 8 GiB are pinned, once with
# the machine-wide ceiling `--max-driver-held 6GiB` (issue 16's run) and once with the per-job
# ceiling `--max-job-host-gpu 6GiB`, both at `--interval 500ms`. Prints how many GiB were pinned
# when guard stopped the job and how long after the 6 GiB crossing; exits 1 if a run pinned more
# than 8 GiB, or when a finding printed with the trip is a false over_reported or advises
# running under guard. Usage: tests/gpu/guard_pinned.sh BIN [OUTDIR]
set -euo pipefail
BIN=${1:?usage: $0 GPULEDGER_BINARY [OUTDIR]}
OUT=${2:-${OUT:-/tmp/gpuledger-guard-pinned}}
here=$(dirname "$0")
limit_gib=8
mkdir -p "$OUT"
nvidia-smi --query-gpu=pci.bus_id,name,driver_version --format=csv > "$OUT/nvidia-smi.csv" || true
failed=0

# run NAME FLAG...: guard the job with FLAG..., then summarise its output.
run() {
  local name=$1; shift
  local rc=0 stopped pinned crossed
  "$BIN" guard "$@" --interval 500ms -- python3 "$here/grow_pinned.py" \
    > "$OUT/$name.out" 2> "$OUT/$name.err" || rc=$?
  stopped=$(date +%s.%N)
  pinned=$(grep -c '^PINNED' "$OUT/$name.out" || true)
  # The job's memory crossed 6 GiB when block 7 was pinned.
  crossed=$(awk '$1 == "PINNED" && $2 == 7 { sub("t=", "", $4); print $4 }' "$OUT/$name.out")
  printf '%s: guard exited %s; the job had pinned %s GiB' "$name" "$rc" "$pinned"
  if [ -n "$crossed" ]; then
    awk -v a="$stopped" -v b="$crossed" 'BEGIN { printf "; stopped %.2f s after crossing 6 GiB", a - b }'
  fi
  printf '\n'
  grep '^gpuledger guard' "$OUT/$name.err" || true
  # The findings guard printed with the trip: none may compare readings of different instants
  # (over_reported against a stale device total) or advise running under guard.
  grep -E '^  [a-z_]+: ' "$OUT/$name.err" || true
  if grep -qE '^  over_reported: |under `gpuledger guard`' "$OUT/$name.err"; then
    echo "FAIL: $name: a false over_reported finding or advice to use guard (see $OUT/$name.err)"
    failed=1
  fi
  if [ "$rc" -ne 4 ] || [ "$pinned" -gt "$limit_gib" ]; then
    echo "FAIL: $name: guard did not stop the job by $limit_gib GiB pinned (see $OUT/$name.err)"
    failed=1
  fi
}

run driver_held --max-driver-held 6GiB
run job_host_gpu --max-job-host-gpu 6GiB
exit "$failed"
