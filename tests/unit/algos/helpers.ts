import type { ResponseRows, TrainingBatch } from '../../../src/core/batch/types';

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
