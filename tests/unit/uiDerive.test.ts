import { describe, expect, it } from 'vitest';
import type { TrainingBatch } from '../../src/core/batch/types';
import { callWeights } from '../../src/core/pipeline/perCall';
import type { ModelCall, Rollout } from '../../src/core/trace/types';
import {
  callPositions,
  gather,
  indexBatch,
  logProbGap,
  rowOfCall,
  trainerValuesOf,
} from '../../src/ui/lab/derive';
import { checkFromWorker, checkToWorker } from '../../src/ui/lab/protocol';
import { callTokenView } from '../../src/ui/trace/tokenView';

/** Rollout 0: calls 0–1 merged into row 0 (call 1 has 2 observation tokens), call 2 in row 1. Rollout 2: row 2. */
function batch(): TrainingBatch {
  const offsets = Int32Array.from([0, 6, 8, 10]);
  return {
    nRows: 3,
    offsets,
    mask: Uint8Array.from([1, 1, 0, 0, 1, 1, 1, 1, 1, 1]),
    rowRollout: Int32Array.from([0, 0, 2]),
    rolloutIds: ['a', 'a', 'c'],
    dataIds: ['g', 'g', 'g'],
    turnIndex: Int32Array.from([-1, -1, -1]),
    firstCall: Int32Array.from([0, 2, 0]),
    nCalls: Int32Array.from([2, 1, 1]),
    isDrop: new Uint8Array(3),
    promptOffsets: Int32Array.from([0, 3, 6, 9]),
    promptIds: new Int32Array(9),
    responseIds: Int32Array.from([10, 11, 12, 13, 14, 15, 20, 21, 30, 31]),
    tokenCall: Int32Array.from([0, 0, 1, 1, 1, 1, 2, 2, 0, 0]),
    responseLogProbs: null,
    reward: Float32Array.from([1, 1, 0]),
  };
}

describe('batch index for the views', () => {
  it('finds the rows of each rollout and the row of each call', () => {
    const b = batch();
    const idx = indexBatch(b, 3);
    expect(idx.rowsOfRollout).toEqual([[0, 1], [], [2]]);
    expect(rowOfCall(b, idx, 0, 1)).toBe(0);
    expect(rowOfCall(b, idx, 0, 2)).toBe(1);
    expect(rowOfCall(b, idx, 1, 0)).toBe(-1);
  });
  it("gives a call's observation and response positions", () => {
    const b = batch();
    const idx = indexBatch(b, 3);
    expect([...callPositions(b, idx, 0, 1)]).toEqual([2, 3, 4, 5]);
    expect([...callPositions(b, idx, 2, 0)]).toEqual([8, 9]);
    expect(callPositions(b, idx, 1, 0)).toHaveLength(0);
    expect([...gather(b.responseIds, Int32Array.from([8, 0]))]).toEqual([30, 10]);
    expect(Number.isNaN(gather(null, Int32Array.from([0]))[0])).toBe(true);
  });
});

describe('lab worker messages', () => {
  it('accepts well-formed messages and names what is wrong otherwise', () => {
    expect(
      checkToWorker({ type: 'import', id: 1, source: { kind: 'url', urls: ['/x'], name: 'x' } }).type,
    ).toBe('import');
    expect(() => checkToWorker({ type: 'import', id: 1, source: { kind: 'file', name: 'x' } })).toThrow(
      /Blob/,
    );
    expect(() => checkToWorker({ type: 'nope', id: 1 })).toThrow(/unknown message type "nope"/);
    expect(() => checkToWorker({ type: 'compute', id: 1.5, options: {} })).toThrow(/id is not an integer/);
    // compute options are checked by core's validator, which names the upstream key
    expect(checkToWorker({ type: 'compute', id: 1, options: { lossMode: 'token-mean' } })).toMatchObject({
      options: { lossMode: 'token-mean', advEstimator: 'grpo' },
    });
    expect(() => checkToWorker({ type: 'compute', id: 1, options: { advEstimator: 'nope' } })).toThrow(
      /compute.options: algorithm.adv_estimator/,
    );
    expect(() => checkFromWorker({ type: 'imported', id: 2, summary: {}, trace: {} })).toThrow(/malformed/);
    expect(checkFromWorker({ type: 'failed', id: 2, message: 'x' }).type).toBe('failed');
  });
});

