#!/usr/bin/env bash
# Create the verl 0.9.0 reference stack's virtual environment: Agent Lightning 1.0.0 + verl 0.9.0 + torch, from PyPI.
#
#   bash python/setup_verl09.sh [VENV_DIR]      (default: python/.venv-verl09, which git ignores)
#
# Then: HARNESS_LAB_VERL09_VENV=python/.venv-verl09 bash python/golden/make.sh --stack verl-0.9.0
#
# The golden generator imports the real packages; nothing is stubbed. Like python/setup_peer.sh this is large
# (~8 GiB, mostly the CUDA libraries of PyPI's Linux torch wheel; the generator runs on the CPU). Python 3.12 is
# required (agentlightning declares >=3.12). Set PEER_PYTHON to choose the interpreter; otherwise pyenv's 3.12.1,
# then python3.12 on PATH.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${1:-$here/.venv-verl09}"

python="${PEER_PYTHON:-}"
if [ -z "$python" ]; then
  if command -v pyenv >/dev/null 2>&1 && [ -x "$(pyenv root)/versions/3.12.1/bin/python3.12" ]; then
    python="$(pyenv root)/versions/3.12.1/bin/python3.12"
  elif command -v python3.12 >/dev/null 2>&1; then
    python="$(command -v python3.12)"
  else
    echo "setup_verl09: no Python 3.12 found (tried pyenv's 3.12.1 and python3.12 on PATH); set PEER_PYTHON" >&2
    exit 2
  fi
fi
if ! "$python" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 12) else 1)' 2>/dev/null; then
  echo "setup_verl09: $python is not Python 3.12 (agentlightning needs >=3.12; the pins were resolved on 3.12)" >&2
  exit 2
fi

echo "setup_verl09: creating $venv with $("$python" --version)" >&2
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --disable-pip-version-check \
  -r "$here/requirements-verl09.txt" -c "$here/constraints-verl09.txt"

# Fail here, not in the generator, if an import-time dependency is missing.
"$venv/bin/python" - <<'PY'
from importlib.metadata import version

import agentlightning.verl.per_rollout_loss  # noqa: F401
import agentlightning.verl.rollout_adapter  # noqa: F401
import agentlightning.verl.rollout_level_advantage  # noqa: F401
import torch
import verl
import verl.trainer.ppo.ray_trainer  # noqa: F401
import verl.trainer.ppo.rollout_corr_helper  # noqa: F401

assert verl.__version__ == "0.9.0", verl.__version__
print(f"setup_verl09: ok: agentlightning {version('agentlightning')} + verl {verl.__version__}, torch {torch.__version__}")
PY
