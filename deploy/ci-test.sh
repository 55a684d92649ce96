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
