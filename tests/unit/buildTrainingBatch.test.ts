import { describe, expect, it } from 'vitest';
import { toBf16 } from '../../src/core/aggregate/bf16';
import { buildTrainingBatch, SampleBuildError } from '../../src/core/aggregate/buildTrainingBatch';
import type { ModelCall, Rollout } from '../../src/core/trace/types';

function call(p: number[], r: number[], extra: Partial<ModelCall> = {}): ModelCall {
  return {
    request: { messages: [], sampling: {} },
    response: null,
    promptTokenIds: Int32Array.from(p),
    responseTokenIds: Int32Array.from(r),
    responseLogProbs: Float32Array.from(r, () => -1),
    httpStatus: 200,
    ...extra,
  };
}

function rollout(id: string, calls: ModelCall[], extra: Partial<Rollout> = {}): Rollout {
  return {
    rolloutId: id,
    dataId: 'g',
    isTrain: true,
    state: 'succeeded',
    calls,
    rewards: [],
    finalReward: 0.3,
    metadata: {},
    ...extra,
  };
}

const opts = {
  level: 'trajectory' as const,
  maxPromptLength: 16,
  maxResponseLength: 16,
  padTokenId: 0,
  rewardFillnaValue: -1,
};

describe('buildTrainingBatch', () => {
  it("'agl-manager' keeps the last call per prompt and drops failed / empty calls, like the gateway and manager", () => {
    const calls = [
      call([1, 2], [3]), // superseded by the retry below (same prompt ids)
      call([1, 2], [4, 5]),
      call([1, 2, 4, 5, 6], [], { httpStatus: 200 }), // empty response
      call([1, 2, 4, 5, 7], [8], { httpStatus: 503, error: 'overloaded' }),
      call([1, 2, 4, 5, 9], [10]),
    ];
    const m = buildTrainingBatch([rollout('a', calls)], opts);
    expect(m.batch.nRows).toBe(1);
    expect(Array.from(m.batch.responseIds)).toEqual([4, 5, 9, 10]);
    expect(Array.from(m.batch.mask)).toEqual([1, 1, 0, 1]);
    expect(Array.from(m.batch.tokenCall)).toEqual([1, 1, 4, 4]);
    expect(m.batch.firstCall[0]).toBe(1);
    expect(m.batch.nCalls[0]).toBe(2);
    expect(m.metrics['training/n_turns']).toBe(2);
    const all = buildTrainingBatch([rollout('a', calls)], { ...opts, callFilter: 'all' });
    expect(all.mergeFailures.map((f) => [f.callIndex, f.prevCallIndex, f.firstDiff])).toEqual([
      [1, 0, 2],
      [3, 2, 4],
      [4, 3, 4],
    ]);
    expect(all.counters.nSkippedEmpty).toBe(0);
    expect(all.batch.nRows).toBe(4);
  });

  it('a call with a non-finite log-prob loses its log-probs, and so does the whole batch', () => {
    const bad = call([1], [2, 3]);
    bad.responseLogProbs![1] = Number.NaN;
    const res = buildTrainingBatch([rollout('a', [call([7], [8])]), rollout('b', [bad])], {
      ...opts,
      level: 'transition',
    });
    expect(Array.from(res.rowHasLogProbs)).toEqual([1, 0]);
    expect(res.batch.responseLogProbs).toBeNull();
  });

  it('orders by (step, sample_idx_in_step), rounds rewards to bf16 and puts them on the last token', () => {
    const rs = [
      rollout('late', [call([1], [2, 3])], { step: 1, sampleIdxInStep: 0 }),
      rollout('first', [call([1], [2])], { step: 0, sampleIdxInStep: 1, finalReward: null }),
      rollout('zero', [call([1], [5, 6, 7])], { step: 0, sampleIdxInStep: 0 }),
    ];
    const res = buildTrainingBatch(rs, opts);
    expect(res.batch.rolloutIds).toEqual(['zero', 'first', 'late']);
    expect(Array.from(res.batch.rowRollout)).toEqual([2, 1, 0]);
    expect(Array.from(res.batch.reward)).toEqual([toBf16(0.3), -1, toBf16(0.3)]);
    expect(toBf16(0.3)).toBe(0.30078125);
    expect(Array.from(res.tokenLevelScores)).toEqual([0, 0, toBf16(0.3), -1, 0, toBf16(0.3)]);
    expect(res.metrics['training/reward']).toBeCloseTo((0.3 - 1 + 0.3) / 3, 12);
  });

  it('raises like upstream for an unknown level and for zero rows', () => {
    expect(() => buildTrainingBatch([], { ...opts, level: 'step' as never })).toThrow(
      new SampleBuildError('ValueError', 'Unknown trace_aggregator_level: step'),
    );
    expect(() => buildTrainingBatch([rollout('x', [])], opts)).toThrow(/zero training rows/);
  });
});
