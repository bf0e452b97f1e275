import { describe, expect, it } from 'vitest';
import { buildTrainingBatch } from '../../src/core/aggregate/buildTrainingBatch';
import { ALL_LOSS_MODES, effectiveWeights } from '../../src/core/algos/effectiveWeights';
import { toJsonlTrace } from '../../src/core/trace/io';
import type { ModelCall, Rollout } from '../../src/core/trace/types';
import {
  type ComputeOptions,
  combineTraces,
  compute,
  newBuildCache,
  parseTrace,
  splitResult,
} from '../../src/ui/lab/pipeline';

function call(prompt: number[], response: number[]): ModelCall {
  return {
    request: { messages: [{ role: 'user', content: 'q' }], sampling: {} },
    response: { message: { role: 'assistant', content: 'a' }, finishReason: 'stop' },
    promptTokenIds: Int32Array.from(prompt),
    responseTokenIds: Int32Array.from(response),
    responseLogProbs: Float32Array.from(response, () => -0.5),
    httpStatus: 200,
  };
}

function rollout(id: string, group: string, reward: number, calls: ModelCall[]): Rollout {
  return {
    rolloutId: id,
    dataId: group,
    isTrain: true,
    state: 'succeeded',
    calls,
    rewards: [{ value: reward }],
    finalReward: reward,
    metadata: {},
  };
}

/** Two groups; r0 merges two calls (observation tokens 7 8), r1 breaks its merge, r2/r3 single calls. */
const rollouts = [
  rollout('r0', 'g0', 1, [call([1, 2], [3, 4]), call([1, 2, 3, 4, 7, 8], [5])]),
  rollout('r1', 'g0', 0, [call([1, 2], [3, 4, 5]), call([9, 9], [6, 6])]),
  rollout('r2', 'g1', 1, [call([1], [2, 3, 4, 5, 6])]),
  rollout('r3', 'g1', 0, [call([1], [2])]),
];

const opts: ComputeOptions = {
  tokenSource: 'engine',
  level: 'trajectory',
  maxPromptLength: 64,
  maxResponseLength: 64,
  estimator: 'grpo',
  normAdvByStd: true,
  rolloutLevel: true,
  lossMode: 'token-mean',
  clipLow: 0.2,
  clipHigh: 0.2,
};

describe('lab pipeline over core', () => {
  it('parses our JSONL and reports lines and format', () => {
    const text = `${toJsonlTrace(rollouts)}{"broken": \n`;
    const { trace, summary } = parseTrace(text, 't.jsonl', () => {});
    expect(trace.rollouts.map((r) => r.rolloutId)).toEqual(['r0', 'r1', 'r2', 'r3']);
    expect(trace.issues).toHaveLength(1);
    expect(trace.issues[0].where).toBe('line 5');
    expect(summary).toEqual({ name: 't.jsonl', lines: 5, format: 'jsonl' });
  });

  it('gives per-rollout weights equal to core for every loss mode, per source rollout', () => {
    const trace = { rollouts, issues: [], counters: {} };
    const { batch } = buildTrainingBatch(rollouts, {
      level: 'trajectory',
      maxPromptLength: 64,
      maxResponseLength: 64,
      padTokenId: 0,
      rewardFillnaValue: 0,
    });
    for (const lossMode of ALL_LOSS_MODES) {
      const res = compute(trace, { ...opts, lossMode });
      const ew = effectiveWeights(batch, {
        advEstimator: 'grpo',
        normAdvByStd: true,
        rolloutLevel: true,
        lossAggMode: lossMode,
      });
      expect(Array.from(res.rolloutWeight)).toEqual(Array.from(ew.rolloutSums));
      // the all-modes table agrees with the selected mode's column
      const col = res.modes.find((m) => m.name === lossMode);
      expect(col).toBeDefined();
      for (let i = 0; i < 4; i++) expect(col?.rolloutWeight[i]).toBeCloseTo(res.rolloutWeight[i], 6);
    }
    const res = compute(trace, opts);
    expect(res.mergeFailures.map((f) => [f.rolloutId, f.callIndex])).toEqual([['r1', 1]]);
    expect(res.rolloutWeight.some((w) => w !== 0)).toBe(true);
    expect(res.groupKeys).toEqual(['g0', 'g1']);
  });

  it('reuses built rows when only weight options change, and rebuilds when sample building changes', () => {
    const trace = { rollouts, issues: [], counters: {} };
    const cache = newBuildCache();
    const a = compute(trace, opts, undefined, cache);
    const b = compute(trace, { ...opts, lossMode: 'per_rollout_mean', estimator: 'rloo' }, undefined, cache);
    expect(b.batch).toBe(a.batch);
    expect(b.buildSerial).toBe(a.buildSerial);
    const c = compute(trace, { ...opts, level: 'transition' }, undefined, cache);
    expect(c.buildSerial).toBe(a.buildSerial + 1);
    expect(c.batch.nRows).toBe(6); // one row per call
    const { rows, weights } = splitResult(c);
    expect(rows.batch).toBe(c.batch);
    expect('batch' in weights).toBe(false);
  });
});

describe('a sample of several files', () => {
  it('keeps every rollout, renames taken ids after their file, and names the file of each issue', () => {
    const a = { rollouts: [rollouts[0], rollouts[1]], issues: [], counters: { n: 1 } };
    const b = {
      rollouts: [rollouts[0], rollouts[2]],
      issues: [{ where: 'line 3', message: 'is not valid JSON' }],
      counters: { n: 2 },
    };
    const t = combineTraces([
      { name: 'expert.jsonl', trace: a },
      { name: 'coding-random.jsonl', trace: b },
    ]);
    expect(t.rollouts.map((r) => r.rolloutId)).toEqual(['r0', 'r1', 'r0@random', 'r2']);
    expect(t.rollouts[2].calls).toBe(rollouts[0].calls);
    expect(t.issues).toEqual([{ where: 'coding-random.jsonl line 3', message: 'is not valid JSON' }]);
    expect(t.counters.n).toBe(3);
  });
});
