#!/usr/bin/env bash
# Real-GPU check of API-level tracing (device machine, not CI): trace_job.py under `record`
# (tracer beside the binary or in GPULEDGER_TRACER), then `show`, `plot`'s chart, the report's
# calls and `show --json` (the overheads: overhead/overhead.sh).
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
echo "== plot: the API-attributed chart beside the counters"
"$BIN" plot -o "$OUT/trace.html" --force "$OUT/trace.ledger" && ls -l "$OUT/trace.html"
grep -o '<h[23][^>]*>[^<]*' "$OUT/trace.html" | sed 's/<[^>]*>//' | head -30
echo "== report: the calls it quotes"
"$BIN" report "$OUT/trace.ledger" > "$OUT/trace-report.md" && wc -l "$OUT/trace-report.md"
sed -n '/[Cc]all/,+14p' "$OUT/trace-report.md" | head -40
echo "== show --json: the registered 2 GiB and its pid"
python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
for c in (d.get("calls") or {}).get("rows", []):
    c.pop("live", None)
    print(c)
for c in d.get("call_checks", []):
    print("check", c)' "$OUT/trace.json"
