#!/usr/bin/env bash
# Create the cluster-side virtual environment from PyPI: Python 3.12, ray[default] 2.60.0 (`ray start`, the
# dashboard and its Jobs API), agentlightning 1.0.0 (`agl-server`, `agl-controller`), and verl 0.8.0 WITHOUT its
# dependencies (only its Hydra YAML is read, to compose the agl-verl template's config; importing verl needs
# torch). No torch: about 430 MB.
#
#   bash python/setup_cluster.sh [VENV_DIR] [--gpu]      (default VENV_DIR: python/.venv-cluster, git-ignored)
#
# --gpu additionally installs what the agl-verl template runs on a GPU node: verl 0.8.0 with its dependencies
# and vLLM (verl's `vllm` extra) — several GB, CUDA wheels from PyPI. Use the same venv (or an image with the
# same pins) on every node of the cluster, and start Ray from it (`npm run lab -- cluster up`, or
# `ray start` with this venv's bin/ first on PATH) so that job entrypoints find its `python`.
#
# Set CLUSTER_PYTHON to choose the interpreter; otherwise pyenv's 3.12.1, then python3.12 on PATH.
# An existing VENV_DIR whose pins match is left as it is (`--force` rebuilds it).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv=""
gpu=0
force=0
for a in "$@"; do
  case "$a" in
    --gpu) gpu=1 ;;
    --force) force=1 ;;
    -*) echo "setup_cluster: unknown option $a (options: --gpu, --force)" >&2; exit 2 ;;
    *) venv="$a" ;;
  esac
done
venv="${venv:-$here/.venv-cluster}"
stamp="$venv/.harness-lab-cluster"
want="$(cat "$here/requirements-cluster.txt" "$here/constraints-cluster.txt" | sha1sum | cut -d' ' -f1) gpu=$gpu"

if [ "$force" = 0 ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$venv/bin/agl-server" ]; then
  echo "setup_cluster: $venv is up to date" >&2
  exit 0
fi

python="${CLUSTER_PYTHON:-}"
if [ -z "$python" ]; then
  if command -v pyenv >/dev/null 2>&1 && [ -x "$(pyenv root)/versions/3.12.1/bin/python3.12" ]; then
    python="$(pyenv root)/versions/3.12.1/bin/python3.12"
  elif command -v python3.12 >/dev/null 2>&1; then
    python="$(command -v python3.12)"
  else
    echo "setup_cluster: no Python 3.12 found (tried pyenv's 3.12.1 and python3.12 on PATH); set CLUSTER_PYTHON" >&2
    exit 2
  fi
fi
if ! "$python" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 12) else 1)' 2>/dev/null; then
  echo "setup_cluster: $python is not Python 3.12 (agentlightning needs >=3.12; the pins were resolved on 3.12)" >&2
  exit 2
fi

t0=$(date +%s)
echo "setup_cluster: creating $venv with $("$python" --version)" >&2
rm -rf "$venv"
"$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip install --disable-pip-version-check --no-input)
"${pip[@]}" -r "$here/requirements-cluster.txt" -c "$here/constraints-cluster.txt"
if [ "$gpu" = 1 ]; then
  # verl 0.8.0 with its dependencies and its vllm extra, as Agent Lightning 1.0 pins it
  "${pip[@]}" "verl[vllm]==0.8.0" "agentlightning==1.0.0" "ray[default]==2.60.0"
else
  "${pip[@]}" --no-deps "verl==0.8.0"
fi

# Fail here, not in a job, if an entry point or a YAML folder is missing.
PYTHONPATH="$here" "$venv/bin/python" - <<'PY'
from importlib.metadata import version
import shutil, sys
from pathlib import Path

import agentlightning.server.app  # noqa: F401
import agentlightning.controller.local_reconciler  # noqa: F401
import ray  # noqa: F401
from harness_lab_cluster.verl_config import verl_trainer_config_dir, agl_verl_config_dir

bin_dir = Path(sys.executable).parent
for exe in ("agl-server", "agl-controller", "ray"):
    if not (bin_dir / exe).exists():
        raise SystemExit(f"setup_cluster: {exe} missing in {bin_dir}")
assert (agl_verl_config_dir() / "config.yaml").exists()
verl_trainer_config_dir()
print(f"setup_cluster: ok: ray {version('ray')}, agentlightning {version('agentlightning')}, "
      f"verl {version('verl')} (YAML), hydra-core {version('hydra-core')}")
PY
echo "$want" > "$stamp"
echo "setup_cluster: $(du -sh "$venv" | cut -f1) in $(( $(date +%s) - t0 )) s" >&2
