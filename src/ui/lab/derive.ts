/**
 * Index helpers over a TrainingBatch (CSR rows) for the views: which rows a rollout produced and which
 * response-token positions belong to one call. Pure; built once per batch, queried per render.
 */
import { forEachCallToken } from '../../core/batch/callTokens';
import type { TrainingBatch } from '../../core/batch/types';
import type { Rollout } from '../../core/trace/types';

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

/** Per batch position: what the trainer computed for that token (NaN where it did not score it). */
export interface TrainerValues {
  logProbs: Float32Array;
  entropy: Float32Array;
}

/**
 * The trainer's log-probs and entropies (a training step's kept trace records them per call, aligned with the
 * call's response ids) at the batch positions of the trainable tokens: the j-th mask-1 token of call c in a row
 * is response token j of c, when their ids agree (a retokenized row's ids may not). Null when no call has them.
 */
export function trainerValuesOf(batch: TrainingBatch, rollouts: readonly Rollout[]): TrainerValues | null {
  if (!rollouts.some((r) => r.calls.some((c) => c.trainerLogProbs))) return null;
  const n = batch.offsets[batch.nRows];
  const logProbs = new Float32Array(n).fill(Number.NaN);
  const entropy = new Float32Array(n).fill(Number.NaN);
  forEachCallToken(batch, rollouts, (call, ids, j, p) => {
    if (!call.trainerLogProbs || j >= ids.length || ids[j] !== batch.responseIds[p]) return;
    logProbs[p] = call.trainerLogProbs[j];
    if (call.trainerEntropy) entropy[p] = call.trainerEntropy[j];
  });
  return { logProbs, entropy };
}

/** engine − trainer log-prob per position (NaN where either is missing, and on observation tokens). */
export function logProbGap(
  engine: ArrayLike<number> | null | undefined,
  trainer: ArrayLike<number> | null | undefined,
  mask?: ArrayLike<number>,
): Float32Array {
  const n = engine?.length ?? trainer?.length ?? 0;
  const out = new Float32Array(n).fill(Number.NaN);
  if (!engine || !trainer) return out;
  for (let i = 0; i < n; i++) if (!mask || mask[i]) out[i] = engine[i] - trainer[i];
  return out;
}
