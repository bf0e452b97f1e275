#!/usr/bin/env bash
# Regenerates the shipped SFT checkpoints public/checkpoints/<harness>.safetensors (the default 'tiny' model,
# ~0.9 MB each) from seed 1 on the CPU engine, byte for byte: `lab sft` on each harness's scripted-expert
# trajectories. Takes tens of minutes on a laptop CPU (the multi-turn harnesses' rows are long).
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p public/checkpoints
lab() { npx tsx src/cli/lab.ts "$@"; }
lab sft --harness instruction-short --seed 1 --steps 600 --batch-rows 16 --lr 3e-3 --out public/checkpoints/instruction-short.safetensors
lab sft --harness instruction --seed 1 --steps 200 --batch-rows 8 --lr 3e-3 --out public/checkpoints/instruction.safetensors
lab sft --harness coding --seed 1 --steps 200 --batch-rows 8 --lr 3e-3 --out public/checkpoints/coding.safetensors
# coding continues for 200 steps at a constant lr: the 200-step policy is sharp enough for greedy decoding but
# earns ~0 at temperature 1; these steps bring the T=1 val reward into the range where RL has room to learn.
lab sft --harness coding --seed 1 --init public/checkpoints/coding.safetensors --steps 200 --batch-rows 8 --lr 1e-3 --schedule constant --warmup 10 --out public/checkpoints/coding.safetensors
lab sft --harness search --seed 1 --steps 200 --batch-rows 8 --lr 3e-3 --out public/checkpoints/search.safetensors
