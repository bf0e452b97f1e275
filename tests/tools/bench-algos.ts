/**
 * Throughput of the effective-weights path on a large synthetic batch: rollout-level GRPO advantages +
 * per_rollout_mean weights (and all loss modes in one pass). Run: `npx tsx tests/tools/bench-algos.ts [tokens]`.
 */

import { allLossModes, effectiveWeights } from '../../src/core/algos/effectiveWeights';
import type { TrainingBatch } from '../../src/core/batch/types';
import { mulberry32 } from '../../src/core/random';

function syntheticBatch(targetTokens: number, seed: number): TrainingBatch {
  const rand = mulberry32(seed);
  const lens: number[] = [];
  const rowRollout: number[] = [];
  const dataIds: string[] = [];
  const reward: number[] = [];
  let total = 0;
  let rollout = 0;
  while (total < targetTokens) {
    const rowsInRollout = 1 + Math.floor(rand() * 6);
    const r = rand() < 0.5 ? 1 : 0;
    for (let k = 0; k < rowsInRollout; k++) {
      const len = 200 + Math.floor(rand() * 1800);
      lens.push(len);
      rowRollout.push(rollout);
      dataIds.push(`task${rollout >> 3}`);
      reward.push(r);
      total += len;
    }
    rollout++;
  }
  const nRows = lens.length;
  const offsets = new Int32Array(nRows + 1);
  for (let i = 0; i < nRows; i++) offsets[i + 1] = offsets[i] + lens[i];
  // multi-turn rows: model spans (mask 1) alternating with observation spans (mask 0)
  const mask = new Uint8Array(total);
  for (let t = 0; t < total; ) {
    const model = 30 + Math.floor(rand() * 300);
    mask.fill(1, t, Math.min(total, t + model));
    t += model + Math.floor(rand() * 120);
  }
  return {
    nRows,
    offsets,
    mask,
    rowRollout: Int32Array.from(rowRollout),
    rolloutIds: rowRollout.map((r) => `r${r}`),
    dataIds,
    turnIndex: new Int32Array(nRows).fill(-1),
    firstCall: new Int32Array(nRows),
    nCalls: new Int32Array(nRows).fill(1),
    isDrop: new Uint8Array(nRows),
    promptOffsets: new Int32Array(nRows + 1),
    promptIds: new Int32Array(0),
    responseIds: new Int32Array(total),
    tokenCall: new Int32Array(total),
    responseLogProbs: null,
    reward: Float32Array.from(reward),
  };
}

const target = Number(process.argv[2] ?? 8_500_000);
const batch = syntheticBatch(target, 1);
const n = batch.offsets[batch.nRows];
const opts = { advEstimator: 'grpo', rolloutLevel: true, lossAggMode: 'per_rollout_mean' as const };
for (let i = 0; i < 3; i++) effectiveWeights(batch, opts); // warm-up
/** Wall time and this process's CPU time (user + system) per call; CPU time is what matters on a loaded host. */
function measure(f: () => unknown, reps: number) {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < reps; i++) f();
  const wall = (performance.now() - t0) / reps;
  const c = process.cpuUsage(c0);
  return { wall, cpu: (c.user + c.system) / 1e3 / reps };
}
const fmt = (name: string, m: { wall: number; cpu: number }) =>
  `${name}: wall ${m.wall.toFixed(1)} ms (${(n / m.wall / 1e3).toFixed(1)} M tokens/s), cpu ${m.cpu.toFixed(1)} ms (${(n / m.cpu / 1e3).toFixed(1)} M tokens/s)`;
console.log(`batch: ${n} tokens, ${batch.nRows} rows`);
console.log(
  fmt(
    'effectiveWeights (rollout-level grpo + per_rollout_mean)',
    measure(() => effectiveWeights(batch, opts), 10),
  ),
);
console.log(
  fmt(
    'allLossModes (5 modes)',
    measure(() => allLossModes(batch, opts), 3),
  ),
);
