#!/usr/bin/env bash
# CI for installing and deploying (called by .ci/run): builds the Python wheel with maturin,
# installs it into a fresh venv and runs gpuledger from there; validates deploy/kubernetes offline.
# The container image is not built here: CI reaches package registries only, not the image
# registries the Dockerfile's base images come from (docs/REFERENCE.md: Deployment).
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian's python3 has no venv module without python3-venv (its pip is externally managed).
if ! python3 -c 'import ensurepip' 2>/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/tools"
"$work/tools/bin/pip" install -q --disable-pip-version-check "maturin>=1.5,<2" kubernetes-validate

echo "== manifests"
"$work/tools/bin/python" deploy/kubernetes/validate.py

echo "== wheel"
start=$SECONDS
"$work/tools/bin/maturin" build --release --locked --quiet --out "$work/dist"
echo "built in $((SECONDS - start)) s: $(ls "$work"/dist)"
python3 -m venv "$work/fresh"
"$work/fresh/bin/pip" install -q --disable-pip-version-check "$work"/dist/gpuledger-*.whl
installed="$work/fresh/bin/gpuledger"
test -x "$installed"
"$installed" --version
"$installed" demo >"$work/demo.txt"
grep -q 'peer_mirror' "$work/demo.txt" || { cat "$work/demo.txt"; echo "demo shows no peer_mirror finding" >&2; exit 1; }
size=$(stat -c %s "$installed")
echo "wheel's gpuledger ran demo from $installed ($size bytes)"
# About 8 MB stripped; debug info or a lost strip setting would multiply it.
if [ "$size" -gt $((16 * 1024 * 1024)) ]; then
  echo "the shipped binary is $size bytes: check [profile.release] in Cargo.toml" >&2
  exit 1
fi

# The exposition and the rules as Prometheus reads them (Debian's prometheus brings promtool,
# which .ci/run installs): the wheel's exporter on a simulated peer-mirror tree, scraped as curl
# does (no Accept: the classic text format), must pass `promtool check metrics` with no lint.
echo "== metrics and rules"
if command -v promtool >/dev/null; then
  promtool check rules deploy/alerts.yml deploy/recording-rules.yml
  (cd deploy && promtool test rules rules-test.yml)
  "$installed" simulate ddp-peer-mirror -o "$work/sim" 2>/dev/null
  "$installed" --root "$work/sim" serve --listen 127.0.0.1:0 2>"$work/serve.log" &
  serve_pid=$!
  "$work/tools/bin/python" - "$work/serve.log" >"$work/metrics.txt" <<'PY'
import re, sys, time, urllib.request
for _ in range(100):
    m = re.search(r"http://(127\.0\.0\.1:\d+)/metrics", open(sys.argv[1]).read())
    if m:
        sys.stdout.write(urllib.request.urlopen(f"http://{m.group(1)}/metrics", timeout=10).read().decode())
        break
    time.sleep(0.1)
else:
    sys.exit("serve did not start: " + open(sys.argv[1]).read())
PY
  kill "$serve_pid"
  lint=$(promtool check metrics <"$work/metrics.txt" 2>&1) || { echo "$lint" >&2; exit 1; }
  [ -z "$lint" ] || { echo "promtool check metrics: $lint" >&2; exit 1; }
  echo "promtool check metrics: clean ($(grep -vc '^#' "$work/metrics.txt") samples)"
else
  echo "promtool not installed: metrics and rules not checked"
fi