describe('per-call totals (core/pipeline/perCall, the page and lab analyze)', () => {
  it('sum trained weights per call, count observation and untrained tokens apart, average the advantage', () => {
    const b = batch();
    const idx = indexBatch(b, 3);
    const input = {
      batch: b,
      trainPosition: Int32Array.from([0, 1, 2]),
      responseMask: Uint8Array.from(b.mask),
      weights: Float32Array.from([1, 2, 9, 9, 3, 4, 5, 6, 7, 8]),
      advantages: Float32Array.from([0.5, 0.5, 9, 9, 1, 1, 2, 2, 3, 3]),
    };
    const c = callWeights(input, 0, 3, idx.rowsOfRollout[0]);
    // call 0: positions 0,1; call 1: observations 2,3 (mask 0) then 4,5; call 2: row 1
    expect(Array.from(c.weight)).toEqual([3, 7, 11]);
    expect(Array.from(c.tokens)).toEqual([2, 2, 2]);
    expect(Array.from(c.observations)).toEqual([0, 2, 0]);
    expect(Array.from(c.untrained)).toEqual([0, 0, 0]);
    expect(Array.from(c.advantage)).toEqual([0.5, 1, 2]);
    const none = callWeights(input, 1, 1, idx.rowsOfRollout[1]);
    expect(none.weight[0]).toBe(0);
    expect(Number.isNaN(none.advantage[0])).toBe(true);
    // row 1 not trained (is_drop) and one token of row 0 masked by rejection sampling
    const dropped = {
      ...input,
      trainPosition: Int32Array.from([0, -1, 1]),
      responseMask: Uint8Array.from(b.mask),
    };
    dropped.responseMask[5] = 0;
    const d = callWeights(dropped, 0, 3, idx.rowsOfRollout[0]);
    expect(Array.from(d.weight)).toEqual([3, 3, 0]);
    expect(Array.from(d.untrained)).toEqual([0, 1, 2]);
  });
});

/** A call with the engine's and the trainer's log-probs of its response ids (a kept training trace's). */
function call(ids: number[], engine: number[], trainer?: number[], entropy?: number[]): ModelCall {
  return {
    responseTokenIds: Int32Array.from(ids),
    responseLogProbs: Float32Array.from(engine),
    trainerLogProbs: trainer ? Float32Array.from(trainer) : undefined,
    trainerEntropy: entropy ? Float32Array.from(entropy) : undefined,
  } as unknown as ModelCall;
}

describe('engine vs trainer log-probs (the Trace view gap colouring)', () => {
  it('places the trainer values of each call at its trainable batch positions, skipping observations', () => {
    const b = batch();
    const rollouts = [
      {
        calls: [
          call([10, 11], [-1, -2], [-1.5, -2], [0.1, 0.2]),
          call([14, 15], [-3, -4], [-3, -3.25], [0.3, 0.4]),
          call([20, 21], [-5, -6], [-5, -6]),
        ],
      },
      { calls: [] },
      // its ids differ from the row's (retokenized): no trainer values there
      { calls: [call([30, 99], [-7, -8], [-7.5, -8])] },
    ] as unknown as Rollout[];
    const t = trainerValuesOf(b, rollouts);
    if (!t) throw new Error('no trainer values');
    // positions 2, 3 are call 1's observation tokens (mask 0)
    expect(Array.from(t.logProbs)).toEqual([
      -1.5,
      -2,
      Number.NaN,
      Number.NaN,
      -3,
      -3.25,
      -5,
      -6,
      -7.5,
      Number.NaN,
    ]);
    expect(Array.from(t.entropy).map((x) => Math.round(x * 10) / 10)).toEqual([
      0.1,
      0.2,
      Number.NaN,
      Number.NaN,
      0.3,
      0.4,
      Number.NaN,
      Number.NaN,
      Number.NaN,
      Number.NaN,
    ]);
    const engine = Float32Array.from([-1, -2, 0, 0, -3, -4, -5, -6, -7, -8]);
    const gap = logProbGap(engine, t.logProbs, b.mask);
    expect(Array.from(gap)).toEqual([0.5, 0, Number.NaN, Number.NaN, 0, -0.75, 0, 0, 0.5, Number.NaN]);
    // a trace without trainer values has nothing to show
    expect(trainerValuesOf(b, [{ calls: [call([10], [-1])] }] as unknown as Rollout[])).toBeNull();
    expect(logProbGap(null, t.logProbs).every(Number.isNaN)).toBe(true);
  });

  it("offers the trainer's log-prob, its entropy and the gap on a call only when the trace has them", () => {
    const v = callTokenView(call([10, 11], [-1, -2], [-1.25, -2], [0.5, 0.6]), new Map());
    expect([...v.available].sort()).toEqual(['entropy', 'gap', 'logprob', 'trainerLogprob']);
    expect(Array.from(v.quantities.find((q) => q.key === 'trainerLogprob')?.values ?? [])).toEqual([
      -1.25, -2,
    ]);
    expect(Array.from(v.quantities.find((q) => q.key === 'gap')?.values ?? [])).toEqual([0.25, 0]);
    const plain = callTokenView(call([10, 11], [-1, -2]), new Map());
    expect([...plain.available]).toEqual(['logprob']);
    expect(plain.quantities.map((q) => q.key)).toEqual(['logprob']);
  });
});
