/**
 * Throughput of sample building (trajectory merge) on a synthetic batch of prefix-sharing multi-turn rollouts.
 * Run: npx tsx tests/tools/bench-merge.ts [rollouts=2000] [calls=8]
 * Prints merged response tokens per second for both call filters.
 */
import { buildTrainingBatch } from '../../src/core/aggregate/buildTrainingBatch';
import type { ModelCall, Rollout } from '../../src/core/trace/types';

const nRollouts = Number(process.argv[2] ?? 2000);
const nCalls = Number(process.argv[3] ?? 8);
const PROMPT0 = 512;
const RESP = 320;
const OBS = 224;

let seed = 1;
const rand = () => {
  seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
  return seed;
};

function makeRollout(i: number): Rollout {
  const calls: ModelCall[] = [];
  let ctx = Int32Array.from({ length: PROMPT0 }, () => rand() % 150000);
  for (let k = 0; k < nCalls; k++) {
    const r = Int32Array.from({ length: RESP }, () => rand() % 150000);
    calls.push({
      request: { messages: [], sampling: {} },
      response: null,
      promptTokenIds: ctx,
      responseTokenIds: r,
      responseLogProbs: Float32Array.from(r, () => -1),
      httpStatus: 200,
    });
    const next = new Int32Array(ctx.length + RESP + OBS);
    next.set(ctx);
    next.set(r, ctx.length);
    for (let j = ctx.length + RESP; j < next.length; j++) next[j] = rand() % 150000;
    ctx = next;
  }
  return {
    rolloutId: `r${i}`,
    dataId: `d${i >> 3}`,
    isTrain: true,
    state: 'succeeded',
    calls,
    rewards: [],
    finalReward: 1,
    step: 0,
    sampleIdxInStep: i,
    metadata: {},
  };
}

const rollouts = Array.from({ length: nRollouts }, (_, i) => makeRollout(i));
for (const callFilter of ['all', 'agl-manager'] as const) {
  const opts = {
    level: 'trajectory' as const,
    maxPromptLength: 1 << 20,
    maxResponseLength: 1 << 20,
    padTokenId: 0,
    rewardFillnaValue: 0,
    callFilter,
  };
  buildTrainingBatch(rollouts.slice(0, 50), opts); // warm-up
  // Wall time and this process's CPU time: on a shared machine the CPU time is the steadier measure.
  const wall: number[] = [];
  const cpu: number[] = [];
  let tokens = 0;
  for (let rep = 0; rep < 7; rep++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const res = buildTrainingBatch(rollouts, opts);
    wall.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
    tokens = res.batch.responseIds.length;
  }
  const best = (a: number[]) => Math.min(...a);
  const rate = (ms: number) => `${(tokens / ms / 1e3).toFixed(1)}M tokens/s`;
  console.log(
    `callFilter=${callFilter}: ${nRollouts} rollouts × ${nCalls} calls, ${(tokens / 1e6).toFixed(2)}M merged tokens; ` +
      `best of 7: wall ${best(wall).toFixed(1)} ms (${rate(best(wall))}), cpu ${best(cpu).toFixed(1)} ms (${rate(best(cpu))})`,
  );
}
