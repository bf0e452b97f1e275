#!/usr/bin/env bash
# Regenerate the golden vectors from the real upstream packages (torch on the CPU), for one reference stack:
#
#   bash python/golden/make.sh [OUT_DIR]                        agentlightning 1.0.x + verl 0.8.0 → tests/golden
#   bash python/golden/make.sh --stack verl-0.9.0 [OUT_DIR]     agentlightning 1.0.x + verl 0.9.0 → tests/golden/verl-0.9.0
#
# The default stack's venv is $HARNESS_LAB_PEER_VENV, else python/.venv-peer (made by python/setup_peer.sh when it
# has no python); verl 0.9.0's is $HARNESS_LAB_VERL09_VENV, else python/.venv-verl09 (python/setup_verl09.sh).
# Each takes ~10 minutes and ~8 GiB to create. Nothing is stubbed: the generator imports the installed packages.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
stack="agentlightning-1.0+verl-0.8.0"
if [ "${1:-}" = "--stack" ]; then
  stack="${2:?--stack needs a name}"
  shift 2
fi
case "$stack" in
  agentlightning-1.0+verl-0.8.0)
    venv="${HARNESS_LAB_PEER_VENV:-$here/../.venv-peer}"; setup="$here/../setup_peer.sh"; dir="" ;;
  verl-0.9.0)
    venv="${HARNESS_LAB_VERL09_VENV:-$here/../.venv-verl09}"; setup="$here/../setup_verl09.sh"; dir="/verl-0.9.0" ;;
  *)
    echo "make.sh: unknown reference stack '$stack' (known: agentlightning-1.0+verl-0.8.0, verl-0.9.0)" >&2
    exit 2 ;;
esac
if [ ! -x "$venv/bin/python" ]; then
  bash "$setup" "$venv"
fi
out="${1:-$here/../../tests/golden$dir}"
exec "$venv/bin/python" "$here/generate.py" --out "$out"
