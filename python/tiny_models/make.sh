#!/usr/bin/env bash
# Regenerate tests/models/*/ (tiny random llama / qwen2 / qwen3 folders and their transformers references).
#
#   bash python/tiny_models/make.sh [OUT_DIR]       (default OUT_DIR: tests/models)
#
# The venv is $HARNESS_LAB_PEER_VENV, else python/.venv-peer (transformers 4.57.3, torch 2.9.1, safetensors
# 0.8.0, peft 0.21.2 pinned in python/constraints-peer.txt); when it has no python it is created with python/setup_peer.sh.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${HARNESS_LAB_PEER_VENV:-$here/../.venv-peer}"
if [ ! -x "$venv/bin/python" ]; then
  bash "$here/../setup_peer.sh" "$venv"
fi
out="${1:-$here/../../tests/models}"
# PEFT stores target_modules as a set: a fixed hash seed keeps adapter_config.json byte-stable across runs
export PYTHONHASHSEED=0
"$venv/bin/python" "$here/generate.py" --out "$out"
# PEFT LoRA adapters on three of those folders and their PyTorch + PEFT references (tests/models/lora/)
exec "$venv/bin/python" "$here/lora_refs.py" --models "$out"
