/**
 * Index helpers over a TrainingBatch (CSR rows) for the views: which rows a rollout produced and which
 * response-token positions belong to one call. Pure; built once per batch, queried per render.
 */
import type { TrainingBatch } from '../../core/batch/types';

export interface BatchIndex {
  /** per source rollout: its training rows in order (empty when the rollout produced none) */
  rowsOfRollout: number[][];
}

export function indexBatch(batch: TrainingBatch, nRollouts: number): BatchIndex {
  const rowsOfRollout: number[][] = Array.from({ length: nRollouts }, () => []);
  for (let r = 0; r < batch.nRows; r++) {
    const ro = batch.rowRollout[r];
    if (ro >= 0 && ro < nRollouts) rowsOfRollout[ro].push(r);
  }
  return { rowsOfRollout };
}

/** The row that holds call `call` of a rollout (the row whose call span covers it), or -1. */
export function rowOfCall(batch: TrainingBatch, index: BatchIndex, rollout: number, call: number): number {
  for (const r of index.rowsOfRollout[rollout] ?? []) {
    if (call >= batch.firstCall[r] && call < batch.firstCall[r] + batch.nCalls[r]) return r;
  }
  return -1;
}

/** Batch positions of the response tokens that belong to `call` (its observation tokens, then its response). */
export function callPositions(
  batch: TrainingBatch,
  index: BatchIndex,
  rollout: number,
  call: number,
): Int32Array {
  const r = rowOfCall(batch, index, rollout, call);
  if (r < 0) return new Int32Array(0);
  const out: number[] = [];
  for (let p = batch.offsets[r]; p < batch.offsets[r + 1]; p++) if (batch.tokenCall[p] === call) out.push(p);
  return Int32Array.from(out);
}

/** Gathers `values` at `positions` (NaN for a missing array). */
export function gather(values: ArrayLike<number> | null | undefined, positions: Int32Array): Float32Array {
  const out = new Float32Array(positions.length);
  for (let i = 0; i < positions.length; i++) out[i] = values ? values[positions[i]] : Number.NaN;
  return out;
}
