#!/usr/bin/env bash
# Regenerates the bundled sample traces in public/samples/ (deterministic: one worker, fixed clock, fixed seeds),
# then the same rollouts in other frameworks' formats in public/samples/frameworks/.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=public/samples
mkdir -p "$out"
run() { npm run -s lab -- rollout --workers 1 --fixed-clock --seed 42 "$@"; }
run --harness instruction --engine scripted --n 6 --group-size 2 --out "$out/instruction-scripted.jsonl"
run --harness search --engine scripted --n 4 --group-size 2 --out "$out/search-scripted.jsonl"
run --harness search --engine scripted --n 4 --behaviour strip-think --out "$out/search-strip-think.jsonl"
run --harness search --engine scripted --n 4 --behaviour sliding-window --out "$out/search-sliding-window.jsonl"
run --harness search --engine scripted --n 4 --behaviour summarize --out "$out/search-summarize.jsonl"
run --harness search --engine scripted --n 4 --behaviour reformat-tool-output --out "$out/search-reformat-tool-output.jsonl"
run --harness search --engine scripted --n 4 --behaviour changing-system-prompt --out "$out/search-changing-system-prompt.jsonl"
run --harness coding --engine scripted --n 6 --group-size 2 --out "$out/coding-scripted.jsonl"
run --harness coding --engine random --n 3 --group-size 2 --max-turns 3 --max-tokens 48 --out "$out/coding-random.jsonl"
npx tsx tests/tools/make-framework-samples.ts
