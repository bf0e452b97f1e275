import { describe, expect, it } from 'vitest';
import {
  buildTrainingBatch,
  SampleBuildError,
  tokenLevelScores,
} from '../../src/core/aggregate/buildTrainingBatch';
import { padTrainingBatch } from '../../src/core/aggregate/pad';
import { bf16 as toBf16 } from '../../src/core/algos/numeric';
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
    expect(Array.from(tokenLevelScores(res.batch))).toEqual([0, 0, toBf16(0.3), -1, 0, toBf16(0.3)]);
    expect(res.metrics['training/reward']).toBeCloseTo((0.3 - 1 + 0.3) / 3, 12);
  });

  it('raises like upstream for an unknown level and for zero rows', () => {
    expect(() => buildTrainingBatch([], { ...opts, level: 'step' as never })).toThrow(
      new SampleBuildError('ValueError', 'Unknown trace_aggregator_level: step'),
    );
    expect(() => buildTrainingBatch([rollout('x', [])], opts)).toThrow(/zero training rows/);
  });

  it('dedupes long prompts exactly: same length and ends but a different middle are different prompts', () => {
    const base = Array.from({ length: 300 }, (_, i) => i + 1);
    const other = base.slice();
    other[150] = 9999;
    const res = buildTrainingBatch([rollout('a', [call(base, [1]), call(other, [2]), call(base, [3])])], {
      ...opts,
      level: 'transition',
      maxPromptLength: 400,
    });
    // the first call is superseded by the identical third one; the one with another middle stays
    expect(Array.from(res.batch.firstCall)).toEqual([1, 2]);
  });

  it('dedupes among calls of mixed prompt lengths: only identical prompts supersede each other', () => {
    const calls = [
      call([1, 2, 3], [4]), // superseded by call 3
      call([1, 2], [5]), // unique length
      call([1, 2, 9], [6]), // same length as call 0, other ids
      call([1, 2, 3], [7]),
      call([1, 2, 3, 7, 8], [9]), // unique length
    ];
    const res = buildTrainingBatch([rollout('a', calls)], { ...opts, level: 'transition' });
    expect(Array.from(res.batch.firstCall)).toEqual([1, 2, 3, 4]);
  });

  it('pads like verl: prompts left, responses right, positions over attended tokens, score on the last', () => {
    const res = buildTrainingBatch([rollout('a', [call([5, 6], [7]), call([5, 6, 7, 8], [9, 10])])], {
      ...opts,
      padTokenId: 0,
    });
    const p = padTrainingBatch(res, { maxPromptLength: 4, maxResponseLength: 5 });
    expect(Array.from(p.prompts)).toEqual([0, 0, 5, 6]);
    expect(Array.from(p.responses)).toEqual([7, 8, 9, 10, 0]);
    expect(Array.from(p.responseMask)).toEqual([1, 0, 1, 1, 0]);
    expect(Array.from(p.attentionMask)).toEqual([0, 0, 1, 1, 1, 1, 1, 1, 0]);
    expect(Array.from(p.positionIds)).toEqual([0, 0, 0, 1, 2, 3, 4, 5, 5]);
    expect(Array.from(p.tokenLevelScores)).toEqual([0, 0, 0, toBf16(0.3), 0]);
    expect(Array.from(p.rolloutLogProbs!)).toEqual([-1, 0, -1, -1, 0]);
    expect(() => padTrainingBatch(res, { maxPromptLength: 1, maxResponseLength: 5 })).toThrow(/exceed/);
  });

  it('keeps a wrong-length log-prob list when truncation makes the lengths agree (upstream quirk)', () => {
    // 10 response ids but 12 log-probs: upstream truncates both to max_response_length = 8 and keeps them.
    const c = call(
      [1],
      [...Array(10).keys()].map((i) => i + 10),
    );
    c.responseLogProbs = undefined;
    c.mismatchedLogProbs = Float32Array.from({ length: 12 }, (_, i) => -i);
    const cut = buildTrainingBatch([rollout('a', [c])], {
      ...opts,
      level: 'transition',
      maxResponseLength: 8,
    });
    expect(Array.from(cut.batch.responseLogProbs!)).toEqual([-0, -1, -2, -3, -4, -5, -6, -7]);
    const whole = buildTrainingBatch([rollout('a', [c])], {
      ...opts,
      level: 'transition',
      maxResponseLength: 16,
    });
    expect(whole.batch.responseLogProbs).toBeNull();
    // a merged later call with a wrong-length list ends the row's log-probs whatever the truncation
    const c2 = call([1, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19], [5]);
    c2.responseLogProbs = undefined;
    c2.mismatchedLogProbs = Float32Array.from([-1, -1]);
    const merged = buildTrainingBatch(
      [
        rollout('a', [
          call(
            [1],
            [...Array(10).keys()].map((i) => i + 10),
          ),
          c2,
        ]),
      ],
      {
        ...opts,
        maxResponseLength: 8,
      },
    );
    expect(merged.batch.nRows).toBe(1);
    expect(merged.batch.responseLogProbs).toBeNull();
  });

  it('a skipped row (observations only) leaves the next rows aligned', () => {
    const rs = [
      rollout('empty', [call([1], []), call([1, 2, 3], [])], { sampleIdxInStep: 0 }),
      rollout('ok', [call([4], [5, 6])], { sampleIdxInStep: 1 }),
    ];
    for (const callFilter of ['all', 'agl-manager'] as const) {
      const res = buildTrainingBatch(rs, { ...opts, callFilter });
      expect(res.batch.rolloutIds).toEqual(['ok']);
      expect(Array.from(res.batch.offsets)).toEqual([0, 2]);
      expect(Array.from(res.batch.responseLogProbs!)).toEqual([-1, -1]);
    }
    expect(buildTrainingBatch(rs, { ...opts, callFilter: 'all' }).counters.nSkippedEmpty).toBe(1);
  });
});
