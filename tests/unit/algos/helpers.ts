import type { BuildResult } from '../../../src/core/aggregate/buildTrainingBatch';
import type { ResponseRows, TrainingBatch } from '../../../src/core/batch/types';
import type { Rollout } from '../../../src/core/trace/types';

/** Rows from per-row masks (ragged). */
export function rowsOf(masks: number[][]): ResponseRows {
  const offsets = new Int32Array(masks.length + 1);
  masks.forEach((m, i) => {
    offsets[i + 1] = offsets[i] + m.length;
  });
  return { nRows: masks.length, offsets, mask: Uint8Array.from(masks.flat()) };
}

/** Per-token rewards with each row's reward on its last valid token (verl's reward managers). */
export function outcomeRewards(rows: ResponseRows, rewards: number[]): Float32Array {
  const out = new Float32Array(rows.offsets[rows.nRows]);
  for (let i = 0; i < rows.nRows; i++)
    for (let t = rows.offsets[i + 1] - 1; t >= rows.offsets[i]; t--)
      if (rows.mask[t]) {
        out[t] = rewards[i];
        break;
      }
  return out;
}

export interface RowSpec {
  mask: number[];
  reward: number;
  rollout: number;
  dataId: string;
}

/** A minimal TrainingBatch for algorithm tests (ids and prompts are placeholders the algorithms do not read). */
export function batchOf(specs: RowSpec[]): TrainingBatch {
  const rows = rowsOf(specs.map((s) => s.mask));
  const n = rows.offsets[rows.nRows];
  const B = specs.length;
  return {
    ...rows,
    rowRollout: Int32Array.from(specs.map((s) => s.rollout)),
    rolloutIds: specs.map((s) => `r${s.rollout}`),
    dataIds: specs.map((s) => s.dataId),
    turnIndex: new Int32Array(B).fill(-1),
    firstCall: new Int32Array(B),
    nCalls: new Int32Array(B).fill(1),
    isDrop: new Uint8Array(B),
    promptOffsets: new Int32Array(B + 1),
    promptIds: new Int32Array(0),
    responseIds: new Int32Array(n),
    tokenCall: new Int32Array(n),
    responseLogProbs: null,
    reward: Float32Array.from(specs.map((s) => s.reward)),
  };
}

/** The rollouts behind a hand-built batch (one per rollout index, with the rows' reward). */
export function rolloutsOf(b: TrainingBatch): Rollout[] {
  const out: Rollout[] = [];
  for (let i = 0; i < b.nRows; i++)
    out[b.rowRollout[i]] = {
      rolloutId: b.rolloutIds[i],
      dataId: b.dataIds[i],
      isTrain: true,
      state: 'succeeded',
      calls: [],
      rewards: [],
      finalReward: b.reward[i],
      metadata: {},
    };
  return out;
}

/** The adapter's output for an already-built batch (what the page caches and hands to the trainer). */
export function builtOf(b: TrainingBatch): BuildResult {
  return {
    batch: b,
    rowHasLogProbs: new Uint8Array(b.nRows).fill(b.responseLogProbs ? 1 : 0),
    counters: {} as BuildResult['counters'],
    metrics: {},
    mergeFailures: [],
    padTokenId: 0,
  };
}
