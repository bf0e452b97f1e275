#!/usr/bin/env bash
# Regenerate tests/golden/*.json from the real upstream packages (agentlightning 1.0.x + verl 0.8.0 + torch, CPU).
#
#   bash python/golden/make.sh [OUT_DIR]       (default OUT_DIR: tests/golden)
#
# The venv is $HARNESS_LAB_PEER_VENV, else python/.venv-peer; when it has no python it is created from PyPI with
# python/setup_peer.sh (~10 minutes, ~8 GiB). Nothing is stubbed: the generator imports the installed packages.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${HARNESS_LAB_PEER_VENV:-$here/../.venv-peer}"
if [ ! -x "$venv/bin/python" ]; then
  bash "$here/../setup_peer.sh" "$venv"
fi
out="${1:-$here/../../tests/golden}"
exec "$venv/bin/python" "$here/generate.py" --out "$out"
