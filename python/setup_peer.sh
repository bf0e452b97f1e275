#!/usr/bin/env bash
# Create the benchmark peer's virtual environment: Agent Lightning 1.0.0 + verl 0.8.0 + CPU-run torch, from PyPI.
#
#   bash python/setup_peer.sh [VENV_DIR]        (default: python/.venv-peer, which git ignores)
#
# Then: HARNESS_LAB_PEER_PYTHON=python/.venv-peer/bin/python npm run bench:core
#
# Everything the peer imports is the real package; nothing is stubbed. agentlightning.verl.* imports verl's
# DataProto and verl.trainer.ppo.ray_trainer, which at import time pull in ray, transformers, datasets/pyarrow,
# tensordict, codetiming, wandb and the rest of verl's declared dependencies, so the install is large (~8 GiB,
# most of it the CUDA libraries PyPI's Linux torch wheel depends on; the peer itself runs on one CPU core).
# Python 3.12 is required (agentlightning declares >=3.12). Set PEER_PYTHON to choose the interpreter; otherwise
# pyenv's 3.12.1, then python3.12 on PATH. pip honours PIP_INDEX_URL / PIP_EXTRA_INDEX_URL as usual, e.g. to take
# torch 2.9.1+cpu from a CPU wheel index where one is reachable.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${1:-$here/.venv-peer}"

python="${PEER_PYTHON:-}"
if [ -z "$python" ]; then
  if command -v pyenv >/dev/null 2>&1 && [ -x "$(pyenv root)/versions/3.12.1/bin/python3.12" ]; then
    python="$(pyenv root)/versions/3.12.1/bin/python3.12"
  elif command -v python3.12 >/dev/null 2>&1; then
    python="$(command -v python3.12)"
  else
    echo "setup_peer: no Python 3.12 found (tried pyenv's 3.12.1 and python3.12 on PATH); set PEER_PYTHON" >&2
    exit 2
  fi
fi
if ! "$python" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 12) else 1)' 2>/dev/null; then
  echo "setup_peer: $python is not Python 3.12 (agentlightning needs >=3.12; the pins were resolved on 3.12)" >&2
  exit 2
fi

echo "setup_peer: creating $venv with $("$python" --version)" >&2
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --disable-pip-version-check \
  -r "$here/requirements-peer.txt" -c "$here/constraints-peer.txt"

# Fail here, not in the benchmark, if an import-time dependency is missing.
"$venv/bin/python" - <<'PY'
from importlib.metadata import version

import agentlightning.verl.per_rollout_loss  # noqa: F401
import agentlightning.verl.rollout_adapter  # noqa: F401
import agentlightning.verl.rollout_level_advantage  # noqa: F401
import torch
import verl

print(f"setup_peer: ok: agentlightning {version('agentlightning')} + verl {verl.__version__}, torch {torch.__version__}")
PY
