#!/usr/bin/env bash
# Rollout throughput of each harness: a 64-rollout run (16 tasks × 4) with 4 worker threads and the scripted
# engine, three times; prints each run and the median rollouts/s (measured after the workers have started).
set -euo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
for h in instruction search coding; do
  rates=()
  for i in 1 2 3; do
    line=$(npm run -s lab -- rollout --harness "$h" --engine scripted --n 16 --group-size 4 --workers 4 --seed 1 --out "$tmp/$h.jsonl" | head -1)
    echo "$h run $i: $line"
    rates+=("$(sed -E 's/.* ([0-9.]+) rollouts\/s.*/\1/' <<<"$line")")
  done
  median=$(printf '%s\n' "${rates[@]}" | sort -g | sed -n 2p)
  echo "$h: median $median rollouts/s"
done
rm -rf "$tmp"
